"""``rmm.mr``: memory resources, adaptors and the per-device registry
(the names of ``rmm_rs.pylibrmm.memory_resource``), and ``rmm.mr.experimental``.

>>> import rmm_rs
>>> pool = rmm_rs.mr.PoolMemoryResource(rmm_rs.mr.SimulatedMemoryResource("1GiB"), "1MiB")
>>> isinstance(pool, rmm_rs.mr.UpstreamResourceAdaptor)
True
"""

from rmm_rs.pylibrmm.memory_resource import (
    AlignedResourceAdaptor,
    ArenaMemoryResource,
    BinningMemoryResource,
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
    disable_logging,
    enable_logging,
    get_current_device_resource,
    get_current_device_resource_type,
    get_log_filenames,
    get_per_device_resource,
    is_initialized,
    set_current_device_resource,
    set_per_device_resource,
)
from rmm_rs.mr import experimental

# The current device as the registry counts it (0 without a GPU); private,
# for tests.
from rmm_rs.pylibrmm.memory_resource._registry import _current_device  # noqa: F401

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
    "experimental",
    "get_current_device_resource",
    "get_current_device_resource_type",
    "get_log_filenames",
    "get_per_device_resource",
    "is_initialized",
    "set_current_device_resource",
    "set_per_device_resource",
]
