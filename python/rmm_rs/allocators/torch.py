"""PyTorch through rmm_rs::

    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)

``rmm_torch_allocator`` is a ``torch.cuda.memory.CUDAPluggableAllocator``
over C functions exported by the extension library itself, which use the
named device's current rmm_rs resource at the time of each call:
``deallocate(void* ptr, ssize_t size, int device, cudaStream_t stream)``
and ``rmm_rs_torch_allocate(ssize_t size, int device, cudaStream_t
stream)``, the twin of the plain ``allocate`` that, instead of returning
null on failure (PyTorch does not check, and would make a tensor at
address 0), throws a C++ ``std::bad_alloc`` with the message, which PyTorch
raises as ``RuntimeError`` (the message contains ``out_of_memory``). As in
RMM, it is None when PyTorch cannot be imported or has no CUDA
(``torch.cuda.is_available()`` is false).
"""

from rmm_rs import _lib

try:
    from torch.cuda.memory import CUDAPluggableAllocator
except ImportError:  # pragma: no cover - depends on the environment
    rmm_torch_allocator = None
else:
    from torch.cuda import is_available

    if is_available():
        _alloc_name, _free_name = _lib.extension_path_symbols()
        rmm_torch_allocator = CUDAPluggableAllocator(
            _lib.__file__, alloc_fn_name=_alloc_name, free_fn_name=_free_name
        )
    else:
        rmm_torch_allocator = None

__all__ = ["rmm_torch_allocator"]
