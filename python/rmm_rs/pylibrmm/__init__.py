"""``rmm.pylibrmm``: streams, DeviceBuffer, memory resources, logger."""

from rmm_rs.pylibrmm import device_buffer, logger, memory_resource, stream
from rmm_rs.pylibrmm.device_buffer import DeviceBuffer

__all__ = ["DeviceBuffer", "device_buffer", "logger", "memory_resource", "stream"]
