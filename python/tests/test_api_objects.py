"""RMM's Python objects as RMM 26.08 shapes them, from the native module
``rmm_rs._lib``: the statistics adaptor's ``Statistics``, ``UpstreamResourceAdaptor``,
the driver-pool view, stream flags and the stream pool, DeviceBuffer's copy
protocol and the raw-pointer copy functions, ``RMMError.errcode``, the
logging adaptor's file naming, the tracking adaptor's report and how
exceptions of Python callbacks leave an allocation.

Tests over the simulated resource run everywhere; ``@pytest.mark.gpu``
tests need a GPU (see conftest.py)."""

import copy
import pickle

import pytest

import rmm_rs
import rmm_rs as rmm
from rmm_rs import _lib, mr
from rmm_rs.statistics import Statistics

GPU = rmm_rs.gpu_available()


# --- Statistics ---------------------------------------------------------------


def test_statistics_adaptor_returns_statistics(sim):
    st = mr.StatisticsResourceAdaptor(sim)
    a = st.allocate(1000)
    counts = st.allocation_counts
    assert type(counts) is Statistics
    assert counts == Statistics(
        current_bytes=1000, current_count=1, peak_bytes=1000, peak_count=1, total_bytes=1000, total_count=1
    )
    assert counts.current_bytes == 1000 and counts["current_count"] == 1
    below = st.push_counters()
    assert type(below) is Statistics and below.total_bytes == 1000
    st.deallocate(a, 1000)
    popped = st.pop_counters()
    assert type(popped) is Statistics
    assert (popped.current_bytes, popped.current_count) == (-1000, -1)
    assert st.allocation_counts.peak_bytes == 1000
    with pytest.raises(IndexError, match="cannot pop the last counter pair"):
        st.pop_counters()


# --- UpstreamResourceAdaptor ----------------------------------------------------

ADAPTORS = [
    lambda up, d: mr.PoolMemoryResource(up, initial_pool_size="1MiB"),
    lambda up, d: mr.FixedSizeMemoryResource(up, block_size=4096, blocks_to_preallocate=2),
    lambda up, d: mr.ArenaMemoryResource(up, arena_size="4MiB"),
    lambda up, d: mr.BinningMemoryResource(up),
    lambda up, d: mr.LimitingResourceAdaptor(up, 1 << 20),
    lambda up, d: mr.LoggingResourceAdaptor(up, log_file_name=d / "log.csv"),
    lambda up, d: mr.StatisticsResourceAdaptor(up),
    lambda up, d: mr.TrackingResourceAdaptor(up),
    lambda up, d: mr.FailureCallbackResourceAdaptor(up, lambda n: False),
    lambda up, d: mr.PrefetchResourceAdaptor(up),
    lambda up, d: mr.AlignedResourceAdaptor(up),
]


@pytest.mark.parametrize("make", ADAPTORS)
def test_adaptors_are_upstream_resource_adaptors(sim, make, tmp_path):
    res = make(sim, tmp_path)
    assert isinstance(res, _lib.UpstreamResourceAdaptor)
    assert isinstance(res, mr.DeviceMemoryResource)
    assert res.upstream_mr is sim
    assert res.get_upstream() is sim
    res.deallocate(res.allocate(256), 256)
    with pytest.raises(TypeError, match="must not be None"):
        make(None, tmp_path)


def test_base_resources_are_not_upstream_adaptors(sim):
    assert not isinstance(sim, _lib.UpstreamResourceAdaptor)
    assert sim.upstream_mr is None


def test_upstream_resource_adaptor_built_directly(sim):
    bare = _lib.UpstreamResourceAdaptor(sim, 1, 2, extra=3)
    assert bare.upstream_mr is sim and bare.get_upstream() is sim
    with pytest.raises(ValueError, match="holds no resource"):
        bare.allocate(256)
    with pytest.raises(TypeError, match="must not be None"):
        _lib.UpstreamResourceAdaptor(None)
    with pytest.raises(TypeError, match="DeviceMemoryResource"):
        _lib.UpstreamResourceAdaptor("not a resource")


