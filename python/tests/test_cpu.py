"""What runs without a GPU: the package, argument handling, every resource
and adaptor over the simulated resource, the registry, reinitialize,
statistics and the profiler, logging to a file and replaying it."""

import gc
import os
import pickle
import subprocess
import sys
import threading

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


# --- sizes and arguments ------------------------------------------------------


@pytest.mark.parametrize(
    "text,value",
    [
        ("1GiB", 1 << 30),
        ("512MiB", 512 << 20),
        ("100MB", 100_000_000),
        ("4KiB", 4096),
        ("1.5kB", 1500),
        (" 2 gib ", 2 << 30),
        ("4096", 4096),
        ("1e6", 1_000_000),
        ("10B", 10),
        (12345, 12345),
    ],
)
def test_size_strings(text, value):
    assert rmm.parse_bytes(text) == value


@pytest.mark.parametrize("bad", ["", "MiB", "1 parsec", "-1MiB", "1..2GB"])
def test_bad_size_strings(bad):
    with pytest.raises(ValueError):
        rmm.parse_bytes(bad)


@pytest.mark.parametrize("bad", [1.5, None, [1], True])
def test_bad_size_types(bad):
    with pytest.raises(TypeError):
        rmm.parse_bytes(bad)


def test_sizes_everywhere(sim):
    pool = mr.PoolMemoryResource(sim, initial_pool_size="1MiB", maximum_pool_size="4MiB")
    assert pool.pool_size() == 1 << 20
    assert pool.maximum_pool_size() == 4 << 20
    b = rmm.DeviceBuffer(size="1KiB", mr=pool)
    assert b.size == 1024
    lim = mr.LimitingResourceAdaptor(sim, allocation_limit="1MB")
    assert lim.get_allocation_limit() == 1_000_000


def test_argument_errors(sim):
    with pytest.raises(ValueError):
        rmm.DeviceBuffer(size=-1, mr=sim)
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=10, mr="pool")
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=10, mr=sim, stream=object())
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(size=10, mr=sim, stream=42)
    with pytest.raises(TypeError):
        rmm.DeviceBuffer(10)  # keyword-only, as in RMM
    with pytest.raises(ValueError):
        sim.allocate(-5)
    with pytest.raises(TypeError):
        mr.PoolMemoryResource("not a resource")
    with pytest.raises(ValueError, match="multiple of 256"):
        mr.PoolMemoryResource(sim, initial_pool_size=1000)
    with pytest.raises(ValueError, match="exceeds"):
        mr.PoolMemoryResource(sim, initial_pool_size="2MiB", maximum_pool_size="1MiB")
    with pytest.raises(ValueError):
        mr.FixedSizeMemoryResource(sim, block_size=0)
    with pytest.raises(ValueError):
        mr.FixedSizeMemoryResource(sim, blocks_to_preallocate=0)
    with pytest.raises(TypeError):
        mr.CallbackMemoryResource(1, 2)
    with pytest.raises(TypeError):
        mr.FailureCallbackResourceAdaptor(sim, "nope")
    with pytest.raises(TypeError):
        mr.set_current_device_resource(object())
    with pytest.raises(ValueError):
        mr.set_per_device_resource(-1, sim)
    with pytest.raises(TypeError):
        mr.get_per_device_resource("0")
    with pytest.raises(ValueError):
        mr.BinningMemoryResource(sim, 12, 10)
    with pytest.raises(ValueError):
        mr.AlignedResourceAdaptor(sim, alignment=48)


def test_closed_resource_is_a_value_error():
    bare = mr.DeviceMemoryResource()
    with pytest.raises(ValueError, match="holds no resource"):
        bare.allocate(10)
    with pytest.raises(ValueError, match="holds no resource"):
        mr.PoolMemoryResource(bare)
    with pytest.raises(ValueError):
        rmm.DeviceBuffer(size=10, mr=bare)
    with pytest.raises(ValueError):
        mr.set_current_device_resource(bare)


# --- streams ----------------------------------------------------------------


class FakeStream:
    """A stream-like object (the simulated resource never touches streams)."""

    def __init__(self, handle):
        self.handle_value = handle

    def __cuda_stream__(self):
        return (0, self.handle_value)


def test_streams_over_simulated(sim):
    from rmm_rs.pylibrmm.stream import DEFAULT_STREAM, Stream

    assert DEFAULT_STREAM.is_default()
    assert rmm.DEFAULT_STREAM.__cuda_stream__() == (0, 0)
    assert rmm.PER_THREAD_DEFAULT_STREAM.ptr == 2
    fake = FakeStream(0x1234)
    s = Stream(fake)
    assert s.__cuda_stream__() == (0, 0x1234)
    assert Stream(s) == s
    assert s != DEFAULT_STREAM
    b = rmm.DeviceBuffer(size=100, stream=fake, mr=sim)
    assert b.stream.ptr == 0x1234
    p = sim.allocate(100, stream=fake)
    sim.deallocate(p, 100, stream=s)

    class TorchLike:
        cuda_stream = 0x99

    class CupyLike:
        ptr = 0x77

    assert Stream(TorchLike()).ptr == 0x99
    assert Stream(CupyLike()).ptr == 0x77
    with pytest.raises(TypeError):
        Stream("stream")


