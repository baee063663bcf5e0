"""``rmm.mr.experimental``: resources RMM marks as experimental (they may
change or go in later releases)."""

from rmm_rs.pylibrmm.memory_resource.experimental import CudaAsyncManagedMemoryResource

__all__ = ["CudaAsyncManagedMemoryResource"]