def test_binning_lists_given_bin_resources(sim):
    bn = mr.BinningMemoryResource(sim, 10, 11)
    assert bn.bin_mrs == []
    fixed = mr.FixedSizeMemoryResource(sim, block_size=1024, blocks_to_preallocate=2)
    bn.add_bin(1024, fixed)  # the size exists already: kept as it was, as in RMM
    big = mr.PoolMemoryResource(sim, initial_pool_size="1MiB")
    bn.add_bin(1 << 16, big)
    assert bn.bin_mrs == [fixed, big]
    assert bn.bin_sizes == [1024, 2048, 1 << 16]
    bn.deallocate(bn.allocate(1000), 1000)
    bn.deallocate(bn.allocate(40000), 40000)


# --- tracking ---------------------------------------------------------------------


def test_tracking_report_in_rmm_format(sim):
    tr = mr.TrackingResourceAdaptor(sim)
    assert tr.get_outstanding_allocations_str() == ""
    p = tr.allocate(1234)
    assert tr.get_outstanding_allocations_str() == f"{p:#x}: 1234 B\n"
    tr.deallocate(p, 1234)
    assert tr.get_outstanding_allocations_str() == ""
    deep = mr.TrackingResourceAdaptor(sim, capture_stacks=True)
    q = deep.allocate(256)
    text = deep.get_outstanding_allocations_str()
    assert text.startswith(f"{q:#x}: 256 B : callstack:\n")
    deep.deallocate(q, 256)
    assert deep.get_outstanding_allocations_str() == ""


def test_nested_tracking_counts_reach_zero(sim):
    outer = mr.TrackingResourceAdaptor(sim, capture_stacks=True)
    mr.set_current_device_resource(outer)
    buffers = [rmm.DeviceBuffer(size=1000) for _ in range(4)]
    inner = mr.TrackingResourceAdaptor(outer)
    mr.set_current_device_resource(inner)
    buffers.append(rmm.DeviceBuffer(size=1000))
    assert inner.get_allocated_bytes() == 1000
    assert outer.get_allocated_bytes() == 5000
    del buffers
    assert outer.get_allocated_bytes() == 0 and inner.get_allocated_bytes() == 0
    assert outer.get_outstanding_allocations_str() == ""
    assert inner.get_outstanding_allocations_str() == ""


# --- exceptions of Python callbacks -------------------------------------------------


def _failing(exc):
    def allocate_func(nbytes, stream):
        raise exc

    return mr.CallbackMemoryResource(allocate_func, lambda p, n, s: None, simulated=True)


@pytest.mark.parametrize(
    "raised,caught",
    [
        (MemoryError("my alloc error"), MemoryError),
        (RuntimeError("my alloc error"), RuntimeError),
        (ValueError("my alloc error"), RuntimeError),
        (Exception("my alloc error"), RuntimeError),
    ],
)
def test_callback_resource_translates_exceptions(raised, caught):
    res = _failing(raised)
    with pytest.raises(caught, match="my alloc error") as info:
        res.allocate(256)
    if caught is RuntimeError:
        assert not isinstance(info.value, (ValueError, MemoryError))
    with pytest.raises(caught, match="my alloc error"):
        rmm.DeviceBuffer(size=256, mr=res)


def test_callback_exceptions_leave_resize_and_copy_too(sim):
    b = rmm.DeviceBuffer(size=0, mr=_failing(RuntimeError("cannot grow")))
    with pytest.raises(RuntimeError, match="cannot grow"):
        b.resize(1000)
    with pytest.raises(RuntimeError, match="cannot grow"):
        b.reserve(1000)
    assert b.size == 0

    calls = []

    def once_then_fail(nbytes, stream):
        calls.append(nbytes)
        if len(calls) > 1:
            raise MemoryError("no second buffer")
        return sim.allocate(nbytes, stream)

    res = mr.CallbackMemoryResource(once_then_fail, lambda p, n, s: sim.deallocate(p, n, s), simulated=True)
    one = rmm.DeviceBuffer(size=512, mr=res)
    with pytest.raises(MemoryError, match="no second buffer"):
        one.copy()
    del one


