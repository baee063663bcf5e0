"""rmm_rs: RAPIDS RMM's Python API over a Rust GPU memory manager.

``import rmm_rs as rmm`` runs RMM's Python examples: ``rmm.DeviceBuffer``,
``rmm.reinitialize``, ``rmm.mr`` (memory resources, adaptors, the per-device
registry), ``rmm.statistics`` (counters and the memory profiler), the
logging-level functions, and the allocator hooks in
``rmm_rs.allocators.cupy`` / ``.numba`` / ``.torch`` (imported on demand:
the package itself needs none of CuPy, Numba or PyTorch).

The CUDA driver (``libcuda.so.1``) is loaded at run time: the package
imports on a machine without a GPU, where every GPU call raises
``rmm_rs.DriverUnavailableError`` naming the missing library
(``rmm_rs.gpu_unavailable_reason()`` says why up front), while
``rmm_rs.mr.SimulatedMemoryResource`` runs pools, adaptors, statistics
and logging without a GPU.
"""

from rmm_rs import _lib
from rmm_rs._lib import (
    CUDAError,
    DeviceBuffer,
    DriverUnavailableError,
    RMMError,
    device_count,
    flush_logger,
    gpu_unavailable_reason,
    parse_bytes,
    read_log,
    replay_log,
    set_logging_level,
    should_log,
)
from rmm_rs import mr, pylibrmm, statistics
from rmm_rs._init import is_initialized, reinitialize
from rmm_rs.pylibrmm.logger import get_logging_level, level_enum
from rmm_rs.pylibrmm.stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Stream,
)

__version__ = _lib.__version__

__all__ = [
    "CUDAError",
    "DEFAULT_STREAM",
    "DeviceBuffer",
    "DriverUnavailableError",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "RMMError",
    "Stream",
    "device_count",
    "flush_logger",
    "get_logging_level",
    "gpu_available",
    "gpu_unavailable_reason",
    "is_initialized",
    "level_enum",
    "mr",
    "parse_bytes",
    "read_log",
    "reinitialize",
    "replay_log",
    "set_logging_level",
    "should_log",
    "statistics",
]


def gpu_available():
    """True when the CUDA driver loads and sees at least one GPU."""
    return gpu_unavailable_reason() is None
