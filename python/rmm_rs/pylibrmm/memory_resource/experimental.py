"""``rmm.pylibrmm.memory_resource.experimental``: resources RMM marks as
experimental (they may change or go in later releases)."""

from rmm_rs._lib import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