def test_failure_callback_retries_then_gives_the_upstream_error():
    calls = []

    def callback(nbytes):
        calls.append(nbytes)
        return len(calls) == 1

    fc = mr.FailureCallbackResourceAdaptor(_failing(MemoryError("intentional")), callback)
    with pytest.raises(MemoryError, match="intentional"):
        rmm.DeviceBuffer(size=256, mr=fc)
    assert calls == [256, 256]


def test_failure_callback_exception_propagates():
    def callback(nbytes):
        raise RuntimeError("MyError")

    fc = mr.FailureCallbackResourceAdaptor(_failing(MemoryError("intentional")), callback)
    with pytest.raises(RuntimeError, match="MyError"):
        rmm.DeviceBuffer(size=256, mr=fc)
    with pytest.raises(RuntimeError, match="MyError"):
        fc.allocate(256)

    def oom_callback(nbytes):
        raise MemoryError("from the callback")

    fc2 = mr.FailureCallbackResourceAdaptor(mr.SimulatedMemoryResource(1024), oom_callback)
    with pytest.raises(MemoryError, match="from the callback"):
        fc2.allocate(4096)


def test_callback_error_does_not_outlive_its_allocation():
    with pytest.raises(RuntimeError):
        _failing(RuntimeError("stale")).allocate(256)
    tiny = mr.SimulatedMemoryResource(1024)
    with pytest.raises(MemoryError, match="out_of_memory") as info:
        tiny.allocate(4096)
    assert "stale" not in str(info.value)


# --- RMMError --------------------------------------------------------------------


def test_rmm_error_errcode():
    e = rmm_rs.RMMError(7, "boom")
    assert e.errcode == 7
    assert str(e) == "boom" and e.args == ("boom",)
    assert isinstance(e, RuntimeError)
    plain = rmm_rs.RMMError("just a message")
    assert plain.errcode is None and str(plain) == "just a message"
    assert rmm_rs.CUDAError("x").errcode is None
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is rmm_rs.RMMError and back.errcode == 7 and str(back) == "boom"
    with pytest.raises(rmm_rs.RMMError) as info:
        raise rmm_rs.RMMError(3, "raised")
    assert info.value.errcode == 3


def test_library_errors_have_no_errcode(sim):
    bn = mr.BinningMemoryResource(sim)
    b = rmm.DeviceBuffer(size=10, mr=bn)
    with pytest.raises(rmm_rs.RMMError) as info:
        bn.add_bin(4096)
    assert info.value.errcode is None
    del b


# --- LoggingResourceAdaptor's file name -----------------------------------------------


def test_logging_adaptor_names_the_file_as_rmm(tmp_path, sim, monkeypatch):
    dev = mr._current_device()
    monkeypatch.chdir(tmp_path)
    rel = mr.LoggingResourceAdaptor(sim, log_file_name="sub.log")
    assert rel.get_file_name() == str(tmp_path / f"sub.dev{dev}.log")
    bare = mr.LoggingResourceAdaptor(sim, log_file_name=tmp_path / "noext")
    assert bare.get_file_name() == str(tmp_path / f"noext.dev{dev}")
    other = mr.LoggingResourceAdaptor(sim, log_file_name="x/../other.csv", device=3)
    assert other.get_file_name() == str(tmp_path / "other.dev3.csv")
    rmm.DeviceBuffer(size=100, mr=rel)
    rel.flush()
    lines = (tmp_path / f"sub.dev{dev}.log").read_text().splitlines()
    assert lines[0] == "Thread,Time,Action,Pointer,Size,Stream"
    assert [line.split(",")[2] for line in lines[1:]] == ["allocate", "free"]
    monkeypatch.setenv("RMM_LOG_FILE", "env.csv")
    assert mr.LoggingResourceAdaptor(sim).get_file_name() == str(tmp_path / f"env.dev{dev}.csv")
    with pytest.raises(ValueError, match="non-negative"):
        mr.LoggingResourceAdaptor(sim, log_file_name="x.csv", device=-1)


# --- streams ------------------------------------------------------------------------


class _ForeignStream:
    def __cuda_stream__(self):
        return (0, 0)


