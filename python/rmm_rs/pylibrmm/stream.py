"""CUDA streams (``rmm.pylibrmm.stream``).

``Stream()`` makes a new stream (``Stream(flags=CudaStreamFlags.NON_BLOCKING)``
one that does not synchronize with the legacy default stream);
``Stream(obj)`` wraps a CuPy, PyTorch or Numba stream or any object with
``__cuda_stream__`` (kept alive by the wrapper). Wherever a stream is taken,
such objects are accepted directly.
"""

from rmm_rs._lib import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    CudaStreamFlags,
    Stream,
)

__all__ = [
    "CudaStreamFlags",
    "DEFAULT_STREAM",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "Stream",
]
