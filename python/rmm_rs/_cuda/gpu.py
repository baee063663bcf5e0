"""``rmm._cuda.gpu``: device queries RMM's Python code and tests use.

RMM implements these over ``cuda.bindings``' runtime API. rmm_rs links no
CUDA runtime and needs no ``cuda-python``: the current device and the device
count come from the extension (``rmm_rs._lib``), the rest from the CUDA
driver (``libcuda.so.1``, loaded on first use). Runtime and driver number
the device attributes alike (``cudaDevAttrIntegrated`` ==
``CU_DEVICE_ATTRIBUTE_INTEGRATED`` == 18, ...), so ``getDeviceAttribute``
takes ``cuda.bindings.runtime.cudaDeviceAttr`` members or plain ints.

Failures raise ``CUDARuntimeError`` (``CUDADriverError`` for
``deviceGetName``) whose ``status`` is the driver's error code as an int
(100: no device, 101: invalid device, 35: no usable driver) and whose
message is ``"<name>: <description>"``.

>>> import rmm_rs._cuda.gpu as gpu
>>> gpu.driverGetVersion() >= 0
True
"""

import ctypes

from rmm_rs import _lib

# Driver error codes (CUresult) used here; the runtime's cudaError_t has
# the same numbers for these.
_NO_DEVICE = 100
_INVALID_DEVICE = 101
_INSUFFICIENT_DRIVER = 35

_libcuda = None


def _error_text(status):
    """``"NAME: description"`` of a driver error code, from the driver when
    it loads."""
    lib = _driver_or_none()
    if lib is not None:
        name, text = ctypes.c_char_p(), ctypes.c_char_p()
        if lib.cuGetErrorName(status, ctypes.byref(name)) == 0 and name.value:
            lib.cuGetErrorString(status, ctypes.byref(text))
            return f"{name.value.decode()}: {(text.value or b'').decode()}"
    return f"CUDA error {status}"


class CUDARuntimeError(RuntimeError):
    """A failed device query (RMM's runtime-API error)."""

    def __init__(self, status, message=None):
        self.status = status
        super().__init__(message if message is not None else _error_text(int(status)))

    def __reduce__(self):
        return (type(self), (self.status, str(self)))


class CUDADriverError(RuntimeError):
    """A failed driver call (RMM's driver-API error)."""

    def __init__(self, status, message=None):
        self.status = status
        super().__init__(message if message is not None else _error_text(int(status)))

    def __reduce__(self):
        return (type(self), (self.status, str(self)))


def _driver_or_none():
    """The driver library (initialised once), or None when it does not
    load. A failed ``cuInit`` (no GPU) shows in the calls that need it."""
    global _libcuda
    if _libcuda is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        lib.cuInit(0)
        _libcuda = lib
    return _libcuda


def _need_gpu(error=CUDARuntimeError):
    """The driver library when at least one GPU is usable, else ``error``."""
    reason = _lib.gpu_unavailable_reason()
    if reason is not None:
        status = _NO_DEVICE if _driver_or_none() is not None else _INSUFFICIENT_DRIVER
        raise error(status, f"{_error_text(status)} ({reason})")
    return _driver_or_none()


def _check_device(device, error=CUDARuntimeError):
    if isinstance(device, bool) or not isinstance(device, int):
        raise TypeError(f"device must be an int, not {type(device).__name__}")
    lib = _need_gpu(error)
    if not 0 <= device < _lib.device_count():
        raise error(_INVALID_DEVICE)
    return lib


def driverGetVersion():
    """The newest CUDA version the driver supports, as ``1000 * major + 10
    * minor`` (12040 for 12.4); 0 without a driver, as in RMM."""
    lib = _driver_or_none()
    if lib is None:
        return 0
    version = ctypes.c_int(0)
    status = lib.cuDriverGetVersion(ctypes.byref(version))
    if status != 0:
        raise CUDARuntimeError(status)
    return version.value


def runtimeGetVersion():
    """The CUDA version rmm_rs's calls run against. RMM returns its CUDA
    runtime library's version; rmm_rs calls the driver directly, so this is
    the driver's (``driverGetVersion()``)."""
    return driverGetVersion()


def getDevice():
    """The current device of this thread."""
    _need_gpu()
    return _lib._current_device()


def setDevice(device):
    """Makes ``device`` current on this thread."""
    _check_device(device)
    _lib._set_current_device(device)


def getDeviceCount():
    """The number of GPUs (``CUDARuntimeError`` when there is none, as
    the runtime reports it)."""
    _need_gpu()
    return _lib.device_count()


def _attribute_number(attr):
    """The number of a device attribute: an int (``IntEnum`` members are)
    or an enum member whose ``value`` is one."""
    value = attr if isinstance(attr, int) else getattr(attr, "value", None)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"attr must be a cudaDeviceAttr or an int, not {type(attr).__name__}")
    return int(value)


def getDeviceAttribute(attr, device):
    """The int value of device attribute ``attr`` (a ``cudaDeviceAttr``
    member or its number) of ``device``."""
    number = _attribute_number(attr)
    lib = _check_device(device)
    handle, value = ctypes.c_int(0), ctypes.c_int(0)
    status = lib.cuDeviceGet(ctypes.byref(handle), device)
    if status == 0:
        status = lib.cuDeviceGetAttribute(ctypes.byref(value), number, handle)
    if status != 0:
        raise CUDARuntimeError(status)
    return value.value


def getDeviceProperties(device):
    """``cuda.bindings.runtime.cudaDeviceProp`` of ``device``, as RMM
    returns it: needs ``cuda-python`` (``ModuleNotFoundError`` without)."""
    from cuda.bindings import runtime

    _check_device(device)
    status, prop = runtime.cudaGetDeviceProperties(device)
    if status != runtime.cudaError_t.cudaSuccess:
        raise CUDARuntimeError(status, f"cudaGetDeviceProperties({device}) failed: {status!r}")
    return prop


def deviceGetName(device):
    """The device's name (``"NVIDIA H200"``)."""
    lib = _check_device(device, CUDADriverError)
    handle = ctypes.c_int(0)
    buf = ctypes.create_string_buffer(256)
    status = lib.cuDeviceGet(ctypes.byref(handle), device)
    if status == 0:
        status = lib.cuDeviceGetName(buf, len(buf), handle)
    if status != 0:
        raise CUDADriverError(status)
    return buf.value.decode()
