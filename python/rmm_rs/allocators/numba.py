"""Numba-CUDA through rmm_rs: an External Memory Management (EMM) plugin.

Select it with ``numba.cuda.set_memory_manager(RMMNumbaManager)`` or the
environment variable ``NUMBA_CUDA_MEMORY_MANAGER=rmm_rs.allocators.numba``.
Device memory then comes from the current rmm_rs resource; host memory
stays Numba's.
"""

import ctypes

from numba import cuda
from numba.cuda import HostOnlyCUDAMemoryManager, MemoryInfo, MemoryPointer
from numba.cuda.cudadrv import driver as _driver

try:
    from numba.cuda import IpcHandle
except ImportError:  # pragma: no cover - older / newer layouts
    IpcHandle = _driver.IpcHandle

from rmm_rs._lib import DeviceBuffer, available_device_memory


def _use_nvidia_binding():
    flag = getattr(_driver, "USE_NV_BINDING", None)
    if flag is not None:
        return bool(flag)
    try:
        from numba.core import config

        return bool(getattr(config, "CUDA_USE_NVIDIA_BINDING", True))
    except ImportError:  # pragma: no cover
        return True


def _device_pointer(addr):
    if _use_nvidia_binding():
        return _driver.binding.CUdeviceptr(int(addr))
    return ctypes.c_uint64(int(addr))


class RMMNumbaManager(HostOnlyCUDAMemoryManager):
    """Allocates Numba's device memory as rmm_rs DeviceBuffers."""

    def __init__(self, *args, **kwargs):
        self.allocations = {}
        super().__init__(*args, **kwargs)

    def initialize(self):
        super().initialize()

    def memalloc(self, size):
        buf = DeviceBuffer(size=size)
        ptr = buf.ptr
        allocations = self.allocations
        allocations[ptr] = buf

        def finalizer():
            allocations.pop(ptr, None)

        try:
            return MemoryPointer(self.context, _device_pointer(ptr), size, finalizer=finalizer)
        except TypeError:
            # numba-cuda versions whose MemoryPointer takes no context.
            return MemoryPointer(_device_pointer(ptr), size, finalizer=finalizer)

    def get_ipc_handle(self, memory):
        start, _end = _driver.device_extents(memory)
        if _use_nvidia_binding():
            handle = _driver.binding.cuIpcGetMemHandle(start)
            if isinstance(handle, tuple):
                handle = handle[-1]
            offset = int(memory.handle) - int(start)
        else:
            handle = (ctypes.c_byte * 64)()
            _driver.driver.cuIpcGetMemHandle(ctypes.byref(handle), start)
            offset = memory.handle.value - start
        source_info = cuda.current_context().device.get_device_identity()
        return IpcHandle(memory, handle, memory.size, source_info, offset=offset)

    def get_memory_info(self):
        free, total = available_device_memory()
        return MemoryInfo(free=free, total=total)

    def reset(self):
        super().reset()
        self.allocations.clear()

    @property
    def interface_version(self):
        return 1


# What NUMBA_CUDA_MEMORY_MANAGER=rmm_rs.allocators.numba picks up.
_numba_memory_manager = RMMNumbaManager

__all__ = ["RMMNumbaManager"]
