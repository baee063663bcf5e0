"""rmm_rs.reinitialize and rmm_rs.is_initialized."""

import os

from rmm_rs import _lib, mr

_initialized = False


def _device_list(devices):
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
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"device ids must be ints, not {type(d).__name__}")
        if d < 0:
            raise ValueError(f"device ids must be non-negative, got {d}")
    if len(set(devices)) != len(devices):
        raise ValueError(f"devices lists a device twice: {devices}")
    return devices


def reinitialize(
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
    """Builds each listed device's resource and makes it that device's
    current resource (RMM's ``rmm.reinitialize``).

    Parameters
    ----------
    pool_allocator : bool
        Put a ``PoolMemoryResource`` over the base resource.
    managed_memory : bool
        Base resource ``ManagedMemoryResource`` instead of
        ``CudaMemoryResource``.
    initial_pool_size, maximum_pool_size : int or str, optional
        Pool sizes (``"1GiB"``...); default: half the free memory, no limit.
    devices : int or list of int
        The devices to initialise; each resource is made with its device
        current.
    logging : bool
        Wrap each resource in a ``LoggingResourceAdaptor`` writing
        ``<name>.dev<N><ext>`` for ``log_file_name`` (or ``RMM_LOG_FILE``).
    simulated_memory : int or str, optional (rmm_rs only)
        Use a ``SimulatedMemoryResource`` of this capacity per device as the
        base resource (no GPU needed: for tests of the set-up itself).
    """
    global _initialized
    devices = _device_list(devices)
    # Without a pool the pool sizes are ignored, as RMM ignores them (code
    # such as reinitialize(pool_allocator=flag, initial_pool_size=n) runs
    # unchanged); they are still checked.
    from rmm_rs._lib import parse_bytes

    for size in (initial_pool_size, maximum_pool_size):
        if size is not None:
            parse_bytes(size)
    if logging:
        name = log_file_name if log_file_name is not None else os.environ.get("RMM_LOG_FILE")
        if not name:
            raise ValueError(
                "RMM log file must be specified either using log_file_name= argument "
                "or RMM_LOG_FILE environment variable"
            )
        name = os.fspath(name)
    # Write out what the loggers being replaced still hold.
    mr._flush_logs()
    built = {}
    for device in devices:
        with mr._on_device(device, simulated=simulated_memory is not None):
            if simulated_memory is not None:
                upstream = mr.SimulatedMemoryResource(simulated_memory)
            elif managed_memory:
                upstream = mr.ManagedMemoryResource()
            else:
                upstream = mr.CudaMemoryResource()
            res = upstream
            if pool_allocator:
                res = mr.PoolMemoryResource(
                    upstream,
                    initial_pool_size=initial_pool_size,
                    maximum_pool_size=maximum_pool_size,
                )
            if logging:
                res = mr.LoggingResourceAdaptor(res, log_file_name=mr._append_id(name, device))
            built[device] = res
    # Every device's resource was built: only now replace the old ones, so
    # a failure leaves the previous set-up in place.
    for device, res in built.items():
        mr.set_per_device_resource(device, res)
    _initialized = True


def is_initialized():
    """True once ``reinitialize`` (or a ``set_*_resource`` call) has set a
    resource from Python; before that each device uses the default
    ``CudaMemoryResource``."""
    return _initialized or mr._any_set()
