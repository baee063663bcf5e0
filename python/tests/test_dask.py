"""Dask-CUDA over rmm_rs through the compatibility package: a
``LocalCUDACluster(rmm_pool_size=..., rmm_managed_memory=...)`` whose workers
set up rmm_rs resources through ``import rmm`` (Dask-CUDA's own RMMSetup
plugin), a CuPy-backed ``dask.array`` computation checked against NumPy, and
the statistics each worker read back.

Needs a GPU and dask, distributed, dask_cuda and CuPy: without them the test
skips, and with ``RMM_REQUIRE_GPU=1`` it fails instead (it must not pass on
the GPU machine by skipping). The cluster runs in a fresh interpreter whose
``PYTHONPATH`` reaches the compatibility package, so that the worker
processes it spawns import ``rmm`` as rmm_rs too.
"""

import importlib

import pytest
from conftest import require_gpu
from test_compat import run_json

pytestmark = pytest.mark.gpu

# The computation: sum of squares of 0..N-1 in float64, exact below 2**53.
N = 4_000_000
CHUNK = 500_000

CLUSTER_SCRIPT = """
import json, sys
import numpy as np
import cupy
import dask
import dask.array as da
from distributed import Client
from dask_cuda import LocalCUDACluster

managed = sys.argv[1] == "managed"
N, CHUNK = {n}, {chunk}


def worker_resources():
    import rmm, rmm_rs
    from rmm.allocators.cupy import rmm_cupy_allocator
    stack = []
    res = rmm_rs.mr.get_current_device_resource()
    while res is not None:
        stack.append(type(res).__name__)
        res = getattr(res, "upstream_mr", None)
    pool = rmm_rs.mr.get_current_device_resource()
    while not isinstance(pool, rmm_rs.mr.PoolMemoryResource) and hasattr(pool, "upstream_mr"):
        pool = pool.upstream_mr
    return {{
        "rmm_is_rmm_rs": rmm is rmm_rs,
        "stack": stack,
        "pool_size": pool.pool_size() if isinstance(pool, rmm_rs.mr.PoolMemoryResource) else None,
        "cupy_allocator_is_rmm_rs": cupy.cuda.get_allocator() is rmm_cupy_allocator,
    }}


def worker_statistics():
    import rmm_rs
    s = rmm_rs.statistics.get_statistics()
    return None if s is None else {{k: getattr(s, k) for k in ("current_bytes", "peak_bytes", "total_bytes", "total_count")}}


with LocalCUDACluster(
    rmm_pool_size="256MiB",
    rmm_managed_memory=managed,
    rmm_allocator_external_lib_list=["cupy"],
    dashboard_address=None,
    protocol="tcp",
) as cluster, Client(cluster) as client:
    before = client.run(worker_resources)
    client.run(lambda: __import__("rmm").statistics.enable_statistics())
    x = da.arange(N, chunks=CHUNK, dtype="f8").map_blocks(cupy.asarray)
    total = (x * x).sum().compute()
    kind = type(total).__module__
    after = client.run(worker_resources)
    stats = client.run(worker_statistics)
    print(json.dumps({{
        "workers": len(before),
        "before": list(before.values()),
        "after": list(after.values()),
        "stats": list(stats.values()),
        "total": float(total),
        "result_module": kind,
    }}))
"""


def _require(name):
    try:
        return importlib.import_module(name)
    except Exception as e:  # ImportError, or a broken install
        if require_gpu():
            pytest.fail(f"{name} is needed for the Dask-CUDA test (RMM_REQUIRE_GPU=1): {e!r}")
        pytest.skip(f"{name} not importable: {e!r}")


@pytest.mark.parametrize("memory", ["device", "managed"])
def test_local_cuda_cluster_over_rmm_rs(memory):
    for name in ("cupy", "dask", "distributed", "dask_cuda"):
        _require(name)
    code = CLUSTER_SCRIPT.format(n=N, chunk=CHUNK)
    got = run_json(f"import sys; sys.argv = ['cluster', {memory!r}]\n" + code)
    assert got["workers"] >= 1
    base = "ManagedMemoryResource" if memory == "managed" else "CudaMemoryResource"
    for before in got["before"]:
        # Dask-CUDA's RMMSetup plugin: rmm.reinitialize(pool_allocator=True,
        # managed_memory=..., initial_pool_size=256 MiB) on every worker.
        assert before["rmm_is_rmm_rs"] is True
        assert before["stack"] == ["PoolMemoryResource", base], before
        assert before["pool_size"] == 256 << 20
        assert before["cupy_allocator_is_rmm_rs"] is True
    for after in got["after"]:
        assert after["stack"] == ["StatisticsResourceAdaptor", "PoolMemoryResource", base], after
    expected = float(sum(i * i for i in range(N)))
    assert got["total"] == expected
    # Every chunk was made on a worker by CuPy through rmm_rs: the workers'
    # statistics together saw at least the array and its square.
    total_bytes = sum(s["total_bytes"] for s in got["stats"])
    assert total_bytes >= 2 * N * 8, got["stats"]
    assert sum(s["total_count"] for s in got["stats"]) >= 2 * (N // CHUNK)
    assert all(s["peak_bytes"] > 0 for s in got["stats"]), got["stats"]