# --- DeviceBuffer over the simulated resource ---------------------------------


def test_device_buffer_bookkeeping(sim):
    b = rmm.DeviceBuffer(size=100, mr=sim)
    assert (b.size, b.nbytes, len(b), b.capacity()) == (100, 100, 100, 100)
    assert b.ptr != 0 and b.ptr % 256 == 0
    assert b.mr is sim
    b.resize(50)
    assert (b.size, b.capacity()) == (50, 100)
    b.resize(300)
    assert (b.size, b.capacity()) == (300, 300)
    b.reserve(1000)
    assert (b.size, b.capacity()) == (300, 1000)
    b.reserve(10)
    assert b.capacity() == 1000
    assert sim.live_allocations() == 1
    del b
    gc.collect()
    assert sim.live_allocations() == 0
    empty = rmm.DeviceBuffer(mr=sim)
    assert empty.size == 0 and empty.ptr == 0
    assert empty.tobytes() == b""
    assert "DeviceBuffer" in repr(empty)


def test_simulated_buffers_have_no_contents(sim):
    b = rmm.DeviceBuffer(size=16, mr=sim)
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        b.tobytes()
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        b.copy_from_host(b"x" * 16)
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        rmm.DeviceBuffer.to_device(b"abc", mr=sim)
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(b)
    assert not hasattr(b, "__cuda_array_interface__")
    with pytest.raises(ValueError, match="do not fit"):
        b.copy_from_host(b"x" * 17)
    b.prefetch()  # nothing to do for simulated memory


def test_copy_to_host_default_target_is_bytes(sim):
    # RMM returns a uint8 NumPy array (numpy.empty's default dtype is float64;
    # the GPU run caught that). A zero-size buffer needs no contents.
    np = pytest.importorskip("numpy")
    arr = rmm.DeviceBuffer(size=0, mr=sim).copy_to_host()
    assert isinstance(arr, np.ndarray)
    assert arr.dtype == np.uint8 and arr.shape == (0,)


def test_buffer_uses_the_current_resource(sim):
    mr.set_current_device_resource(sim)
    assert mr.get_current_device_resource() is sim
    assert mr.get_current_device_resource_type() is mr.SimulatedMemoryResource
    b = rmm.DeviceBuffer(size=1000)
    assert sim.live_allocations() == 1
    assert b.mr is sim
    assert rmm.is_initialized()


def test_buffers_keep_their_resource_alive():
    sim = mr.SimulatedMemoryResource("1MiB")
    pool = mr.PoolMemoryResource(sim, initial_pool_size="256KiB")
    b = rmm.DeviceBuffer(size=1000, mr=pool)
    del pool
    gc.collect()
    assert b.mr.pool_size() == 256 << 10  # still there
    b.resize(5000)
    del b
    gc.collect()
    # The pool went away with the buffer and gave its chunk back.
    assert sim.live_allocations() == 0


# --- resources and adaptors ---------------------------------------------------


def test_raw_allocate_deallocate_is_checked(sim):
    p = sim.allocate(1000)
    assert p % 256 == 0
    assert sim.allocated_bytes() == 1024
    with pytest.raises(ValueError, match="allocated with 1000 bytes"):
        sim.deallocate(p, 999)
    sim.deallocate(p, 1000)
    with pytest.raises(ValueError, match="already freed"):
        sim.deallocate(p, 1000)
    with pytest.raises(ValueError):
        sim.deallocate(0xDEAD00, 10)
    assert sim.allocate(0) == 0
    sim.deallocate(0, 0)
    assert sim.bad_frees() == 0


def test_out_of_memory_is_memory_error():
    sim = mr.SimulatedMemoryResource("1MiB")
    with pytest.raises(MemoryError, match="out_of_memory"):
        sim.allocate("2MiB")
    with pytest.raises(MemoryError, match="out_of_memory"):
        rmm.DeviceBuffer(size="2MiB", mr=sim)
    pool = mr.PoolMemoryResource(sim, initial_pool_size=0, maximum_pool_size="512KiB")
    with pytest.raises(MemoryError, match="out_of_memory"):
        pool.allocate("1MiB")
    b = rmm.DeviceBuffer(size=1000, mr=pool)
    with pytest.raises(MemoryError, match="out_of_memory"):
        b.resize("1MiB")
    assert b.size == 1000  # unchanged


def test_pool(sim):
    pool = mr.PoolMemoryResource(sim, initial_pool_size="64MiB", maximum_pool_size="128MiB")
    assert pool.upstream_mr is sim
    assert pool.get_upstream() is sim
    assert pool.pool_size() == 64 << 20
    ptrs = [pool.allocate(1 << 20) for _ in range(100)]
    assert len(set(ptrs)) == 100
    assert 100 << 20 <= pool.pool_size() <= 128 << 20
    for p in ptrs:
        pool.deallocate(p, 1 << 20)
    assert pool.free_bytes() == pool.pool_size()
    # Default initial size over a simulated device: half of it.
    half = mr.PoolMemoryResource(mr.SimulatedMemoryResource("64MiB"))
    assert half.pool_size() == 32 << 20
    assert pool.is_simulated


