"""``rmm._version``: ``__version__`` (the extension's crate version) and
``__git_commit__`` (the contents of a ``GIT_COMMIT`` file shipped in the
package, as RMM's wheels ship one; ``""`` without it)."""

import importlib.resources

from rmm_rs import _lib

__version__ = _lib.__version__
try:
    __git_commit__ = importlib.resources.files(__package__).joinpath("GIT_COMMIT").read_text().strip()
except FileNotFoundError:
    __git_commit__ = ""

__all__ = ["__git_commit__", "__version__"]
