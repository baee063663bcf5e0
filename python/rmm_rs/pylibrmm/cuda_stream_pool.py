"""``rmm.pylibrmm.cuda_stream_pool``: ``CudaStreamPool(pool_size=16,
flags=CudaStreamFlags.SYNC_DEFAULT)``, a fixed set of streams handed out in
turn (``get_stream()``) or by index (``get_stream(i)``)."""

from rmm_rs._lib import CudaStreamPool

__all__ = ["CudaStreamPool"]