def test_fixed_size(sim):
    fs = mr.FixedSizeMemoryResource(sim, block_size="64KiB", blocks_to_preallocate=4)
    assert fs.block_size == 64 << 10
    ptrs = [fs.allocate(1000) for _ in range(10)]
    assert len(set(ptrs)) == 10
    for p in ptrs:
        fs.deallocate(p, 1000)
    with pytest.raises(MemoryError):
        fs.allocate("1MiB")


def test_binning(sim):
    bn = mr.BinningMemoryResource(sim, 10, 12)
    assert bn.bin_sizes == [1024, 2048, 4096]
    # As RMM's, bin_mrs lists only the resources given to add_bin.
    assert bn.bin_mrs == []
    custom = mr.PoolMemoryResource(sim, initial_pool_size="1MiB")
    bn.add_bin("64KiB", custom)
    assert bn.bin_sizes[-1] == 64 << 10
    assert bn.bin_mrs[-1] is custom
    small = bn.allocate(1500)
    mid = bn.allocate(30000)
    big = bn.allocate(1 << 20)
    assert custom.free_bytes() < custom.pool_size()
    for p, n in [(small, 1500), (mid, 30000), (big, 1 << 20)]:
        bn.deallocate(p, n)
    # Bins are added before use: a resource in use refuses.
    b = rmm.DeviceBuffer(size=10, mr=bn)
    with pytest.raises(rmm_rs.RMMError, match="already in use"):
        bn.add_bin(1 << 15)
    del b
    gc.collect()
    bn.add_bin(1 << 15)
    assert 1 << 15 in bn.bin_sizes
    empty = mr.BinningMemoryResource(sim)
    assert empty.bin_mrs == []
    empty.deallocate(empty.allocate(100), 100)


def test_arena(sim):
    arena = mr.ArenaMemoryResource(sim, arena_size="64MiB", dump_log_on_failure=True)
    assert arena.arena_size() == 64 << 20
    ptrs = [arena.allocate(n) for n in (100, 5000, 1 << 20, 3 << 20)]
    for p, n in zip(ptrs, (100, 5000, 1 << 20, 3 << 20)):
        arena.deallocate(p, n)
    arena.defragment()
    with pytest.raises(MemoryError):
        arena.allocate("128MiB")


def test_limiting(sim):
    lim = mr.LimitingResourceAdaptor(sim, allocation_limit=4096)
    p = lim.allocate(1000)
    assert lim.get_allocated_bytes() == 1024
    with pytest.raises(MemoryError, match="out_of_memory"):
        lim.allocate(4000)
    lim.deallocate(p, 1000)
    assert lim.get_allocated_bytes() == 0
    assert lim.upstream_mr is sim


def test_statistics_adaptor(sim):
    st = mr.StatisticsResourceAdaptor(sim)
    a = st.allocate(1000)
    st.push_counters()
    b = st.allocate(500)
    assert st.allocation_counts["current_bytes"] == 500
    st.deallocate(b, 500)
    inner = st.pop_counters()
    assert inner["peak_bytes"] == 500 and inner["total_count"] == 1
    counts = st.allocation_counts
    assert counts == {
        "current_bytes": 1000,
        "current_count": 1,
        "peak_bytes": 1500,
        "peak_count": 2,
        "total_bytes": 1500,
        "total_count": 2,
    }
    st.deallocate(a, 1000)
    with pytest.raises(IndexError):
        st.pop_counters()


def test_tracking(sim):
    tr = mr.TrackingResourceAdaptor(sim, capture_stacks=True)
    p = tr.allocate(1234)
    assert tr.get_allocated_bytes() == 1234
    text = tr.get_outstanding_allocations_str()
    assert "1234" in text
    tr.log_outstanding_allocations()
    tr.deallocate(p, 1234)
    assert tr.get_allocated_bytes() == 0


def test_failure_callback_retries(sim):
    small = mr.SimulatedMemoryResource("1MiB")
    holder = [small.allocate("768KiB")]
    calls = []

    def on_oom(nbytes):
        calls.append(nbytes)
        if holder:
            small.deallocate(holder.pop(), 768 << 10)
            return True
        return False

    fc = mr.FailureCallbackResourceAdaptor(small, on_oom)
    p = fc.allocate("512KiB")
    assert calls == [512 << 10]
    with pytest.raises(MemoryError):
        fc.allocate("900KiB")
    assert len(calls) == 2
    fc.deallocate(p, 512 << 10)

    def raises(nbytes):
        raise RuntimeError("boom")

    # As in RMM, the callback's exception ends the allocation (as RuntimeError).
    fc2 = mr.FailureCallbackResourceAdaptor(mr.SimulatedMemoryResource(1024), raises)
    with pytest.raises(RuntimeError, match="boom"):
        fc2.allocate(4096)


