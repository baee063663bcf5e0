"""What runs without a GPU, the package itself: it imports without its
optional libraries, mirrors RMM's public names and modules, says clearly
that no GPU is there, serves system memory without one, and has its graph
module without a capture."""

import subprocess
import sys

import pytest

import rmm_rs
import rmm_rs as rmm
from rmm_rs import mr

GPU = rmm_rs.gpu_available()


# --- the package -----------------------------------------------------------


def test_imports_without_optional_libraries():
    # A fresh interpreter: importing rmm_rs imports none of CuPy, Numba, PyTorch.
    code = (
        "import sys, rmm_rs, rmm_rs.mr, rmm_rs.statistics, rmm_rs.allocators;"
        "bad = [m for m in ('cupy', 'numba', 'torch') if m in sys.modules];"
        "assert not bad, bad; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# RMM 26.08's public Python modules and their __all__ lists, written out from
# rapidsai/rmm python/rmm/rmm/ at 5d50a37b9612 (VERSION 26.08.00).
_RMM_MR_ALL = [
    "ArenaMemoryResource",
    "BinningMemoryResource",
    "CallbackMemoryResource",
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
    "StatisticsResourceAdaptor",
    "SystemMemoryResource",
    "TrackingResourceAdaptor",
    "UpstreamResourceAdaptor",
    "available_device_memory",
    "disable_logging",
    "enable_logging",
    "experimental",
    "get_current_device_resource",
    "get_log_filenames",
    "get_per_device_resource",
    "is_initialized",
    "set_current_device_resource",
    "set_per_device_resource",
]
RMM_ALL = {
    "rmm": [
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
    ],
    "rmm._version": ["__git_commit__", "__version__"],
    "rmm.mr": _RMM_MR_ALL,
    "rmm.mr.experimental": ["CudaAsyncManagedMemoryResource"],
    "rmm.pylibrmm": ["CudaStreamPool", "CudaStreamFlags", "DeviceBuffer", "memory_resource"],
    "rmm.pylibrmm.memory_resource": _RMM_MR_ALL,
    "rmm.pylibrmm.memory_resource.experimental": ["CudaAsyncManagedMemoryResource"],
    "rmm.pylibrmm.logger": [
        "flush_logger",
        "get_flush_level",
        "get_logging_level",
        "level_enum",
        "set_flush_level",
        "set_logging_level",
        "should_log",
    ],
}
# RMM 26.08's modules without __all__: the names defined there that code uses.
RMM_NAMES = {
    "rmm.rmm": ["RMMError", "reinitialize", "is_initialized", "register_reinitialize_hook",
                "unregister_reinitialize_hook"],
    "rmm.statistics": ["Statistics", "enable_statistics", "get_statistics", "push_statistics",
                       "pop_statistics", "statistics", "ProfilerRecords", "_get_descriptive_name_of_object",
                       "default_profiler_records", "ProfilerContext", "profiler"],
    "rmm.pylibrmm.stream": ["CudaStreamFlags", "Stream", "DEFAULT_STREAM", "LEGACY_DEFAULT_STREAM",
                            "PER_THREAD_DEFAULT_STREAM"],
    "rmm.pylibrmm.cuda_stream_pool": ["CudaStreamPool"],
    "rmm.pylibrmm.device_buffer": ["DeviceBuffer", "to_device", "copy_ptr_to_host", "copy_host_to_ptr",
                                   "copy_device_to_ptr"],
    "rmm.pylibrmm.helper": ["parse_bytes"],
    "rmm.pylibrmm.memory_resource._memory_resource": [n for n in _RMM_MR_ALL if n != "experimental"]
    + ["_initialize", "_flush_logs"],
    "rmm._cuda.gpu": ["CUDARuntimeError", "CUDADriverError", "driverGetVersion", "getDevice", "setDevice",
                      "runtimeGetVersion", "getDeviceCount", "getDeviceAttribute", "getDeviceProperties",
                      "deviceGetName"],
    "rmm.librmm._logger": ["level_enum"],
    "rmm.allocators.cupy": ["rmm_cupy_allocator"],
    "rmm.allocators.torch": ["rmm_torch_allocator"],
}
# What rmm_rs adds to RMM's __all__ lists (python/README.md says why).
_MR_EXTRAS = [
    "AlignedResourceAdaptor",
    "CudaAsyncManagedMemoryResource",
    "SimulatedMemoryResource",
    "get_current_device_resource_type",
]
RMM_RS_EXTRAS = {
    "rmm": ["CaptureError", "CUDAError", "ConfigurationError", "DEFAULT_STREAM", "DriverUnavailableError",
            "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM", "Stream", "device_count", "gpu_available", "graph",
            "gpu_unavailable_reason", "parse_bytes", "read_log", "replay_log", "statistics",
            "forensics", "OutOfMemoryReport", "add_oom_observer", "last_oom_report", "memory_snapshot",
            "remove_oom_observer", "write_oom_reports_to"],
    "rmm.mr": _MR_EXTRAS,
    "rmm.pylibrmm.memory_resource": _MR_EXTRAS,
}


def _rmm_rs_module(rmm_name):
    import importlib

    return importlib.import_module("rmm_rs" + rmm_name[len("rmm"):])


@pytest.mark.parametrize("name", sorted(RMM_ALL))
def test_names_mirror_rmm(name):
    module = _rmm_rs_module(name)
    expected = set(RMM_ALL[name]) | set(RMM_RS_EXTRAS.get(name, []))
    assert sorted(module.__all__) == sorted(expected)
    assert len(module.__all__) == len(set(module.__all__))
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.{attr}"


@pytest.mark.parametrize("name", sorted(RMM_NAMES))
def test_modules_without_all_have_rmms_names(name):
    module = _rmm_rs_module(name)
    missing = [attr for attr in RMM_NAMES[name] if not hasattr(module, attr)]
    assert missing == []


def test_experimental_module_as_in_rmm():
    from rmm_rs.mr.experimental import CudaAsyncManagedMemoryResource

    assert CudaAsyncManagedMemoryResource is mr.CudaAsyncManagedMemoryResource
    assert mr.experimental.CudaAsyncManagedMemoryResource is mr.CudaAsyncManagedMemoryResource
    assert issubclass(CudaAsyncManagedMemoryResource, mr.DeviceMemoryResource)


@pytest.mark.skipif(GPU, reason="checks the no-GPU behaviour")
def test_no_gpu_is_said_clearly():
    reason = rmm_rs.gpu_unavailable_reason()
    assert reason
    assert not rmm_rs.gpu_available()
    assert rmm_rs.device_count() == 0
    for cls in [
        mr.CudaMemoryResource,
        mr.ManagedMemoryResource,
        mr.PinnedHostMemoryResource,
        mr.CudaAsyncMemoryResource,
        mr.CudaAsyncManagedMemoryResource,
        mr.experimental.CudaAsyncManagedMemoryResource,
    ]:
        with pytest.raises(rmm_rs.DriverUnavailableError) as e:
            cls()
        assert "GPU" in str(e.value) or "libcuda" in str(e.value)
    # The default resource is the cuda one: allocating says there is no GPU.
    with pytest.raises(rmm_rs.DriverUnavailableError):
        rmm.DeviceBuffer(size=10)
    with pytest.raises(rmm_rs.DriverUnavailableError):
        mr.available_device_memory()
    with pytest.raises(rmm_rs.DriverUnavailableError):
        rmm.Stream()
    with pytest.raises(rmm_rs.DriverUnavailableError):
        rmm.reinitialize(pool_allocator=True)
    assert issubclass(rmm_rs.DriverUnavailableError, RuntimeError)


@pytest.mark.skipif(GPU, reason="checks the no-GPU behaviour")
def test_system_resources_need_a_gpu_with_pageable_access():
    # Without a GPU: the driver error (an RMMError); on a GPU without
    # pageable memory access the GPU tests check the message.
    with pytest.raises(rmm_rs.DriverUnavailableError):
        mr.SystemMemoryResource()
    with pytest.raises(rmm_rs.DriverUnavailableError):
        mr.SamHeadroomMemoryResource("1GiB")
    assert issubclass(rmm_rs.DriverUnavailableError, rmm_rs.RMMError)


def test_system_memory_without_gpu():
    sysmr = mr.SystemMemoryResource(without_gpu=True)
    assert sysmr.is_simulated
    p = sysmr.allocate(1000)
    assert p % 256 == 0 and sysmr.allocated_bytes() == 1000
    sysmr.deallocate(p, 1000)
    assert sysmr.allocated_bytes() == 0
    # A pool over it, as over any upstream.
    pool = mr.PoolMemoryResource(sysmr, initial_pool_size="1MiB")
    q = pool.allocate(4096)
    pool.deallocate(q, 4096)


def test_sam_headroom_over_a_simulated_device():
    device = mr.SimulatedMemoryResource("10MiB")
    sam = mr.SamHeadroomMemoryResource("4MiB", simulated_device=device)
    assert sam.headroom == 4 << 20 and sam.is_simulated
    a = sam.allocate(4 << 20)
    b = sam.allocate(4 << 20)
    # 6 MiB above the headroom: all of the first, half of the second.
    assert sam.device_bytes() == 6 << 20
    assert device.allocated_bytes() == 6 << 20
    sam.deallocate(a, 4 << 20)
    sam.deallocate(b, 4 << 20)
    assert sam.device_bytes() == 0 and sam.allocated_bytes() == 0
    with pytest.raises(TypeError, match="SimulatedMemoryResource"):
        mr.SamHeadroomMemoryResource(0, simulated_device=mr.CudaMemoryResource)


def test_graph_module_without_a_capture():
    """rmm_rs.graph on any machine: the default streams never capture (no
    driver call), the detection switch, CaptureError's place among the
    exceptions."""
    from rmm_rs import graph

    assert rmm_rs.CaptureError is graph.CaptureError
    assert issubclass(graph.CaptureError, rmm_rs.RMMError)
    assert issubclass(graph.CaptureError, RuntimeError)
    assert graph.capture_status() == graph.CaptureStatus("none", None)
    assert graph.capture_status(rmm_rs.LEGACY_DEFAULT_STREAM).state == "none"
    assert not graph.is_capturing(rmm_rs.DEFAULT_STREAM)
    with pytest.raises(TypeError):
        graph.capture_status("not a stream")
    if not GPU:
        # The per-thread default stream can be captured: the driver is asked.
        with pytest.raises(rmm_rs.DriverUnavailableError):
            graph.capture_status(rmm_rs.PER_THREAD_DEFAULT_STREAM)
    assert graph.get_capture_detection() == "driver"
    try:
        graph.set_capture_detection("registered")
        assert graph.get_capture_detection() == "registered"
    finally:
        graph.set_capture_detection("driver")
    assert graph.get_capture_detection() == "driver"
    with pytest.raises(ValueError, match="'driver' or 'registered'"):
        graph.set_capture_detection("sometimes")


def test_graph_memory_without_a_capture(sim):
    """Nothing captured: no private pool anywhere in a stack."""
    from rmm_rs import graph

    pool = mr.PoolMemoryResource(mr.StatisticsResourceAdaptor(sim), initial_pool_size="1MiB")
    for r in (sim, pool):
        report = r.graph_memory()
        assert report is None or all(report[k] == 0 for k in ("pools", "reserved_bytes", "live_bytes", "bad_frees"))
    mr.set_current_device_resource(pool)
    assert graph.graph_memory() == pool.graph_memory()
