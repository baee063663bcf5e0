"""Memory resources, adaptors and the per-device registry
(``rmm.pylibrmm.memory_resource._memory_resource``).

The resource classes are native (``rmm_rs._lib``) except
``BinningMemoryResource``'s constructor; the registry lives in
``._registry``, the set-up and logging switches in ``._setup``; this
module gathers them under RMM's path. Nothing here imports ``rmm_rs.rmm``,
``rmm_rs.mr`` or ``rmm_rs.statistics``: they import this module.

Every resource has ``allocate(nbytes, stream=DEFAULT_STREAM) -> int`` and
``deallocate(ptr, nbytes, stream=DEFAULT_STREAM)``; adaptors and
sub-allocators derive from ``UpstreamResourceAdaptor`` and have
``upstream_mr`` / ``get_upstream()``. Sizes are ints or strings such as
``"1GiB"``.
"""

from rmm_rs import _lib
from rmm_rs._lib import (
    AlignedResourceAdaptor,
    ArenaMemoryResource,
    CallbackMemoryResource,
    CudaAsyncManagedMemoryResource,
    CudaAsyncMemoryResource,
    CudaAsyncViewMemoryResource,
    CudaMemoryResource,
    DeviceMemoryResource,
    FailureCallbackResourceAdaptor,
    FixedSizeMemoryResource,
    LimitingResourceAdaptor,
    LoggingResourceAdaptor,
    ManagedMemoryResource,
    PinnedHostMemoryResource,
    PoolMemoryResource,
    PrefetchResourceAdaptor,
    SamHeadroomMemoryResource,
    SimulatedMemoryResource,
    StatisticsResourceAdaptor,
    SystemMemoryResource,
    TrackingResourceAdaptor,
    UpstreamResourceAdaptor,
    available_device_memory,
)
from rmm_rs.pylibrmm.memory_resource._registry import (
    get_current_device_resource,
    get_current_device_resource_type,
    get_per_device_resource,
    is_initialized,
    set_current_device_resource,
    set_per_device_resource,
)
from rmm_rs.pylibrmm.memory_resource._setup import (  # noqa: F401 (RMM's private names)
    _flush_logs,
    _initialize,
    disable_logging,
    enable_logging,
    get_log_filenames,
)


class BinningMemoryResource(_lib._BinningMemoryResource):
    """Requests routed by size to bins, larger ones to the upstream
    (``rmm.mr.BinningMemoryResource``).

    With ``min_size_exponent`` and ``max_size_exponent`` it starts with a
    ``FixedSizeMemoryResource`` bin for each power of two in between;
    ``add_bin(size, bin_resource=None)`` adds more (before the resource is
    used).

    >>> import rmm_rs
    >>> sim = rmm_rs.mr.SimulatedMemoryResource("1GiB")
    >>> mr = rmm_rs.mr.BinningMemoryResource(sim, 10, 12)  # bins of 1, 2, 4 KiB
    >>> mr.allocate(3000) != 0
    True
    """

    def __init__(self, upstream_mr, min_size_exponent=-1, max_size_exponent=-1):
        if min_size_exponent not in (None, -1) and max_size_exponent not in (None, -1):
            self._add_fixed_bins(min_size_exponent, max_size_exponent)


__all__ = [
    "AlignedResourceAdaptor",
    "ArenaMemoryResource",
    "BinningMemoryResource",
    "CallbackMemoryResource",
    "CudaAsyncManagedMemoryResource",
    "CudaAsyncMemoryResource",
    "CudaAsyncViewMemoryResource",
    "CudaMemoryResource",
    "DeviceMemoryResource",
    "FailureCallbackResourceAdaptor",
    "FixedSizeMemoryResource",
    "LimitingResourceAdaptor",
    "LoggingResourceAdaptor",
    "ManagedMemoryResource",
    "PinnedHostMemoryResource",
    "PoolMemoryResource",
    "PrefetchResourceAdaptor",
    "SamHeadroomMemoryResource",
    "SimulatedMemoryResource",
    "StatisticsResourceAdaptor",
    "SystemMemoryResource",
    "TrackingResourceAdaptor",
    "UpstreamResourceAdaptor",
    "available_device_memory",
    "disable_logging",
    "enable_logging",
    "get_current_device_resource",
    "get_current_device_resource_type",
    "get_log_filenames",
    "get_per_device_resource",
    "is_initialized",
    "set_current_device_resource",
    "set_per_device_resource",
]