def test_callback_resource(sim):
    log = []

    def alloc(nbytes, stream):
        p = sim.allocate(nbytes, stream)
        log.append(("a", p, nbytes, stream.ptr))
        return p

    def dealloc(ptr, nbytes, stream):
        log.append(("d", ptr, nbytes))
        sim.deallocate(ptr, nbytes, stream)

    cb = mr.CallbackMemoryResource(alloc, dealloc)
    ptr = cb.allocate(300)
    cb.deallocate(ptr, 300)
    assert log == [("a", ptr, 300, 0), ("d", ptr, 300)]
    # Under a pool, the callbacks run when the pool grows.
    cb = mr.CallbackMemoryResource(alloc, dealloc, simulated=True)
    pool = mr.PoolMemoryResource(cb, initial_pool_size="1MiB")
    assert log[-1] == ("a", log[-1][1], 1 << 20, 0)
    pool.deallocate(pool.allocate(100), 100)
    b = rmm.DeviceBuffer(size=300, mr=cb)
    ptr = b.ptr
    del b
    gc.collect()
    assert log[-2:] == [("a", ptr, 300, 0), ("d", ptr, 300)]

    def oom(nbytes, stream):
        raise MemoryError("no room")

    # RMM's translation of the callback's exception: MemoryError stays,
    # anything else becomes RuntimeError, both with the exception's text.
    with pytest.raises(MemoryError, match="no room"):
        mr.CallbackMemoryResource(oom, dealloc).allocate(10)

    def broken(nbytes, stream):
        raise KeyError("x")

    with pytest.raises(RuntimeError, match="'x'"):
        mr.CallbackMemoryResource(broken, dealloc).allocate(10)


def test_aligned_and_prefetch_over_simulated(sim):
    al = mr.AlignedResourceAdaptor(sim, alignment=4096, alignment_threshold=0)
    p = al.allocate(100)
    assert p % 4096 == 0
    al.deallocate(p, 100)
    pf = mr.PrefetchResourceAdaptor(sim)
    pf.deallocate(pf.allocate(100), 100)


def test_stacks_and_equality(sim):
    stack = mr.StatisticsResourceAdaptor(
        mr.TrackingResourceAdaptor(mr.PoolMemoryResource(sim, initial_pool_size="1MiB"))
    )
    assert isinstance(stack.upstream_mr.upstream_mr, mr.PoolMemoryResource)
    assert stack.upstream_mr.upstream_mr.upstream_mr is sim
    assert sim.is_equal(sim)
    assert not sim.is_equal(mr.SimulatedMemoryResource(10))
    for cls in (mr.PoolMemoryResource, mr.StatisticsResourceAdaptor, mr.SimulatedMemoryResource):
        assert issubclass(cls, mr.DeviceMemoryResource)


def test_threads_share_a_pool(sim):
    pool = mr.PoolMemoryResource(sim, initial_pool_size="16MiB")
    st = mr.StatisticsResourceAdaptor(pool)
    errors = []

    def work():
        try:
            for i in range(200):
                b = rmm.DeviceBuffer(size=(i % 17 + 1) * 1000, mr=st)
                b.resize(b.size * 2)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    gc.collect()
    assert st.allocation_counts["current_count"] == 0
    assert st.allocation_counts["total_count"] == 4 * 200 * 2


# --- registry, reinitialize -------------------------------------------------


def test_per_device_registry(sim):
    other = mr.SimulatedMemoryResource("1MiB")
    mr.set_per_device_resource(3, other)
    assert mr.get_per_device_resource(3) is other
    mr.set_current_device_resource(sim)
    assert mr.get_current_device_resource() is sim
    assert mr.get_per_device_resource(3) is other
    # A device never set has the default cuda resource.
    assert isinstance(mr.get_per_device_resource(5), mr.CudaMemoryResource)


def test_reinitialize_simulated(tmp_path):
    name = tmp_path / "rmm_log.csv"
    rmm.reinitialize(
        pool_allocator=True,
        initial_pool_size="2MiB",
        maximum_pool_size="8MiB",
        devices=[0, 1],
        logging=True,
        log_file_name=name,
        simulated_memory="64MiB",
    )
    assert rmm.is_initialized()
    for dev in (0, 1):
        res = mr.get_per_device_resource(dev)
        assert isinstance(res, mr.LoggingResourceAdaptor)
        assert isinstance(res.upstream_mr, mr.PoolMemoryResource)
        assert res.upstream_mr.pool_size() == 2 << 20
        assert res.get_file_name() == str(tmp_path / f"rmm_log.dev{dev}.csv")
    files = mr.get_log_filenames()
    assert files[1] == str(tmp_path / "rmm_log.dev1.csv")
    b = rmm.DeviceBuffer(size=1000)
    del b
    mr.get_current_device_resource().flush()
    lines = (tmp_path / "rmm_log.dev0.csv").read_text().splitlines()
    assert lines[0] == "Thread,Time,Action,Pointer,Size,Stream"
    assert [line.split(",")[2] for line in lines[1:]] == ["allocate", "free"]
    rmm.reinitialize(simulated_memory="1MiB")
    assert isinstance(mr.get_current_device_resource(), mr.SimulatedMemoryResource)


