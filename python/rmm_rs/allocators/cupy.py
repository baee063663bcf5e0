"""CuPy through rmm_rs: ``cupy.cuda.set_allocator(rmm_cupy_allocator)``."""

from rmm_rs._lib import DEFAULT_STREAM, DeviceBuffer, Stream

try:
    import cupy
except ImportError:  # pragma: no cover - depends on the environment
    cupy = None


def rmm_cupy_allocator(nbytes):
    """A ``cupy.cuda.MemoryPointer`` over a ``DeviceBuffer`` of ``nbytes``
    from the current device's resource, ordered on CuPy's current stream."""
    if cupy is None:
        raise ModuleNotFoundError("No module named 'cupy'")
    current = cupy.cuda.get_current_stream()
    # The null stream (CuPy's default) needs no wrapper object.
    stream = DEFAULT_STREAM if current.ptr == 0 else Stream(current)
    buf = DeviceBuffer(size=nbytes, stream=stream)
    # The buffer's device, named: CuPy would otherwise ask the driver about
    # the pointer (RMM passes -1), which fails for memory that a graph
    # being captured allocated through cuda_async (a graph memory node has
    # no memory before the graph's first launch).
    dev_id = buf.device if buf.ptr else cupy.cuda.device.get_device_id()
    mem = cupy.cuda.UnownedMemory(ptr=buf.ptr, size=buf.size, owner=buf, device_id=dev_id)
    return cupy.cuda.memory.MemoryPointer(mem, 0)


__all__ = ["rmm_cupy_allocator"]
