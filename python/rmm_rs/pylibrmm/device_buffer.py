"""``rmm.pylibrmm.device_buffer``: ``DeviceBuffer`` and the copy functions
between host buffers, device pointers and ``DeviceBuffer``:
``to_device(b, stream)``, ``copy_ptr_to_host(db, hb, stream)``,
``copy_host_to_ptr(hb, db, stream)``, ``copy_device_to_ptr(d_src, d_dst,
count, stream)``."""

from rmm_rs._lib import (
    DeviceBuffer,
    copy_device_to_ptr,
    copy_host_to_ptr,
    copy_ptr_to_host,
    to_device,
)

__all__ = [
    "DeviceBuffer",
    "copy_device_to_ptr",
    "copy_host_to_ptr",
    "copy_ptr_to_host",
    "to_device",
]