def test_reinitialize_arguments():
    with pytest.raises(TypeError):
        rmm.reinitialize(devices="0", simulated_memory=1 << 20)
    with pytest.raises(ValueError):
        rmm.reinitialize(devices=[-1], simulated_memory=1 << 20)
    with pytest.raises(ValueError):
        rmm.reinitialize(devices=[], simulated_memory=1 << 20)
    with pytest.raises(ValueError):
        rmm.reinitialize(devices=[0, 0], simulated_memory=1 << 20)
    env = os.environ.pop("RMM_LOG_FILE", None)
    try:
        with pytest.raises(ValueError, match="RMM_LOG_FILE"):
            rmm.reinitialize(logging=True, simulated_memory=1 << 20)
    finally:
        if env is not None:
            os.environ["RMM_LOG_FILE"] = env
    # Pool sizes without a pool are ignored, as in RMM (not even parsed).
    rmm.reinitialize(initial_pool_size="1 parsec", simulated_memory=1 << 20)
    assert isinstance(mr.get_current_device_resource(), mr.SimulatedMemoryResource)
    with pytest.raises(ValueError, match="Could not parse 1 parsec as a byte specification"):
        rmm.reinitialize(pool_allocator=True, initial_pool_size="1 parsec", simulated_memory=1 << 20)


# --- logging to a file, reading and replaying it --------------------------------


def test_logging_adaptor_and_replay(tmp_path, sim):
    log_mr = mr.LoggingResourceAdaptor(sim, log_file_name=str(tmp_path / "events.csv"))
    # RMM's naming: the current device before the extension.
    path = tmp_path / f"events.dev{mr._current_device()}.csv"
    assert log_mr.get_file_name() == str(path)
    bufs = [rmm.DeviceBuffer(size=n, mr=log_mr) for n in (1000, 2000, 3000)]
    del bufs[1]
    with pytest.raises(MemoryError):
        log_mr.allocate("2GiB")
    del bufs
    gc.collect()
    log_mr.flush()
    events = rmm.read_log(path)
    actions = [e[1] for e in events]
    assert actions.count("allocate") == 3
    assert actions.count("free") == 3
    assert actions.count("allocate failure") == 1
    assert sorted(e[3] for e in events if e[1] == "allocate") == [1000, 2000, 3000]
    # Replay the run against a pool over another simulated device.
    target = mr.StatisticsResourceAdaptor(
        mr.PoolMemoryResource(mr.SimulatedMemoryResource("16MiB"), initial_pool_size="1MiB")
    )
    report = rmm.replay_log(path, target)
    assert report["events"] == 7
    assert report["failed_allocations"] == 0
    assert report["logged_failures"] == 1
    assert report["peak_bytes"] == 6000
    assert target.allocation_counts["total_count"] == 3
    assert target.allocation_counts["current_count"] == 0
    assert "events:" in report["report"]
    # Replaying against a device too small fails allocations, not the process.
    tiny = rmm.replay_log(path, mr.SimulatedMemoryResource(2048))
    assert tiny["failed_allocations"] >= 1


def test_logging_adaptor_env(tmp_path, sim, monkeypatch):
    monkeypatch.setenv("RMM_LOG_FILE", str(tmp_path / "env.csv"))
    log_mr = mr.LoggingResourceAdaptor(sim)
    assert log_mr.get_file_name() == str(tmp_path / f"env.dev{mr._current_device()}.csv")
    monkeypatch.delenv("RMM_LOG_FILE")
    with pytest.raises(ValueError, match="RMM_LOG_FILE"):
        mr.LoggingResourceAdaptor(sim)
    with pytest.raises(OSError):
        mr.LoggingResourceAdaptor(sim, log_file_name=str(tmp_path / "no" / "such" / "dir.csv"))


def test_bad_log_is_value_error(tmp_path, sim):
    bad = tmp_path / "bad.csv"
    bad.write_text("Thread,Time,Action,Pointer,Size,Stream\n1,x,explode,0x1,10,0x0\n")
    with pytest.raises(ValueError, match="line"):
        rmm.read_log(bad)
    with pytest.raises(OSError):
        rmm.replay_log(tmp_path / "missing.csv", sim)


def test_enable_disable_logging(tmp_path, sim):
    mr.set_current_device_resource(sim)
    mr.enable_logging(log_file_name=tmp_path / "all.csv")
    res = mr.get_current_device_resource()
    assert isinstance(res, mr.LoggingResourceAdaptor)
    assert res.upstream_mr is sim
    mr.enable_logging(log_file_name=tmp_path / "again.csv")  # already logging: unchanged
    assert mr.get_current_device_resource() is res
    dev = rmm_rs._lib._current_device()
    assert mr.get_log_filenames()[dev] == str(tmp_path / f"all.dev{dev}.csv")
    rmm.DeviceBuffer(size=10)
    mr.disable_logging()
    assert mr.get_current_device_resource() is sim
    assert mr.get_log_filenames()[dev] is None
    text = (tmp_path / f"all.dev{dev}.csv").read_text()
    assert text.count("\n") == 3


# --- statistics module and profiler --------------------------------------------


