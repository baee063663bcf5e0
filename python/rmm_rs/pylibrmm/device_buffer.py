"""``rmm.pylibrmm.device_buffer``."""

from rmm_rs._lib import DeviceBuffer

__all__ = ["DeviceBuffer"]
