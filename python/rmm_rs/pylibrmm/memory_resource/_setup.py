"""What ``rmm_rs.reinitialize`` builds (``_initialize``) and the logging
switches over the registry (``enable_logging``, ``disable_logging``,
``get_log_filenames``, ``_flush_logs``, which also runs at exit)."""

import atexit

from rmm_rs._lib import (
    CudaMemoryResource,
    LoggingResourceAdaptor,
    ManagedMemoryResource,
    PoolMemoryResource,
    SimulatedMemoryResource,
)
from rmm_rs.pylibrmm.helper import parse_bytes
from rmm_rs.pylibrmm.memory_resource._registry import (
    _check_device,
    _lock,
    _on_device,
    _per_device_mrs,
    _reset_per_device_resource,
    get_per_device_resource,
    set_per_device_resource,
)


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
