"""Memory resources, adaptors and the per-device registry
(``rmm.pylibrmm.memory_resource._memory_resource``).

The resource classes are native (``rmm_rs._lib``); this module is the one
home of the per-device registry's Python side (``_per_device_mrs``: the
Python object set for each device, which the Rust registry holds too), of
``_initialize`` (what ``rmm_rs.reinitialize`` builds) and of the logging
switches. Nothing here imports ``rmm_rs.rmm``, ``rmm_rs.mr`` or
``rmm_rs.statistics``: they import this module.

Every resource has ``allocate(nbytes, stream=DEFAULT_STREAM) -> int`` and
``deallocate(ptr, nbytes, stream=DEFAULT_STREAM)``; adaptors and
sub-allocators derive from ``UpstreamResourceAdaptor`` and have
``upstream_mr`` / ``get_upstream()``. Sizes are ints or strings such as
``"1GiB"``.
"""

import atexit
import contextlib
import threading

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
from rmm_rs.pylibrmm.helper import parse_bytes


class BinningMemoryResource(_lib._BinningMemoryResource):
    """Requests routed by size to bins, larger ones to the upstream
    (``rmm.mr.BinningMemoryResource``).

    With ``min_size_exponent`` and ``max_size_exponent`` it starts with a
    ``FixedSizeMemoryResource`` bin for each power of two in between;
    ``add_bin(size, bin_resource=None)`` adds more (before the resource is
    used). ``bin_mrs`` lists the bin resources.

    >>> import rmm_rs
    >>> sim = rmm_rs.mr.SimulatedMemoryResource("1GiB")
    >>> mr = rmm_rs.mr.BinningMemoryResource(sim, 10, 12)
    >>> len(mr.bin_mrs)
    3
    """

    def __init__(self, upstream_mr, min_size_exponent=-1, max_size_exponent=-1):
        if min_size_exponent not in (None, -1) and max_size_exponent not in (None, -1):
            self._add_fixed_bins(min_size_exponent, max_size_exponent)


# device -> the Python resource object set for it. The Rust registry holds
# the same resource (what buffers and the PyTorch hook use); this keeps the
# Python object, its type and its upstream chain.
_per_device_mrs = {}
_lock = threading.RLock()


def _check_device(device):
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, not {type(device).__name__}")
    if device < 0:
        raise ValueError(f"device must be non-negative, got {device}")


def _current_device():
    # Device 0 without a GPU, as the Rust registry counts it.
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
    _check_device(device)
    if not isinstance(mr, DeviceMemoryResource):
        raise TypeError(f"mr must be an rmm_rs.mr.DeviceMemoryResource, not {type(mr).__name__}")
    with _lock:
        _lib._set_per_device_resource(device, mr)
        _per_device_mrs[device] = mr


def _reset_per_device_resource(device):
    """Gives ``device`` its initial resource back (Rust and Python side)."""
    with _lock:
        _lib._reset_per_device_resource(device)
        _per_device_mrs.pop(device, None)


def get_current_device_resource():
    """The current resource of the current device."""
    return get_per_device_resource(_current_device())


def set_current_device_resource(mr):
    """Makes ``mr`` the current resource of the current device."""
    set_per_device_resource(_current_device(), mr)


def get_current_device_resource_type():
    """The type of the current device's resource (rmm_rs only; older RMM
    releases had it)."""
    return type(get_current_device_resource())


def _holds_resource(mr):
    try:
        mr.is_simulated
    except ValueError:  # a bare base-class object
        return False
    return True


def is_initialized():
    """True when every device resource set so far holds a resource (RMM's
    rule: so also before any was set, each device then using the default
    ``CudaMemoryResource``)."""
    with _lock:
        return all(_holds_resource(mr) for mr in _per_device_mrs.values())


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


def _device_list(devices):
    if devices is None:
        return [0]
    if isinstance(devices, bool):
        raise TypeError("devices must be an int or a list of ints, not bool")
    if isinstance(devices, int):
        devices = [devices]
    try:
        devices = list(devices)
    except TypeError:
        raise TypeError(
            f"devices must be an int or a list of ints, not {type(devices).__name__}"
        ) from None
    if not devices:
        raise ValueError("devices must name at least one device")
    for d in devices:
        _check_device(d)
    if len(set(devices)) != len(devices):
        raise ValueError(f"devices lists a device twice: {devices}")
    return devices


def _base_resource(managed_memory, simulated_memory):
    if simulated_memory is not None:
        return SimulatedMemoryResource(simulated_memory)
    if managed_memory:
        return ManagedMemoryResource()
    return CudaMemoryResource()


def _initialize(
    pool_allocator=False,
    managed_memory=False,
    initial_pool_size=None,
    maximum_pool_size=None,
    devices=0,
    logging=False,
    log_file_name=None,
    *,
    simulated_memory=None,
):
    """Builds each listed device's resource (with that device current) and
    makes it the device's resource; the devices set before and not listed
    get their initial resource back. A failure leaves the previous set-up
    in place. See ``rmm_rs.reinitialize``."""
    devices = _device_list(devices)
    if pool_allocator:
        # As in RMM, the pool sizes are parsed (RMM's grammar and error
        # text) only for a pool; without one they are ignored.
        initial_pool_size = None if initial_pool_size is None else parse_bytes(initial_pool_size)
        maximum_pool_size = None if maximum_pool_size is None else parse_bytes(maximum_pool_size)
    # Write out what the loggers being replaced still hold.
    _flush_logs()
    built = {}
    for device in devices:
        with _on_device(device, simulated=simulated_memory is not None):
            res = _base_resource(managed_memory, simulated_memory)
            if pool_allocator:
                res = PoolMemoryResource(
                    res, initial_pool_size=initial_pool_size, maximum_pool_size=maximum_pool_size
                )
            if logging:
                res = LoggingResourceAdaptor(res, log_file_name, device=device)
            built[device] = res
    with _lock:
        for device in [d for d in _per_device_mrs if d not in built]:
            _reset_per_device_resource(device)
        for device, res in built.items():
            set_per_device_resource(device, res)


def _flush_logs():
    """Flushes every ``LoggingResourceAdaptor`` among the devices' resources
    and their upstreams (at exit too: the registry keeps its resources for
    the whole process, so their buffered lines would otherwise never be
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
    """Wraps each device's resource (device 0's when none was set) in a
    ``LoggingResourceAdaptor`` writing ``<name>.dev<N><ext>`` for
    ``log_file_name`` or ``RMM_LOG_FILE`` (``ValueError`` without either).
    Each adaptor is built with its device current."""
    with _lock:
        devices = list(_per_device_mrs) or [0]
        for device in devices:
            res = get_per_device_resource(device)
            if isinstance(res, LoggingResourceAdaptor):
                continue
            with _on_device(device, simulated=res.is_simulated):
                wrapped = LoggingResourceAdaptor(res, log_file_name, device=device)
            set_per_device_resource(device, wrapped)


def disable_logging():
    """Puts back the upstream of each device's ``LoggingResourceAdaptor``
    (flushing it first)."""
    with _lock:
        for device, res in list(_per_device_mrs.items()):
            if isinstance(res, LoggingResourceAdaptor):
                res.flush()
                set_per_device_resource(device, res.get_upstream())


def get_log_filenames():
    """``{device: log file name or None}`` for every device with a resource."""
    with _lock:
        return {
            device: (res.get_file_name() if isinstance(res, LoggingResourceAdaptor) else None)
            for device, res in _per_device_mrs.items()
        }


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
