"""``rmm.pylibrmm.helper``: ``parse_bytes`` with RMM's grammar.

RMM's ``parse_bytes`` takes an int as it is, or a string: a decimal number
(``"2"``, ``"1.5"``), optional blanks, and an optional case-insensitive unit
ending in ``b``: ``b``, ``kb`` .. ``pb`` (powers of 1000), ``kib`` ..
``pib`` (powers of 1024). Anything else is ``ValueError("Could not parse
... as a byte specification")``. The number itself is computed by the
extension's parser (``rmm_rs.parse_bytes``), which the resource
constructors use and which also takes the shorter units RMM refuses here
(``"2k"``, ``"1Gi"``).

>>> parse_bytes("2kib")
2048
>>> parse_bytes(4096)
4096
"""

import re

from rmm_rs import _lib

_RMM_SIZE = re.compile(r"^([0-9]+(?:\.[0-9]*)?)[\t ]*((?:[kmgtp]i?)?b)?$", re.IGNORECASE)


def parse_bytes(s):
    """Bytes of ``s``: an int as it is, or a string such as ``"1.5GiB"``
    (``ValueError`` when it is not a byte specification, ``TypeError`` for
    other types)."""
    if isinstance(s, int):
        return s
    if not isinstance(s, str):
        raise TypeError(f"parse_bytes takes an int or a str, not {type(s).__name__}")
    if _RMM_SIZE.match(s) is None:
        raise ValueError(f"Could not parse {s} as a byte specification")
    return _lib.parse_bytes(s)


__all__ = ["parse_bytes"]
