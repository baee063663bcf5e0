"""Unpickling of DeviceBuffer (pickles carry the contents as bytes)."""


def rebuild_device_buffer(data):
    """A new DeviceBuffer (current device resource) holding ``data``."""
    from rmm_rs._lib import DeviceBuffer

    return DeviceBuffer.to_device(data)
