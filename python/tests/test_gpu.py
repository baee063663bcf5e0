"""GPU tests: RMM's README snippets, DeviceBuffer on real memory, every
resource and adaptor, reinitialize on one and two GPUs. Skipped without a
GPU; failed instead with RMM_REQUIRE_GPU=1 (RMM_REQUIRE_GPUS=2 for the
two-GPU test)."""

import gc
import os
import pickle

import pytest
from conftest import need_module, run_py
from readme_snippets import NEEDS, SNIPPETS, as_rmm_rs

import rmm_rs
import rmm_rs as rmm
from rmm_rs import mr

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_readme_snippet(name):
    if name in NEEDS:
        need_module(NEEDS[name])
    run_py(as_rmm_rs(SNIPPETS[name]))


def test_readme_numba_env_variable():
    need_module("numba")
    code = (
        "from numba import cuda\nimport numpy as np\n"
        "d = cuda.to_device(np.arange(100))\n"
        "assert (d.copy_to_host() == np.arange(100)).all()\n"
        "print(type(cuda.current_context().memory_manager).__name__)\n"
    )
    out = run_py(code, env={"NUMBA_CUDA_MEMORY_MANAGER": "rmm_rs.allocators.numba"})
    assert out.strip() == "RMMNumbaManager"


def pattern(n):
    return bytes((i * 7 + 3) % 251 for i in range(n))


