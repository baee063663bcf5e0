"""``rmm._cuda``: ``gpu`` (device queries) and ``stream`` (``Stream``, as
older RMM releases kept it here)."""

from rmm_rs._cuda import gpu, stream

__all__ = ["gpu", "stream"]
