"""Memory resources, adaptors and the per-device registry (``rmm.mr``).

Every resource has ``allocate(nbytes, stream=DEFAULT_STREAM) -> int`` and
``deallocate(ptr, nbytes, stream=DEFAULT_STREAM)``; adaptors and
sub-allocators have ``upstream_mr``. Sizes are ints or strings such as
``"1GiB"``.

``SystemMemoryResource`` and ``SamHeadroomMemoryResource`` need a GPU that
can access pageable memory (Grace Hopper, Linux HMM); on others their
constructors raise ``rmm_rs.RMMError`` saying so.
"""

import atexit
import contextlib
import os
import sys
import threading
import types

from rmm_rs import _lib
from rmm_rs._lib import (
    AlignedResourceAdaptor,
    ArenaMemoryResource,
    CallbackMemoryResource,
    CudaAsyncManagedMemoryResource,
    CudaAsyncMemoryResource,
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
    available_device_memory,
)

__all__ = [
    "AlignedResourceAdaptor",
    "ArenaMemoryResource",
    "BinningMemoryResource",
    "CallbackMemoryResource",
    "CudaAsyncManagedMemoryResource",
    "CudaAsyncMemoryResource",
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


class BinningMemoryResource(_lib._BinningMemoryResource):
    """Requests routed by size to bins, larger ones to the upstream
    (``rmm.mr.BinningMemoryResource``).

    With ``min_size_exponent`` and ``max_size_exponent`` it starts with a
    ``FixedSizeMemoryResource`` bin for each power of two in between;
    ``add_bin(size, bin_resource=None)`` adds more (before the resource is
    used). ``bin_mrs`` lists the bin resources.
    """

    def __init__(self, upstream_mr, min_size_exponent=None, max_size_exponent=None):
        if min_size_exponent not in (None, -1) and max_size_exponent not in (None, -1):
            self._add_fixed_bins(min_size_exponent, max_size_exponent)


# device -> the Python resource object set for it (the Rust registry holds
# the same resource; this keeps the Python object and its type).
_per_device_mrs = {}
_set_explicitly = False
_lock = threading.RLock()


def _check_device(device):
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, not {type(device).__name__}")
    if device < 0:
        raise ValueError(f"device must be non-negative, got {device}")


def _current_device():
    return _lib._current_device()


def get_per_device_resource(device):
    """The current resource of ``device`` (the default
    ``CudaMemoryResource`` when none was set)."""
    _check_device(device)
    with _lock:
        res = _per_device_mrs.get(device)
        if res is None:
            res = _lib._initial_resource(device)
            _per_device_mrs[device] = res
        return res


def set_per_device_resource(device, mr):
    """Makes ``mr`` the current resource of ``device``. Set it before
    allocating on that device: memory is freed through the resource that
    allocated it (buffers keep theirs alive)."""
    global _set_explicitly
    _check_device(device)
    if not isinstance(mr, DeviceMemoryResource):
        raise TypeError(f"mr must be an rmm_rs.mr.DeviceMemoryResource, not {type(mr).__name__}")
    with _lock:
        _lib._set_per_device_resource(device, mr)
        _per_device_mrs[device] = mr
        _set_explicitly = True


def get_current_device_resource():
    """The current resource of the current device."""
    return get_per_device_resource(_current_device())


def set_current_device_resource(mr):
    """Makes ``mr`` the current resource of the current device."""
    set_per_device_resource(_current_device(), mr)


def get_current_device_resource_type():
    """The type of the current device's resource."""
    return type(get_current_device_resource())


def is_initialized():
    """See ``rmm_rs.is_initialized``."""
    from rmm_rs._init import is_initialized as _is

    return _is()


def _any_set():
    return _set_explicitly


@contextlib.contextmanager
def _on_device(device, simulated=False):
    """Makes ``device`` current for the block (nothing for simulated
    resources, which belong to no device)."""
    if simulated:
        yield
        return
    previous = _lib._current_device()
    if previous != device:
        _lib._set_current_device(device)
    try:
        yield
    finally:
        if previous != device:
            _lib._set_current_device(previous)


def _append_id(filename, device):
    name, ext = os.path.splitext(os.fspath(filename))
    return f"{name}.dev{device}{ext}"


def _flush_logs():
    """Flushes every LoggingResourceAdaptor among the devices' resources and
    their upstreams (at exit too: the registry keeps its resources for the
    whole process, so their buffered lines would otherwise never be
    written)."""
    with _lock:
        for res in list(_per_device_mrs.values()):
            seen = 0
            while res is not None and seen < 64:
                if isinstance(res, LoggingResourceAdaptor):
                    try:
                        res.flush()
                    except OSError:
                        pass
                res = res.upstream_mr
                seen += 1


atexit.register(_flush_logs)


def enable_logging(log_file_name=None):
    """Wraps each device's current resource in a ``LoggingResourceAdaptor``
    writing ``<name>.dev<N><ext>`` (``log_file_name`` or ``RMM_LOG_FILE``)."""
    name = log_file_name if log_file_name is not None else os.environ.get("RMM_LOG_FILE")
    if not name:
        raise ValueError(
            "RMM log file must be specified either using log_file_name= argument "
            "or RMM_LOG_FILE environment variable"
        )
    with _lock:
        devices = list(_per_device_mrs) or [_current_device()]
        for device in devices:
            res = get_per_device_resource(device)
            if not isinstance(res, LoggingResourceAdaptor):
                set_per_device_resource(
                    device, LoggingResourceAdaptor(res, log_file_name=_append_id(name, device))
                )


def disable_logging():
    """Unwraps the ``LoggingResourceAdaptor`` of each device (flushing it)."""
    with _lock:
        for device, res in list(_per_device_mrs.items()):
            if isinstance(res, LoggingResourceAdaptor):
                res.flush()
                set_per_device_resource(device, res.upstream_mr)


def get_log_filenames():
    """``{device: log file name or None}`` for every device with a resource."""
    with _lock:
        return {
            device: (res.get_file_name() if isinstance(res, LoggingResourceAdaptor) else None)
            for device, res in _per_device_mrs.items()
        }


# RMM 26.x keeps its managed driver-pool resource in ``rmm.mr.experimental``:
# a real module here too, so that ``from rmm_rs.mr.experimental import ...``
# works as well as attribute access.
experimental = types.ModuleType(__name__ + ".experimental", "RMM's experimental resources.")
experimental.CudaAsyncManagedMemoryResource = CudaAsyncManagedMemoryResource
experimental.__all__ = ["CudaAsyncManagedMemoryResource"]
sys.modules[experimental.__name__] = experimental
