"""``rmm.rmm``: ``reinitialize``, ``is_initialized``, the reinitialize
hooks and ``RMMError``.

The per-device registry lives in
``rmm_rs.pylibrmm.memory_resource._registry`` and the set-up in ``._setup``
(both reached through ``._memory_resource``, as RMM reaches its
``_initialize``); nothing there imports this module.

>>> import rmm_rs
>>> calls = []
>>> _ = rmm_rs.register_reinitialize_hook(calls.append, "hook")
>>> rmm_rs.reinitialize(simulated_memory="1GiB")
>>> calls
['hook']
>>> rmm_rs.unregister_reinitialize_hook(calls.append)
"""

from rmm_rs._lib import RMMError
from rmm_rs.pylibrmm.memory_resource import _memory_resource

# (func, args, kwargs) in the order registered; called in reverse.
_reinitialize_hooks = []


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
    """Calls the registered hooks (last registered first), then builds each
    listed device's resource and makes it that device's current resource
    (RMM's ``rmm.reinitialize``). Memory from the previous set-up stays
    valid here (each buffer holds its resource); RMM calls using it
    undefined.

    Parameters
    ----------
    pool_allocator : bool
        Put a ``PoolMemoryResource`` over the base resource.
    managed_memory : bool
        Base resource ``ManagedMemoryResource`` instead of
        ``CudaMemoryResource``.
    initial_pool_size, maximum_pool_size : int or str, optional
        Pool sizes (``"1GiB"``, parsed as RMM's ``parse_bytes`` parses
        them: ``ValueError("Could not parse ...")`` otherwise); default:
        half the free memory, no limit. Ignored without ``pool_allocator``.
    devices : int, list of int or None
        The devices to set up (None: device 0); each resource is made with
        its device current. Devices set up before and not listed get their
        initial resource back.
    logging : bool
        Wrap each resource in a ``LoggingResourceAdaptor`` writing
        ``<name>.dev<N><ext>`` for ``log_file_name`` (or ``RMM_LOG_FILE``).
    simulated_memory : int or str, optional (rmm_rs only)
        Use a ``SimulatedMemoryResource`` of this capacity per device as the
        base resource (no GPU needed: for tests of the set-up itself).

    A failure leaves the previous set-up in place.
    """
    for func, args, kwargs in reversed(_reinitialize_hooks):
        func(*args, **kwargs)
    _memory_resource._initialize(
        pool_allocator=pool_allocator,
        managed_memory=managed_memory,
        initial_pool_size=initial_pool_size,
        maximum_pool_size=maximum_pool_size,
        devices=devices,
        logging=logging,
        log_file_name=log_file_name,
        simulated_memory=simulated_memory,
    )


def is_initialized():
    """True when every device resource set so far holds a resource (see
    ``rmm_rs.mr.is_initialized``)."""
    return _memory_resource.is_initialized()


def register_reinitialize_hook(func, *args, **kwargs):
    """Has ``reinitialize`` call ``func(*args, **kwargs)`` first (hooks run
    last registered first), e.g. to drop cached buffers; returns ``func``."""
    _reinitialize_hooks.append((func, args, kwargs))
    return func


def unregister_reinitialize_hook(func):
    """Removes every registration of ``func``."""
    _reinitialize_hooks[:] = [hook for hook in _reinitialize_hooks if hook[0] != func]


__all__ = [
    "RMMError",
    "is_initialized",
    "register_reinitialize_hook",
    "reinitialize",
    "unregister_reinitialize_hook",
]