def test_statistics_module(sim):
    mr.set_current_device_resource(sim)
    assert rmm.statistics.get_statistics() is None
    assert rmm.statistics.push_statistics() is None
    with rmm.statistics.statistics():
        b = rmm.DeviceBuffer(size=1000)
        s = rmm.statistics.get_statistics()
        assert (s.current_bytes, s.current_count, s.total_bytes) == (1000, 1, 1000)
        with rmm.statistics.statistics():
            c = rmm.DeviceBuffer(size=500)
            assert rmm.statistics.get_statistics().current_bytes == 500
            del c
        s = rmm.statistics.get_statistics()
        assert (s.current_bytes, s.peak_bytes, s.total_bytes) == (1000, 1500, 1500)
        del b
    assert mr.get_current_device_resource() is sim
    rmm.statistics.enable_statistics()
    st = mr.get_current_device_resource()
    assert isinstance(st, mr.StatisticsResourceAdaptor)
    rmm.statistics.enable_statistics()
    assert mr.get_current_device_resource() is st
    before = rmm.statistics.push_statistics()
    assert before.current_bytes == 0
    x = rmm.DeviceBuffer(size=256)
    assert rmm.statistics.pop_statistics().total_bytes == 256
    del x


def test_profiler(sim):
    mr.set_current_device_resource(sim)
    records = rmm.statistics.ProfilerRecords()

    @rmm.statistics.profiler(records=records)
    def f(n):
        return rmm.DeviceBuffer(size=n)

    f(100)  # statistics off: nothing recorded
    assert records.records == {}
    rmm.statistics.enable_statistics()
    f(1000)
    f(3000)
    with rmm.statistics.profiler(records=records, name="block"):
        a = rmm.DeviceBuffer(size=2000)
        b = rmm.DeviceBuffer(size=2000)
        del a, b
    with pytest.raises(ValueError, match="a name must be provided"):
        with rmm.statistics.profiler(records=records):
            rmm.DeviceBuffer(size=10)
    recs = records.records
    fname = next(k for k in recs if "(test_profiler.<locals>.f)" in k or k.endswith(".f)"))
    assert recs[fname].num_calls == 2
    assert recs[fname].memory_peak == 3000
    assert recs[fname].memory_total == 4000
    assert recs["block"].memory_peak == 4000
    assert any(k.startswith(__file__) for k in recs)
    report = records.report()
    assert "Memory Profiling" in report and "block" in report
    assert report.index("block") < report.index(fname)  # by peak, largest first
    with pytest.raises(AttributeError):
        records.report(ordered_by="bogus")
    assert isinstance(rmm.statistics.default_profiler_records, rmm.statistics.ProfilerRecords)


# --- logging levels ---------------------------------------------------------------


def test_logging_levels():
    old = rmm.get_logging_level()
    level = rmm.level_enum
    try:
        rmm.set_logging_level(level.trace)
        assert rmm.get_logging_level() == level.trace
        assert rmm.should_log(level.debug)
        rmm.set_logging_level(level.error)
        assert rmm.get_logging_level() is level.error
        assert not rmm.should_log(level.warn)
        assert rmm.should_log(level.critical)
        rmm.set_logging_level(level.off)
        assert not rmm.should_log(level.critical)
        rmm.flush_logger()
        # As in RMM, only level_enum members are levels.
        for bad in ("trace", "loud", 2, 9, 2.0):
            with pytest.raises(TypeError, match="level_enum"):
                rmm.set_logging_level(bad)
    finally:
        rmm.set_logging_level(old)


def test_debug_log_file(tmp_path):
    # A fresh process with RMM_DEBUG_LOG_FILE: errors of the allocators land there.
    log = tmp_path / "debug.log"
    code = (
        "import rmm_rs as rmm\n"
        "sim = rmm.mr.SimulatedMemoryResource('1MiB')\n"
        "pool = rmm.mr.PoolMemoryResource(sim, initial_pool_size=0, maximum_pool_size='512KiB')\n"
        "try:\n    pool.allocate('1MiB')\nexcept MemoryError:\n    pass\n"
        "rmm.flush_logger()\n"
    )
    env = dict(os.environ, RMM_DEBUG_LOG_FILE=str(log), RMM_DEBUG_LOG_LEVEL="debug")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = log.read_text()
    assert "out_of_memory" in text


# --- the PyTorch hook's C functions, without PyTorch ------------------------------


def test_torch_hook_symbols_without_torch(sim):
    """The exported C functions over the registry, called through ctypes,
    over a simulated resource set for a device."""
    import ctypes

    lib = ctypes.CDLL(rmm_rs._lib.__file__)
    lib.allocate.restype = ctypes.c_void_p
    lib.allocate.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    lib.deallocate.restype = None
    lib.deallocate.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    assert lib.allocate(-1, 0, None) is None  # a negative size: null, logged
    assert lib.allocate(16, -3, None) is None  # a negative device: null, logged
    lib.deallocate(None, 0, 0, None)
    mr.set_per_device_resource(7, sim)
    p = lib.allocate(1024, 7, None)
    assert p and p % 256 == 0
    assert sim.live_allocations() == 1
    lib.deallocate(p, 1024, 7, None)
    assert sim.live_allocations() == 0
    lib.deallocate(p, 1024, 7, None)  # a double free: refused and logged
    assert sim.bad_frees() == 1
    assert lib.allocate(0, 7, None) is None  # zero bytes: null, as in RMM
    small = mr.SimulatedMemoryResource(4096)
    mr.set_per_device_resource(7, small)
    assert lib.allocate(1 << 20, 7, None) is None  # out of memory: null, logged


