"""PyTorch through rmm_rs::

    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

``rmm_torch_allocator`` is a ``torch.cuda.memory.CUDAPluggableAllocator``
over two C functions exported by the extension library itself,
``allocate(ssize_t size, int device, cudaStream_t stream)`` and
``deallocate(void* ptr, ssize_t size, int device, cudaStream_t stream)``,
which use the named device's current rmm_rs resource at the time of each
call. It is None when PyTorch cannot be imported.
"""

from rmm_rs import _lib

try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError:  # pragma: no cover - depends on the environment
    rmm_torch_allocator = None
else:
    _alloc_name, _free_name = _lib.extension_path_symbols()
    rmm_torch_allocator = CUDAPluggableAllocator(
        _lib.__file__, alloc_fn_name=_alloc_name, free_fn_name=_free_name
    )

__all__ = ["rmm_torch_allocator"]