def test_stream_flags_values_and_checks():
    flags = _lib.CudaStreamFlags
    assert int(flags.SYNC_DEFAULT) == 0 and int(flags.NON_BLOCKING) == 1
    assert flags.SYNC_DEFAULT != flags.NON_BLOCKING
    assert len({flags.SYNC_DEFAULT, flags.NON_BLOCKING, flags.SYNC_DEFAULT}) == 2
    existing = rmm.Stream(_ForeignStream())
    with pytest.raises(ValueError, match="flags may only be specified when obj is None"):
        rmm.Stream(existing, flags=flags.NON_BLOCKING)
    with pytest.raises(ValueError, match="flags may only be specified when obj is None"):
        rmm.Stream(_ForeignStream(), flags=0)
    with pytest.raises(ValueError, match="CudaStreamFlags"):
        rmm.Stream(flags=7)
    with pytest.raises(ValueError, match="CudaStreamFlags"):
        _lib.CudaStreamPool(pool_size=2, flags=7)
    with pytest.raises(rmm_rs.RMMError, match="greater than zero"):
        _lib.CudaStreamPool(pool_size=0)


def test_stream_protocol_version_is_checked():
    class V1Stream:
        def __cuda_stream__(self):
            return (1, 2)

    with pytest.raises(NotImplementedError, match="version: '1'"):
        rmm.Stream(V1Stream())
    assert rmm.Stream(_ForeignStream()).__cuda_stream__() == (0, 0)


def test_explicit_none_stream_is_refused(sim):
    with pytest.raises(TypeError, match="stream argument cannot be None"):
        rmm.DeviceBuffer(size=10, mr=sim, stream=None)
    with pytest.raises(TypeError, match="stream argument cannot be None"):
        sim.allocate(256, stream=None)
    p = sim.allocate(256)
    with pytest.raises(TypeError, match="stream argument cannot be None"):
        sim.deallocate(p, 256, stream=None)
    sim.deallocate(p, 256)
    b = rmm.DeviceBuffer(size=10, mr=sim)
    for call in (
        lambda: b.resize(20, stream=None),
        lambda: b.reserve(64, stream=None),
        lambda: b.tobytes(stream=None),
        lambda: b.copy_to_host(stream=None),
        lambda: b.copy_from_host(b"", stream=None),
        lambda: rmm.DeviceBuffer.to_device(b"", stream=None),
        lambda: _lib.to_device(b"", stream=None),
        lambda: _lib.copy_device_to_ptr(0, 0, 0, stream=None),
    ):
        with pytest.raises(TypeError, match="stream argument cannot be None"):
            call()
    b.prefetch(stream=None)  # RMM's prefetch takes None: the buffer's stream


@pytest.mark.skipif(GPU, reason="checks the error without a GPU")
def test_new_streams_need_a_gpu():
    with pytest.raises(rmm_rs.DriverUnavailableError):
        rmm.Stream(flags=_lib.CudaStreamFlags.NON_BLOCKING)
    with pytest.raises(rmm_rs.DriverUnavailableError):
        _lib.CudaStreamPool(pool_size=2)


# --- driver-pool resources: arguments ---------------------------------------------


def test_pool_sizes_refused_as_value_and_runtime_errors(sim):
    with pytest.raises(RuntimeError, match="Initial pool size exceeds the maximum pool size") as info:
        mr.PoolMemoryResource(sim, initial_pool_size=2048, maximum_pool_size=1024)
    assert isinstance(info.value, ValueError) and isinstance(info.value, rmm_rs.RMMError)
    assert type(info.value) is _lib.ConfigurationError
    with pytest.raises(ValueError, match="multiple of 256"):
        mr.PoolMemoryResource(sim, initial_pool_size=1000)
    with pytest.raises(RuntimeError, match="multiple of 256"):
        mr.PoolMemoryResource(sim, initial_pool_size=1024, maximum_pool_size=2000)


def test_cuda_async_refuses_two_export_types():
    with pytest.raises(ValueError, match="enable_ipc and enable_fabric"):
        mr.CudaAsyncMemoryResource(enable_ipc=True, enable_fabric=True)


class cudaMemPool_t:  # noqa: N801 - named as cuda-python's class
    def __init__(self, handle):
        self.handle = handle

    def __int__(self):
        return self.handle


