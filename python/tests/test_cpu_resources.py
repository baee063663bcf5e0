"""What runs without a GPU: every resource and adaptor over the simulated
resource, the per-device registry and reinitialize."""

import gc
import os
import threading

import pytest

import rmm_rs
import rmm_rs as rmm
from rmm_rs import mr


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
