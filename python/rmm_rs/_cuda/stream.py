"""``rmm._cuda.stream``: ``Stream`` and the default streams, the same
objects as ``rmm_rs.pylibrmm.stream``'s."""

from rmm_rs.pylibrmm.stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Stream,
)

__all__ = ["DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream"]
