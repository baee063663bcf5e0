"""rmm_rs: RAPIDS RMM's Python API over a Rust GPU memory manager.

``import rmm_rs as rmm`` runs RMM's Python examples: ``rmm.DeviceBuffer``,
``rmm.reinitialize``, ``rmm.mr`` (memory resources, adaptors, the per-device
registry), ``rmm.statistics`` (counters and the memory profiler), the
logging-level functions, and the allocator hooks in
``rmm_rs.allocators.cupy`` / ``.numba`` / ``.torch`` (imported on demand:
the package itself needs none of CuPy, Numba or PyTorch). Every module of
RMM 26.08 is here under the same path (``rmm.pylibrmm.memory_resource``
is ``rmm_rs.pylibrmm.memory_resource``, ``rmm._cuda.gpu`` is
``rmm_rs._cuda.gpu``...), with the same ``__all__`` plus a few names of
rmm_rs's own (python/README.md lists them and every other difference).

The CUDA driver (``libcuda.so.1``) is loaded at run time: the package
imports on a machine without a GPU, where every GPU call raises
``rmm_rs.DriverUnavailableError`` naming the missing library
(``rmm_rs.gpu_unavailable_reason()`` says why up front), while
``rmm_rs.mr.SimulatedMemoryResource`` runs pools, adaptors, statistics
and logging without a GPU.
"""

from rmm_rs._lib import (
    CaptureError,
    ConfigurationError,
    CUDAError,
    DriverUnavailableError,
    device_count,
    gpu_unavailable_reason,
    parse_bytes,
    read_log,
    replay_log,
)
from rmm_rs import mr
from rmm_rs._version import __git_commit__, __version__
from rmm_rs.mr import disable_logging, enable_logging, get_log_filenames
from rmm_rs.pylibrmm.device_buffer import DeviceBuffer
from rmm_rs.pylibrmm.logger import (
    flush_logger,
    get_flush_level,
    get_logging_level,
    level_enum,
    set_flush_level,
    set_logging_level,
    should_log,
)
from rmm_rs.rmm import (
    RMMError,
    is_initialized,
    register_reinitialize_hook,
    reinitialize,
    unregister_reinitialize_hook,
)
from rmm_rs import _cuda, forensics, graph, pylibrmm, statistics
from rmm_rs.forensics import (
    OutOfMemoryReport,
    add_oom_observer,
    last_oom_report,
    memory_snapshot,
    remove_oom_observer,
    write_oom_reports_to,
)
from rmm_rs.pylibrmm.stream import (
    DEFAULT_STREAM,
    LEGACY_DEFAULT_STREAM,
    PER_THREAD_DEFAULT_STREAM,
    Stream,
)

__all__ = [
    # RMM 26.08's rmm.__all__
    "DeviceBuffer",
    "disable_logging",
    "RMMError",
    "enable_logging",
    "flush_logger",
    "get_flush_level",
    "get_log_filenames",
    "get_logging_level",
    "is_initialized",
    "level_enum",
    "mr",
    "register_reinitialize_hook",
    "reinitialize",
    "set_flush_level",
    "set_logging_level",
    "should_log",
    "unregister_reinitialize_hook",
    # rmm_rs's own
    "CaptureError",
    "CUDAError",
    "ConfigurationError",
    "DEFAULT_STREAM",
    "DriverUnavailableError",
    "LEGACY_DEFAULT_STREAM",
    "PER_THREAD_DEFAULT_STREAM",
    "Stream",
    "device_count",
    "gpu_available",
    "graph",
    "gpu_unavailable_reason",
    "parse_bytes",
    "read_log",
    "replay_log",
    "statistics",
    "forensics",
    "OutOfMemoryReport",
    "add_oom_observer",
    "last_oom_report",
    "memory_snapshot",
    "remove_oom_observer",
    "write_oom_reports_to",
]


def gpu_available():
    """True when the CUDA driver loads and sees at least one GPU."""
    return gpu_unavailable_reason() is None
