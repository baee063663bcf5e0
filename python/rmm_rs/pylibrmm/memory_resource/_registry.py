"""The per-device registry's Python side: the one home of which resource
each device uses (``_per_device_mrs``: the Python object set for each
device; the Rust registry holds the same resource, which buffers and the
PyTorch hook use) and of ``is_initialized``.

>>> import rmm_rs
>>> from rmm_rs.pylibrmm.memory_resource import _registry
>>> sim = rmm_rs.mr.SimulatedMemoryResource("1GiB")
>>> _registry.set_per_device_resource(4, sim)
>>> _registry.get_per_device_resource(4) is sim
True
>>> _registry._reset_per_device_resource(4)
"""

import contextlib
import threading

from rmm_rs import _lib
from rmm_rs._lib import DeviceMemoryResource

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
