"""The opt-in compatibility package (python/compat, rmm-rs-compat): after
``import rmm``, ``rmm`` and every ``rmm.X`` are rmm_rs's own module objects,
and code written for RAPIDS RMM (cuDF's reinitialize hooks, Dask-CUDA's
``rmm.reinitialize`` call) runs unchanged over rmm_rs.

Each test runs in a fresh interpreter with python/compat first on
``PYTHONPATH`` (or the installed package, ``RMM_COMPAT_INSTALLED=1``):
importing ``rmm`` changes ``sys.modules`` and the import machinery for the
whole process, which the other tests must not see.
"""

import json
import os
from pathlib import Path

import pytest
from conftest import need_module, run_py

COMPAT_SRC = Path(__file__).resolve().parents[1] / "compat"


def run_with_compat(code, env=None):
    """Runs ``code`` where ``import rmm`` finds the compatibility package;
    returns its stdout (the test fails with its stderr if it exits non-zero)."""
    env = dict(env or {})
    if os.environ.get("RMM_COMPAT_INSTALLED") != "1":
        path = [str(COMPAT_SRC)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env["PYTHONPATH"] = os.pathsep.join(path)
    return run_py(code, env=env)


def run_json(code, env=None):
    """Like ``run_with_compat``; the code's last stdout line is JSON."""
    out = run_with_compat(code, env=env)
    return json.loads(out.strip().splitlines()[-1])


def test_import_rmm_is_rmm_rs():
    got = run_json(
        """
import json, sys
import rmm, rmm_rs
import rmm.mr, rmm.statistics
from rmm.mr import PoolMemoryResource
print(json.dumps({
    "same": rmm is rmm_rs,
    "mr": rmm.mr is rmm_rs.mr and sys.modules["rmm.mr"] is rmm_rs.mr,
    "statistics": rmm.statistics is rmm_rs.statistics,
    "class": PoolMemoryResource is rmm_rs.mr.PoolMemoryResource,
    "name": rmm.__name__,
    "spec": rmm.mr.__spec__.name,
}))
"""
    )
    assert got == {
        "same": True,
        "mr": True,
        "statistics": True,
        "class": True,
        "name": "rmm_rs",
        # rmm_rs's modules keep their own identity (and reload as themselves).
        "spec": "rmm_rs.mr",
    }


def test_submodule_first_imports_the_alias():
    # `import rmm.mr` before any `import rmm` (Dask-CUDA's worker plugins,
    # cuDF's modules): the package runs first and the submodule is rmm_rs's.
    got = run_json(
        """
import json, sys
import rmm.pylibrmm.device_buffer
import rmm_rs
print(json.dumps([sys.modules["rmm"] is rmm_rs,
                  rmm.pylibrmm.device_buffer is sys.modules["rmm_rs.pylibrmm.device_buffer"],
                  rmm.pylibrmm.device_buffer.DeviceBuffer is rmm_rs.DeviceBuffer]))
"""
    )
    assert got == [True, True, True]


def test_every_rmm_rs_module_resolves_under_rmm():
    # Walks rmm_rs's package tree (modules imported lazily included) and
    # imports each one under rmm: it must be the very same object, and no
    # second copy of any rmm_rs file may be loaded under the rmm name.
    got = run_json(
        """
import importlib, json, pkgutil, sys
import rmm, rmm_rs
names, unavailable = [], {}
for info in pkgutil.walk_packages(rmm_rs.__path__, "rmm_rs."):
    try:
        target = importlib.import_module(info.name)
    except ImportError as e:  # an optional library (CuPy, Numba, PyTorch) is missing
        unavailable[info.name] = repr(e)
        continue
    alias = importlib.import_module("rmm" + info.name[len("rmm_rs"):])
    assert alias is target, (info.name, alias, target)
    names.append(info.name)
copies = [k for k, m in sys.modules.items()
          if k.startswith("rmm.") and k != "rmm._alias" and not m.__name__.startswith("rmm_rs")]
print(json.dumps({"names": names, "unavailable": unavailable, "copies": copies}))
"""
    )
    assert got["copies"] == []
    for must in ("rmm_rs.mr", "rmm_rs.statistics", "rmm_rs.pylibrmm", "rmm_rs.pylibrmm.memory_resource",
                 "rmm_rs.pylibrmm.device_buffer", "rmm_rs.pylibrmm.stream", "rmm_rs.allocators"):
        assert must in got["names"], (must, got)
    # Only the allocator hooks may fail, and only for their missing library.
    for name, err in got["unavailable"].items():
        assert name.startswith("rmm_rs.allocators."), (name, err)
        assert "ModuleNotFoundError" in err, (name, err)


def test_missing_module_names_rmm():
    got = run_json(
        """
import json
import rmm
errors = []
for name in ("rmm.no_such_module", "rmm.mr.no_such_module", "rmm.pylibrmm.no_such_module"):
    try:
        __import__(name)
    except ModuleNotFoundError as e:
        errors.append(str(e))
print(json.dumps(errors))
"""
    )
    assert len(got) == 3
    assert got[0] == "No module named 'rmm.no_such_module'"
    assert "rmm.mr.no_such_module" in got[1]
    assert got[2] == "No module named 'rmm.pylibrmm.no_such_module'"


def test_alias_names():
    run_with_compat(
        """
from rmm._alias import target_name, RmmAliasFinder, install_alias_finder
import sys
assert target_name("rmm.mr.experimental") == "rmm_rs.mr.experimental"
assert target_name("rmm") is None and target_name("rmmx.y") is None and target_name("x.rmm.y") is None
install_alias_finder()  # again: still one, still first
assert isinstance(sys.meta_path[0], RmmAliasFinder)
assert sum(isinstance(f, RmmAliasFinder) for f in sys.meta_path) == 1
"""
    )


def test_simulated_resource_through_rmm():
    # RMM-style code over the simulated resource: reinitialize, DeviceBuffer,
    # the statistics module and isinstance checks across both names.
    got = run_json(
        """
import json
import rmm, rmm.mr, rmm.statistics, rmm_rs
rmm.reinitialize(pool_allocator=True, initial_pool_size="2MiB", maximum_pool_size="8MiB",
                 simulated_memory="64MiB")
res = rmm.mr.get_current_device_resource()
with rmm.statistics.statistics():
    bufs = [rmm.DeviceBuffer(size=1000) for _ in range(3)]
    stats = rmm.statistics.get_statistics()
    inside = [stats.current_bytes, stats.current_count]
    del bufs
    after = rmm.statistics.get_statistics().current_count
print(json.dumps({
    "pool": isinstance(res, rmm_rs.mr.PoolMemoryResource),
    "device_mr": isinstance(res, rmm.mr.DeviceMemoryResource),
    "upstream": type(res.upstream_mr).__name__,
    "pool_size": res.pool_size(),
    "inside": inside,
    "after": after,
    "initialized": rmm.is_initialized(),
}))
"""
    )
    assert got == {
        "pool": True,
        "device_mr": True,
        "upstream": "SimulatedMemoryResource",
        "pool_size": 2 << 20,
        "inside": [3000, 3],
        "after": 0,
        "initialized": True,
    }


def test_dask_cuda_style_reinitialize():
    # Dask-CUDA's RMMSetup plugin calls exactly this (sizes already parsed to
    # ints aligned to 256 bytes, logging off). Without a GPU the call fails
    # with rmm_rs's driver error and leaves the previous resource in place;
    # with one (or the simulated base resource) it builds the pool.
    got = run_json(
        """
import json
import rmm, rmm_rs
rmm.reinitialize(simulated_memory="64MiB")
before = rmm.mr.get_current_device_resource()
kwargs = dict(pool_allocator=True, managed_memory=True, initial_pool_size=(4 << 20) // 256 * 256,
              maximum_pool_size=None, logging=False, log_file_name=None)
result = {"gpu": rmm_rs.gpu_available()}
try:
    rmm.reinitialize(**kwargs)
    res = rmm.mr.get_current_device_resource()
    result["stack"] = [type(res).__name__, type(res.upstream_mr).__name__]
    result["pool_size"] = res.pool_size()
except rmm_rs.DriverUnavailableError as e:
    result["error"] = str(e)
    result["unchanged"] = rmm.mr.get_current_device_resource() is before
rmm.reinitialize(simulated_memory="64MiB", **kwargs)
res = rmm.mr.get_current_device_resource()
result["simulated"] = [type(res).__name__, type(res.upstream_mr).__name__, res.pool_size()]
print(json.dumps(result))
"""
    )
    if got["gpu"]:
        assert got["stack"] == ["PoolMemoryResource", "ManagedMemoryResource"]
        assert got["pool_size"] == 4 << 20
    else:
        assert got["unchanged"] is True
        assert got["error"]
    assert got["simulated"] == ["PoolMemoryResource", "SimulatedMemoryResource", 4 << 20]


def test_cudf_style_reinitialize_hooks():
    # cuDF registers a hook at import (to drop its cached device objects
    # before the resource goes away); RMM runs hooks newest first, each with
    # its own arguments, and unregistering removes every registration.
    got = run_json(
        """
import json
import rmm
calls = []
def clear_cache(tag, *, scope):
    calls.append(["clear_cache", tag, scope, type(rmm.mr.get_current_device_resource()).__name__])
def other():
    calls.append(["other"])
assert rmm.register_reinitialize_hook(clear_cache, "a", scope="x") is clear_cache
rmm.register_reinitialize_hook(other)
rmm.register_reinitialize_hook(clear_cache, "b", scope="y")
rmm.reinitialize(simulated_memory="8MiB")
first = list(calls)
calls.clear()
rmm.unregister_reinitialize_hook(clear_cache)
rmm.reinitialize(pool_allocator=True, simulated_memory="8MiB")
print(json.dumps({"first": first, "second": calls,
                  "now": type(rmm.mr.get_current_device_resource()).__name__}))
"""
    )
    # Hooks run before the new resource is built: the first call sees the
    # default resource, none has been replaced yet.
    assert [c[:3] for c in got["first"]] == [["clear_cache", "b", "y"], ["other"], ["clear_cache", "a", "x"]]
    assert got["second"] == [["other"]]
    assert got["now"] == "PoolMemoryResource"


@pytest.mark.gpu
def test_libraries_through_rmm_on_gpu():
    # On the GPU: Dask-CUDA's pool over managed memory, then the CuPy hook
    # imported by RMM's module path, allocating from that pool.
    need_module("cupy")
    got = run_json(
        """
import json
import cupy
import rmm
from rmm.allocators.cupy import rmm_cupy_allocator
import rmm_rs
rmm.reinitialize(pool_allocator=True, managed_memory=True, initial_pool_size=64 << 20)
rmm.mr.set_current_device_resource(rmm.mr.StatisticsResourceAdaptor(rmm.mr.get_current_device_resource()))
cupy.cuda.set_allocator(rmm_cupy_allocator)
a = cupy.arange(1 << 20, dtype=cupy.float64)
total = float((a * 2).sum())
stats = rmm.mr.get_current_device_resource().allocation_counts
print(json.dumps({"total": total, "hook": rmm_cupy_allocator is rmm_rs.allocators.cupy.rmm_cupy_allocator,
                  "peak": stats["peak_bytes"]}))
"""
    )
    n = 1 << 20
    assert got["total"] == float(n * (n - 1))
    assert got["hook"] is True
    assert got["peak"] >= 2 * 8 * n
