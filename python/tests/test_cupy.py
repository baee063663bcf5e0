"""CuPy allocating through rmm_rs (GPU; needs CuPy)."""

import json
import os

import pytest
from conftest import need_module, run_py

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))


def test_cupy_workload_through_pool():
    need_module("cupy")
    out = run_py(
        f"import sys; sys.path.insert(0, {os.path.join(HERE, 'workloads')!r})\n"
        "import cupy_workload; cupy_workload.main(20)\n"
    )
    counts = json.loads(out.strip().splitlines()[-1])
    # The statistics adaptor saw CuPy's allocations (and their frees).
    assert counts["total_count"] > 100
    assert counts["peak_bytes"] > 0
    assert counts["current_count"] < counts["total_count"]


def test_cupy_in_process_and_reset():
    cp = need_module("cupy")
    import rmm_rs as rmm
    from rmm_rs.allocators.cupy import rmm_cupy_allocator

    stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.CudaMemoryResource())
    rmm.mr.set_current_device_resource(stats)
    previous = cp.cuda.get_allocator() if hasattr(cp.cuda, "get_allocator") else None
    cp.cuda.set_allocator(rmm_cupy_allocator)
    try:
        x = cp.ones((1000, 1000), dtype=cp.float32)
        assert float(x.sum()) == 1e6
        assert stats.allocation_counts["current_bytes"] >= 4_000_000
        mp = rmm_cupy_allocator(1000)
        assert mp.ptr != 0 and mp.mem.size == 1000
        zero = rmm_cupy_allocator(0)
        assert zero.ptr == 0
        del x, mp, zero
    finally:
        cp.cuda.set_allocator(previous if previous is not None else cp.get_default_memory_pool().malloc)
    assert stats.allocation_counts["current_bytes"] == 0