def test_cuda_async_view_takes_pool_handles():
    with pytest.raises(ValueError, match="cudaMemPool_t or CUmemoryPool"):
        _lib.CudaAsyncViewMemoryResource("pool")
    with pytest.raises(ValueError, match="cudaMemPool_t or CUmemoryPool"):
        _lib.CudaAsyncViewMemoryResource(1.5)
    if not GPU:
        with pytest.raises(rmm_rs.DriverUnavailableError):
            _lib.CudaAsyncViewMemoryResource(cudaMemPool_t(0x1234))
        with pytest.raises(rmm_rs.DriverUnavailableError):
            mr.CudaAsyncMemoryResource(enable_fabric=True)


# --- DeviceBuffer ---------------------------------------------------------------------


def test_device_buffer_copy_over_simulated(sim):
    stream = rmm.Stream(_ForeignStream())
    b = rmm.DeviceBuffer(size=1000, mr=sim, stream=stream)
    copies = [b.copy(), copy.copy(b)]
    for c in copies:
        assert type(c) is rmm.DeviceBuffer
        assert c.size == 1000 and c.ptr != b.ptr
        assert c.mr is sim and c.stream is b.stream
    assert sim.live_allocations() == 3
    del copies, c
    assert sim.live_allocations() == 1
    b.reserve(4096)
    assert b.capacity() == 4096
    assert b.__sizeof__() == 1000
    with pytest.raises(rmm_rs.RMMError, match="simulated"):
        bytes(b)
    assert bytes(rmm.DeviceBuffer(size=0, mr=sim)) == b""


def test_copy_functions_check_their_arguments():
    with pytest.raises(TypeError, match="expected bytes-like"):
        _lib.to_device(None)
    with pytest.raises(TypeError, match="expected bytes-like"):
        _lib.copy_ptr_to_host(0, None)
    with pytest.raises(TypeError, match="expected bytes-like"):
        _lib.copy_host_to_ptr(None, 0)
    with pytest.raises(ValueError, match="read-only"):
        _lib.copy_ptr_to_host(0, b"abc")
    # Nothing to copy: nothing is asked of the driver.
    _lib.copy_ptr_to_host(0, bytearray())
    _lib.copy_host_to_ptr(b"", 0)
    _lib.copy_device_to_ptr(0, 0, 0)


def test_host_buffers_are_one_dimension_of_bytes(sim):
    np = pytest.importorskip("numpy")
    b = rmm.DeviceBuffer(size=16, mr=sim)
    refused = [
        (None, TypeError),
        ("abc", TypeError),
        (123, TypeError),
        (np.ones(2, "u2"), ValueError),
        (np.ones((2, 2), "u1"), ValueError),
        (np.ones(4, "u1")[::2], ValueError),
    ]
    for host, error in refused:
        with pytest.raises(error):
            rmm.DeviceBuffer.to_device(host, mr=sim)
        with pytest.raises(error):
            b.copy_from_host(host)
        if host is not None:  # copy_to_host(None) makes a new array
            with pytest.raises(error):
                b.copy_to_host(host)
        with pytest.raises(error):
            _lib.copy_host_to_ptr(host, 0)
        with pytest.raises(error):
            _lib.copy_ptr_to_host(0, host)
    readonly = np.zeros(16, "u1")
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        b.copy_to_host(readonly)
    # Accepted shapes of bytes: empty buffers copy nothing, even over
    # simulated memory.
    for host in (b"", bytearray(), memoryview(b""), np.zeros(0, "u1")):
        assert rmm.DeviceBuffer.to_device(host, mr=sim).size == 0


@pytest.mark.skipif(GPU, reason="checks the error without a GPU")
def test_copy_functions_need_a_gpu():
    with pytest.raises(rmm_rs.DriverUnavailableError):
        _lib.copy_host_to_ptr(b"abc", 0x1000)


# --- on a GPU ------------------------------------------------------------------------


