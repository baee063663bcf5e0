"""``rmm.pylibrmm``: streams and stream pools, ``DeviceBuffer``, memory
resources, the debug logger's levels and ``parse_bytes`` (``helper``)."""

from rmm_rs.pylibrmm import memory_resource

from rmm_rs.pylibrmm import helper, logger
from rmm_rs.pylibrmm.cuda_stream_pool import CudaStreamPool
from rmm_rs.pylibrmm.stream import CudaStreamFlags
from rmm_rs.pylibrmm.device_buffer import DeviceBuffer

__all__ = [
    "CudaStreamPool",
    "CudaStreamFlags",
    "DeviceBuffer",
    "memory_resource",
]