HARNESS = r"""
#include <cstring>
#include <exception>
#include <new>
#include <sys/types.h>
// Calls a PyTorch-style allocate function and catches what it throws, so
// that no C++ exception reaches ctypes.
extern "C" int call_and_catch(void* fn, ssize_t size, int device, char* out, size_t cap, void** ptr) {
  using F = void* (*)(ssize_t, int, void*);
  out[0] = 0;
  try {
    *ptr = reinterpret_cast<F>(fn)(size, device, nullptr);
    return 0;
  } catch (const std::bad_alloc& e) {
    std::strncpy(out, e.what(), cap - 1);
    out[cap - 1] = 0;
    return 1;
  } catch (const std::exception& e) {
    std::strncpy(out, e.what(), cap - 1);
    out[cap - 1] = 0;
    return 2;
  } catch (...) {
    return 3;
  }
}
"""


def test_torch_allocate_throws_bad_alloc(tmp_path):
    """rmm_rs_torch_allocate (what rmm_torch_allocator uses) throws a C++
    std::bad_alloc carrying the message on failure: called here from a
    small C++ harness that catches it, as PyTorch does."""
    import ctypes
    import shutil

    gxx = shutil.which("g++") or shutil.which("c++")
    if gxx is None:
        pytest.skip("no C++ compiler for the harness")
    src = tmp_path / "harness.cpp"
    src.write_text(HARNESS)
    so = tmp_path / "harness.so"
    subprocess.run([gxx, "-shared", "-fPIC", "-O1", "-o", str(so), str(src)], check=True, timeout=120)
    harness = ctypes.CDLL(str(so))
    harness.call_and_catch.restype = ctypes.c_int
    harness.call_and_catch.argtypes = [
        ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib = ctypes.CDLL(rmm_rs._lib.__file__)
    fn = ctypes.cast(lib.rmm_rs_torch_allocate, ctypes.c_void_p).value
    free = lib.deallocate
    free.restype = None
    free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    small = mr.SimulatedMemoryResource("64KiB")
    mr.set_per_device_resource(7, small)
    out = ctypes.create_string_buffer(1024)
    ptr = ctypes.c_void_p()
    assert harness.call_and_catch(fn, 1024, 7, out, 1024, ctypes.byref(ptr)) == 0
    assert ptr.value and small.live_allocations() == 1
    free(ptr.value, 1024, 7, None)
    assert small.live_allocations() == 0
    assert harness.call_and_catch(fn, 1 << 20, 7, out, 1024, ctypes.byref(ptr)) == 1
    assert b"out_of_memory" in out.value, out.value
    assert harness.call_and_catch(fn, -1, 7, out, 1024, ctypes.byref(ptr)) == 1
    assert b"negative" in out.value
    # The interpreter is fine afterwards.
    assert rmm_rs.parse_bytes("1KiB") == 1024


def test_no_deadlock_between_gil_and_pool_lock():
    """Threads share a pool that grows through a Python callback (which
    needs the GIL) while others allocate and free: allocations, frees and
    buffer drops release the GIL, so nobody holds it while waiting for the
    pool's lock. Run in a subprocess so that a deadlock fails by timeout."""
    code = r"""
import threading, gc
import rmm_rs as rmm
sim = rmm.mr.SimulatedMemoryResource("64GiB")
def alloc(n, s):
    return sim.allocate(n, s)
def free(p, n, s):
    sim.deallocate(p, n, s)
cb = rmm.mr.CallbackMemoryResource(alloc, free, simulated=True)
pool = rmm.mr.PoolMemoryResource(cb, initial_pool_size=0)
errors = []
def work(seed):
    try:
        keep = []
        for i in range(400):
            n = ((i * 7919 + seed * 104729) % 4096 + 1) * 1024
            keep.append(rmm.DeviceBuffer(size=n, mr=pool))
            p = pool.allocate(n)
            pool.deallocate(p, n)
            if len(keep) > 8:
                keep.pop(0)
    except Exception as e:
        errors.append(e)
ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
for t in ts: t.start()
for t in ts: t.join()
assert not errors, errors
print("ok", pool.pool_size() > 0)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["ok", "True"]


def test_cupy_hook_glue_with_a_stand_in_cupy():
    """rmm_cupy_allocator's calls into CuPy, against a stand-in module
    (the real CuPy runs in test_cupy.py on the GPU)."""
    code = r"""
import sys, types
calls = {}
cupy = types.ModuleType("cupy")
cupy.cuda = types.SimpleNamespace()
class S:
    def __init__(self, ptr): self.ptr = ptr
current = [S(0)]
cupy.cuda.get_current_stream = lambda: current[0]
cupy.cuda.device = types.SimpleNamespace(get_device_id=lambda: 0)
class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id
cupy.cuda.UnownedMemory = UnownedMemory
class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset
cupy.cuda.memory = types.SimpleNamespace(MemoryPointer=MemoryPointer)
sys.modules["cupy"] = cupy
import rmm_rs as rmm
from rmm_rs.allocators.cupy import rmm_cupy_allocator
sim = rmm.mr.SimulatedMemoryResource("1GiB")
st = rmm.mr.StatisticsResourceAdaptor(sim)
rmm.mr.set_current_device_resource(st)
mp = rmm_cupy_allocator(1000)
assert mp.ptr == mp.mem.owner.ptr != 0 and mp.mem.size == 1000 and mp.mem.device_id == mp.mem.owner.device == 0
assert mp.mem.owner.stream == rmm.DEFAULT_STREAM
current[0] = S(0x5000)
mp2 = rmm_cupy_allocator(10)
assert mp2.mem.owner.stream.ptr == 0x5000
assert st.allocation_counts["current_count"] == 2
zero = rmm_cupy_allocator(0)
assert zero.ptr == 0 and zero.mem.device_id == 0
del mp, mp2, zero
import gc; gc.collect()
assert st.allocation_counts["current_count"] == 0
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


def test_torch_hook_glue_with_a_stand_in_torch():
    """rmm_torch_allocator is a CUDAPluggableAllocator over the extension
    library and two symbols it exports (stand-in torch module)."""
    code = r"""
import sys, types, ctypes
made = []
class CUDAPluggableAllocator:
    def __init__(self, path, alloc_fn_name, free_fn_name):
        made.append((path, alloc_fn_name, free_fn_name))
torch = types.ModuleType("torch")
torch.cuda = types.ModuleType("torch.cuda")
torch.cuda.memory = types.ModuleType("torch.cuda.memory")
torch.cuda.memory.CUDAPluggableAllocator = CUDAPluggableAllocator
torch.cuda.is_available = lambda: False
sys.modules.update({"torch": torch, "torch.cuda": torch.cuda, "torch.cuda.memory": torch.cuda.memory})
import rmm_rs
import rmm_rs.allocators.torch as hook
# As in RMM: None while PyTorch has no CUDA.
assert hook.rmm_torch_allocator is None and made == []
torch.cuda.is_available = lambda: True
import importlib
importlib.reload(hook)
rmm_torch_allocator = hook.rmm_torch_allocator
assert isinstance(rmm_torch_allocator, CUDAPluggableAllocator)
(path, a, f), = made
assert path == rmm_rs._lib.__file__
lib = ctypes.CDLL(path)
getattr(lib, a); getattr(lib, f)
print(a, f)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["rmm_rs_torch_allocate", "deallocate"]


def test_numba_plugin_glue_with_a_stand_in_numba():
    """RMMNumbaManager against a stand-in of Numba-CUDA's EMM interface
    (the real Numba runs in test_gpu.py when it can be imported)."""
    code = r"""
import sys, types, ctypes, gc
numba = types.ModuleType("numba")
cuda = types.ModuleType("numba.cuda")
cudadrv = types.ModuleType("numba.cuda.cudadrv")
driver = types.ModuleType("numba.cuda.cudadrv.driver")
class HostOnlyCUDAMemoryManager:
    def __init__(self, *args, context=None, **kwargs):
        self.context = context
    def initialize(self): pass
    def reset(self): pass
class MemoryPointer:
    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self.context, self.device_pointer, self.size, self.finalizer = context, pointer, size, finalizer
from collections import namedtuple
cuda.HostOnlyCUDAMemoryManager = HostOnlyCUDAMemoryManager
cuda.MemoryPointer = MemoryPointer
cuda.MemoryInfo = namedtuple("MemoryInfo", "free total")
cuda.IpcHandle = object
driver.USE_NV_BINDING = False
numba.cuda = cuda; cuda.cudadrv = cudadrv; cudadrv.driver = driver
sys.modules.update({"numba": numba, "numba.cuda": cuda, "numba.cuda.cudadrv": cudadrv,
                    "numba.cuda.cudadrv.driver": driver})
import rmm_rs as rmm
from rmm_rs.allocators import numba as plugin
assert plugin._numba_memory_manager is plugin.RMMNumbaManager
sim = rmm.mr.SimulatedMemoryResource("1GiB")
rmm.mr.set_current_device_resource(sim)
mgr = plugin.RMMNumbaManager(context="ctx")
mgr.initialize()
assert mgr.interface_version == 1
mp = mgr.memalloc(1000)
assert mp.context == "ctx" and mp.size == 1000
assert isinstance(mp.device_pointer, ctypes.c_uint64) and mp.device_pointer.value != 0
assert sim.live_allocations() == 1
mp.finalizer()
gc.collect()
assert sim.live_allocations() == 0
mp2 = mgr.memalloc(10)
mgr.reset()
gc.collect()
assert sim.live_allocations() == 0
try:
    mgr.get_memory_info()
    print("info")
except rmm.DriverUnavailableError:
    print("no GPU")
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "ok"


def test_logs_are_flushed_at_exit(tmp_path):
    """The registry keeps its resources for the whole process: a logging
    adaptor set there is flushed at exit (as RMM does with atexit)."""
    log = tmp_path / "exit.csv"
    code = (
        "import rmm_rs as rmm\n"
        f"rmm.reinitialize(logging=True, log_file_name={str(log)!r}, simulated_memory='1GiB')\n"
        "stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.get_current_device_resource())\n"
        "rmm.mr.set_current_device_resource(stats)\n"
        "keep = [rmm.DeviceBuffer(size=100) for _ in range(3)]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = (tmp_path / "exit.dev0.csv").read_text().splitlines()
    assert lines[0].startswith("Thread,Time,Action")
    assert sum(",allocate," in line for line in lines) == 3


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