def test_device_buffer_copies():
    data = pattern(10_000)
    b = rmm.DeviceBuffer.to_device(data)
    assert b.size == 10_000 and b.ptr % 256 == 0
    assert b.tobytes() == data
    host = bytearray(10_000)
    assert b.copy_to_host(host) is host
    assert bytes(host) == data
    try:
        import numpy as np
    except ImportError:
        np = None
    if np is not None:
        arr = b.copy_to_host()
        assert arr.dtype == np.uint8 and arr.tobytes() == data
        target = np.zeros(10_000, dtype=np.uint8)
        b.copy_to_host(target)
        assert target.tobytes() == data
        with pytest.raises(ValueError):
            b.copy_to_host(np.zeros(10, dtype=np.uint8))
        # As RMM: host buffers are one dimension of bytes (uint8).
        with pytest.raises(ValueError):
            b.copy_to_host(np.zeros(10_000 // 4, dtype=np.float32))
        # NumPy arrays as sources are copied in place (no host copy first).
        arr = np.arange(1000, dtype=np.float32)
        nb = rmm.DeviceBuffer.to_device(arr.view(np.uint8))
        assert nb.size == 4000 and np.frombuffer(nb.tobytes(), dtype=np.float32).tolist() == arr.tolist()
        with pytest.raises(ValueError):
            rmm.DeviceBuffer.to_device(arr)
        ro = np.arange(10, dtype=np.uint8)
        ro.flags.writeable = False
        nb.copy_from_host(ro)
        assert nb.tobytes()[:10] == bytes(range(10))
        with pytest.raises((TypeError, ValueError, BufferError)):
            nb.copy_from_host(np.arange(100, dtype=np.uint8)[::2])
    # Partial host copy into the start.
    b.copy_from_host(b"\x00" * 100)
    assert b.tobytes() == b"\x00" * 100 + data[100:]
    with pytest.raises(ValueError):
        b.copy_from_host(b"x" * 10_001)
    # Device-to-device.
    c = rmm.DeviceBuffer(size=10_000)
    c.copy_from_device(b)
    assert c.tobytes() == b.tobytes()
    d = rmm.DeviceBuffer(ptr=b.ptr, size=5000)
    assert d.tobytes() == b.tobytes()[:5000]
    # Resize keeps the contents; reserve too.
    d.resize(20_000)
    assert d.tobytes()[:5000] == b.tobytes()[:5000]
    d.reserve(1 << 20)
    assert d.capacity() == 1 << 20 and d.tobytes()[:5000] == b.tobytes()[:5000]
    d.resize(10)
    assert d.tobytes() == b.tobytes()[:10]


def test_pickle_roundtrip():
    data = pattern(4096)
    b = rmm.DeviceBuffer.to_device(data)
    c = pickle.loads(pickle.dumps(b))
    assert isinstance(c, rmm.DeviceBuffer)
    assert c.ptr != b.ptr and c.tobytes() == data
    empty = pickle.loads(pickle.dumps(rmm.DeviceBuffer()))
    assert empty.size == 0


def test_cuda_array_interface_v3():
    b = rmm.DeviceBuffer(size=64)
    cai = b.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["data"] == (b.ptr, False)
    assert cai["shape"] == (64,) and cai["typestr"] == "|u1" and cai["strides"] is None
    assert cai["stream"] == 1  # the legacy default stream
    s = rmm.Stream()
    on_s = rmm.DeviceBuffer(size=64, stream=s)
    assert on_s.__cuda_array_interface__["stream"] == s.ptr


def test_streams():
    s = rmm.Stream()
    assert not s.is_default() and s.ptr not in (0, 1, 2)
    b = rmm.DeviceBuffer.to_device(pattern(1 << 20), stream=s)
    s.synchronize()
    assert b.tobytes(stream=s) == pattern(1 << 20)
    b.resize(2 << 20, stream=rmm.DEFAULT_STREAM)
    assert b.stream == rmm.DEFAULT_STREAM
    del s  # the buffer keeps its stream alive
    gc.collect()
    c = rmm.DeviceBuffer(size=100, stream=rmm.PER_THREAD_DEFAULT_STREAM)
    assert c.stream.ptr == 2


def test_out_of_memory_on_the_gpu():
    free, total = mr.available_device_memory()
    assert 0 < free <= total
    with pytest.raises(MemoryError, match="out_of_memory"):
        rmm.DeviceBuffer(size=total * 4)
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size="64MiB", maximum_pool_size="128MiB")
    with pytest.raises(MemoryError, match="out_of_memory"):
        rmm.DeviceBuffer(size="256MiB", mr=pool)
    # As RMM's pool: growth never passes the maximum (64 MiB held, 64 MiB of
    # room: a second 60 MiB grows the pool, a third does not fit).
    first = rmm.DeviceBuffer(size="60MiB", mr=pool)
    second = rmm.DeviceBuffer(size="60MiB", mr=pool)
    assert 120 << 20 <= pool.pool_size() <= 128 << 20
    with pytest.raises(MemoryError, match="out_of_memory"):
        rmm.DeviceBuffer(size="60MiB", mr=pool)
    del first
    third = rmm.DeviceBuffer(size="60MiB", mr=pool)  # the freed block serves it
    assert pool.pool_size() <= 128 << 20
    del second, third


def _resources():
    cuda = mr.CudaMemoryResource

    def binning():
        b = mr.BinningMemoryResource(cuda(), 18, 22)
        b.add_bin(1 << 10)
        return b

    return {
        "cuda": cuda,
        "managed": mr.ManagedMemoryResource,
        "pinned": mr.PinnedHostMemoryResource,
        "cuda_async": lambda: mr.CudaAsyncMemoryResource(initial_pool_size="64MiB", release_threshold="1GiB"),
        "cuda_async_managed": mr.experimental.CudaAsyncManagedMemoryResource,
        "pool": lambda: mr.PoolMemoryResource(cuda(), initial_pool_size="256MiB"),
        "pool_managed": lambda: mr.PoolMemoryResource(mr.ManagedMemoryResource(), initial_pool_size="64MiB"),
        "fixed_size": lambda: mr.FixedSizeMemoryResource(cuda(), block_size="4MiB", blocks_to_preallocate=8),
        "binning": binning,
        "arena": lambda: mr.ArenaMemoryResource(cuda(), arena_size="256MiB"),
        "limiting": lambda: mr.LimitingResourceAdaptor(cuda(), allocation_limit="512MiB"),
        "statistics": lambda: mr.StatisticsResourceAdaptor(cuda()),
        "tracking": lambda: mr.TrackingResourceAdaptor(cuda()),
        "failure_callback": lambda: mr.FailureCallbackResourceAdaptor(cuda(), lambda n: False),
        "prefetch": lambda: mr.PrefetchResourceAdaptor(mr.ManagedMemoryResource()),
        "aligned": lambda: mr.AlignedResourceAdaptor(cuda(), alignment=4096, alignment_threshold=0),
        "callback": _callback_over_cuda,
    }


def _callback_over_cuda():
    under = mr.CudaMemoryResource()
    return mr.CallbackMemoryResource(
        lambda n, s: under.allocate(n, s), lambda p, n, s: under.deallocate(p, n, s)
    )


@pytest.mark.parametrize("name", sorted(_resources()))
def test_each_resource(name):
    res = _resources()[name]()
    sizes = [1, 100, 4096, 100_000, 3 << 20]
    bufs = []
    for i, n in enumerate(sizes):
        data = bytes((j + i) % 256 for j in range(min(n, 4096))) * (n // min(n, 4096)) + bytes(n % min(n, 4096))
        assert len(data) == n
        b = rmm.DeviceBuffer.to_device(data, mr=res)
        bufs.append((b, data))
    for b, data in bufs:
        assert b.tobytes() == data
        assert b.mr is res
    raw = res.allocate(5000)
    res.deallocate(raw, 5000)
    mr.set_current_device_resource(res)
    c = rmm.DeviceBuffer.to_device(b"abc" * 1000)
    assert c.tobytes() == b"abc" * 1000
    del bufs, c, b  # `b` still names the last buffer of the loop
    gc.collect()
    if isinstance(res, mr.StatisticsResourceAdaptor):
        counts = res.allocation_counts
        assert counts["current_count"] == 0 and counts["total_count"] == len(sizes) + 2
    if isinstance(res, mr.TrackingResourceAdaptor):
        assert res.get_allocated_bytes() == 0


def test_prefetch_managed():
    res = mr.ManagedMemoryResource()
    b = rmm.DeviceBuffer.to_device(pattern(1 << 20), mr=res)
    b.prefetch()
    b.prefetch(device=0, stream=rmm.Stream())
    assert b.tobytes() == pattern(1 << 20)
    rmm.DeviceBuffer(size=100).prefetch()  # not managed: nothing to do


def test_reinitialize_gpu(tmp_path):
    rmm.reinitialize(pool_allocator=True, initial_pool_size="256MiB", logging=True, log_file_name=tmp_path / "log.csv")
    res = mr.get_current_device_resource()
    assert isinstance(res, mr.LoggingResourceAdaptor)
    assert isinstance(res.upstream_mr, mr.PoolMemoryResource)
    assert res.upstream_mr.pool_size() == 256 << 20
    b = rmm.DeviceBuffer.to_device(b"hello")
    assert b.tobytes() == b"hello"
    del b
    gc.collect()
    res.flush()
    dev = rmm_rs._lib._current_device()
    events = rmm.read_log(tmp_path / f"log.dev{dev}.csv")
    assert [e[1] for e in events] == ["allocate", "free"]
    replay = rmm.replay_log(tmp_path / f"log.dev{dev}.csv", mr.CudaMemoryResource())
    assert replay["failed_allocations"] == 0
    rmm.reinitialize(managed_memory=True)
    assert isinstance(mr.get_current_device_resource(), mr.ManagedMemoryResource)
    rmm.reinitialize(pool_allocator=True, managed_memory=True, initial_pool_size="64MiB")
    assert isinstance(mr.get_current_device_resource().upstream_mr, mr.ManagedMemoryResource)
    rmm.DeviceBuffer(size=1000)


def test_statistics_on_gpu():
    with rmm.statistics.statistics():
        b = rmm.DeviceBuffer(size=1000)
        assert rmm.statistics.get_statistics().current_bytes == 1000
        del b
    records = rmm.statistics.ProfilerRecords()
    rmm.statistics.enable_statistics()

    @rmm.statistics.profiler(records=records)
    def work():
        return [rmm.DeviceBuffer(size=1 << 20) for _ in range(4)]

    work()
    (rec,) = records.records.values()
    assert rec.memory_peak == 4 << 20


@pytest.mark.gpus(2)
def test_reinitialize_two_gpus():
    rmm.reinitialize(pool_allocator=True, initial_pool_size="128MiB", devices=[0, 1])
    pools = [mr.get_per_device_resource(d) for d in (0, 1)]
    assert all(isinstance(p, mr.PoolMemoryResource) for p in pools)
    assert pools[0] is not pools[1]
    assert [p.device for p in pools] == [0, 1] or all(p.device is None for p in pools)
    before = rmm_rs._lib._current_device()
    for d in (0, 1):
        rmm_rs._lib._set_current_device(d)
        try:
            b = rmm.DeviceBuffer.to_device(pattern(1 << 20))
            assert b.device == d
            assert b.mr is pools[d]
            assert b.tobytes() == pattern(1 << 20)
        finally:
            rmm_rs._lib._set_current_device(before)
    # Each device's pool grew by its own allocations only.
    assert pools[0].pool_size() == pools[1].pool_size() == 128 << 20
    # A two-GPU run in one process with PyTorch and CuPy on device 1.
    if os.environ.get("RMM_SKIP_TORCH") != "1":
        need_module("torch")
        out = run_py(
            "import rmm_rs as rmm, torch\n"
            "from rmm_rs.allocators.torch import rmm_torch_allocator\n"
            "rmm.reinitialize(pool_allocator=True, initial_pool_size='128MiB', devices=[0, 1])\n"
            "torch.cuda.memory.change_current_allocator(rmm_torch_allocator)\n"
            "st = [rmm.mr.StatisticsResourceAdaptor(rmm.mr.get_per_device_resource(d)) for d in (0, 1)]\n"
            "for d in (0, 1): rmm.mr.set_per_device_resource(d, st[d])\n"
            "a = torch.arange(1000, device='cuda:0', dtype=torch.float32)\n"
            "b = torch.arange(1000, device='cuda:1', dtype=torch.float32)\n"
            "assert float((a + b.to('cuda:0')).sum()) == 999000.0\n"
            "print(st[0].allocation_counts['total_count'] > 0, st[1].allocation_counts['total_count'] > 0)\n"
        )
        assert out.split() == ["True", "True"]


def test_system_resources_on_this_gpu():
    # Only GPUs that can access pageable memory (Grace Hopper, Linux HMM)
    # run them; on others (the H200 machine) the constructors say why.
    for make in (mr.SystemMemoryResource, lambda: mr.SamHeadroomMemoryResource("1GiB")):
        try:
            res = make()
        except rmm_rs.RMMError as e:
            assert not isinstance(e, rmm_rs.DriverUnavailableError), e
            text = str(e)
            assert "cannot access pageable host memory" in text, text
            assert "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 0" in text, text
            assert "device " in text, text
            continue
        buf = rmm.DeviceBuffer(size=4096, mr=res)
        buf.copy_from_host(bytes(range(256)) * 16)
        assert buf.tobytes() == bytes(range(256)) * 16
        del buf


def test_pool_out_of_memory_report_on_the_device():
    size = 64 << 20
    pool = mr.PoolMemoryResource(mr.CudaMemoryResource(), initial_pool_size=size, maximum_pool_size=size)
    held = rmm.DeviceBuffer(size=40 << 20, mr=pool)
    with pytest.raises(MemoryError) as info:
        rmm.DeviceBuffer(size=40 << 20, mr=pool)
    report = info.value.report
    assert report.failed_layer == "pool" and report.size == 40 << 20
    assert report.layers == ["pool", "cuda"]
    layer = report.to_dict()["snapshot"]["resource"]
    assert (layer["reserved_bytes"], layer["used_bytes"]) == (size, 40 << 20)
    assert layer["largest_free_block"] == size - (40 << 20)
    cuda = layer["upstream"]
    assert cuda["limit_bytes"] == rmm_rs.mr.available_device_memory()[1]
    assert "refused by pool" in str(info.value)
    snap = rmm_rs.memory_snapshot(pool)
    assert snap["resource"]["used_bytes"] == 40 << 20
    del held