@pytest.mark.gpu
def test_device_buffer_copy_protocol_on_gpu():
    b = rmm.DeviceBuffer.to_device(b"abcdef")
    buffers = []
    back = pickle.loads(pickle.dumps(b, protocol=5, buffer_callback=buffers.append), buffers=buffers)
    assert len(buffers) == 1 and bytes(buffers[0]) == b"abcdef"  # out of band, as RMM
    assert bytes(back) == b"abcdef" and back.ptr != b.ptr
    c = b.copy()
    assert c.ptr != b.ptr and bytes(c) == b"abcdef"
    c.copy_from_host(b"XY")
    assert bytes(c) == b"XYcdef" and bytes(b) == b"abcdef"
    d = copy.copy(b)
    assert bytes(d) == b"abcdef" and d.mr is b.mr
    b.reserve(1 << 20)
    assert b.__sizeof__() == 6 and len(b) == 6


@pytest.mark.gpu
def test_pointer_copies_on_gpu():
    src = _lib.to_device(b"hello world")
    assert type(src) is rmm.DeviceBuffer and bytes(src) == b"hello world"
    host = bytearray(src.size)
    _lib.copy_ptr_to_host(src.ptr, host)
    assert host == bytearray(b"hello world")
    dst = rmm.DeviceBuffer(size=11)
    _lib.copy_host_to_ptr(b"HELLO", dst.ptr)
    _lib.copy_device_to_ptr(src.ptr + 5, dst.ptr + 5, 6)
    assert bytes(dst) == b"HELLO world"
    stream = rmm.Stream()
    _lib.copy_device_to_ptr(dst.ptr, src.ptr, 5, stream=stream)
    assert bytes(src) == b"HELLO world"


@pytest.mark.gpu
def test_streams_with_flags_and_stream_pool_on_gpu():
    nb = rmm.Stream(flags=_lib.CudaStreamFlags.NON_BLOCKING)
    assert not nb.is_default() and nb != rmm.DEFAULT_STREAM
    nb.synchronize()
    for flags in (_lib.CudaStreamFlags.SYNC_DEFAULT, _lib.CudaStreamFlags.NON_BLOCKING):
        pool = _lib.CudaStreamPool(pool_size=4, flags=flags)
        assert pool.get_pool_size() == 4
        streams = [pool.get_stream() for _ in range(4)]
        assert len(set(streams)) == 4
        assert all(not s.is_default() for s in streams)
        assert [pool.get_stream(i) for i in range(4)] == streams
        assert pool.get_stream(5) == streams[1]
        held = streams[0]
        del pool, streams
        b = rmm.DeviceBuffer(size=64, stream=held)  # the stream keeps its pool alive
        held.synchronize()
        del b


@pytest.mark.gpu
def test_cuda_async_view_and_fabric_flag_on_gpu():
    owner = mr.CudaAsyncMemoryResource(enable_fabric=False)
    view = _lib.CudaAsyncViewMemoryResource(owner.pool_handle())
    assert view.pool_handle() == owner.pool_handle()
    assert view.is_equal(owner)
    b = rmm.DeviceBuffer.to_device(b"pool bytes", mr=view)
    assert bytes(b) == b"pool bytes"
    p = view.allocate(1 << 20)
    view.deallocate(p, 1 << 20)
    del b
    view_via_type = _lib.CudaAsyncViewMemoryResource(cudaMemPool_t(owner.pool_handle()))
    assert view_via_type.pool_handle() == owner.pool_handle()


@pytest.mark.gpu
def test_statistics_of_gpu_buffers():
    st = mr.StatisticsResourceAdaptor(mr.CudaMemoryResource())
    mr.set_current_device_resource(st)
    assert st.allocation_counts.current_bytes == 0
    b = rmm.DeviceBuffer(size=1000)
    assert st.allocation_counts.current_bytes == 1000
    del b
    assert st.allocation_counts.current_bytes == 0
    assert st.allocation_counts == Statistics(0, 0, 1000, 1, 1000, 1)


# --- logging levels ----------------------------------------------------------------


def test_n_levels_is_a_level_that_logs_nothing():
    before = _lib._get_logging_level()
    try:
        _lib.set_logging_level(7)
        assert _lib._get_logging_level() == 7
        assert not _lib.should_log(7)
        assert not _lib.should_log(5)
        with pytest.raises(ValueError, match="0..=7"):
            _lib.set_logging_level(8)
    finally:
        _lib.set_logging_level(before)
