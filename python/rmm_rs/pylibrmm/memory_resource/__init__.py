"""``rmm.pylibrmm.memory_resource``: the memory resources, adaptors and
per-device registry (defined in ``._memory_resource``) and the
``experimental`` resources.

Beyond RMM's names it has ``SimulatedMemoryResource`` (addresses without
memory, for GPU-less tests), ``AlignedResourceAdaptor``,
``CudaAsyncManagedMemoryResource`` (also in ``experimental``, where RMM
keeps it) and ``get_current_device_resource_type``.
"""

from rmm_rs.pylibrmm.memory_resource import _memory_resource, experimental
from rmm_rs.pylibrmm.memory_resource._memory_resource import *  # noqa: F403 (the names of its __all__)

# One list of names: ``_memory_resource``'s, plus the subpackage.
__all__ = sorted([*_memory_resource.__all__, "experimental"])
