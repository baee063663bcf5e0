"""Shared set-up of the rmm_rs tests.

* ``@pytest.mark.gpu`` tests need a CUDA GPU. Without one they skip, unless
  ``RMM_REQUIRE_GPU=1``, which turns the skip into a failure (the GPU
  machine runs with it, so it can never pass by skipping).
* ``@pytest.mark.gpus(2)`` needs that many GPUs; it skips with fewer unless
  ``RMM_REQUIRE_GPUS`` asks for at least as many.
* ``need_module(name)`` imports an optional library (CuPy, PyTorch, Numba):
  skipped when missing, failed when ``RMM_REQUIRE_MODULES`` lists it.
* Every test gets the per-device registry back as it found it.
"""

import os

import pytest

import rmm_rs


def _gpu_reason():
    return rmm_rs.gpu_unavailable_reason()


def require_gpu():
    return os.environ.get("RMM_REQUIRE_GPU") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU")
    config.addinivalue_line("markers", "gpus(n): needs n CUDA GPUs")


def pytest_report_header(config):
    reason = _gpu_reason()
    if reason is None:
        return f"rmm_rs {rmm_rs.__version__}: {rmm_rs.device_count()} GPU(s)"
    return f"rmm_rs {rmm_rs.__version__}: NO GPU ({reason}); GPU tests skip"


def _gpu_need(item):
    """(needed GPUs, why they are missing or None, whether required)."""
    needs = 1 if item.get_closest_marker("gpu") else 0
    m = item.get_closest_marker("gpus")
    if m is not None:
        needs = max(needs, int(m.args[0]))
    if needs == 0:
        return 0, None, False
    reason = _gpu_reason()
    count = rmm_rs.device_count() if reason is None else 0
    if count >= needs:
        return needs, None, False
    why = reason if reason is not None else f"{count} GPU(s), the test needs {needs}"
    required_gpus = int(os.environ.get("RMM_REQUIRE_GPUS", "0") or 0)
    required = require_gpu() if needs == 1 else required_gpus >= needs
    return needs, why, required


def pytest_collection_modifyitems(config, items):
    # Skips are attached to the tests themselves, so that pytest's summary
    # names each skipped test file and line.
    for item in items:
        needs, why, required = _gpu_need(item)
        if why is not None and not required:
            item.add_marker(pytest.mark.skip(reason=f"GPU test, no GPU: {why}" if needs == 1 else f"needs {needs} GPUs: {why}"))


def pytest_runtest_setup(item):
    needs, why, required = _gpu_need(item)
    if why is not None and required:
        pytest.fail(f"GPU required (RMM_REQUIRE_GPU=1 / RMM_REQUIRE_GPUS) but unavailable: {why}")


def need_module(name):
    """Imports ``name``; skips the test without it, or fails when
    ``RMM_REQUIRE_MODULES`` (comma-separated) lists it."""
    required = {m.strip() for m in os.environ.get("RMM_REQUIRE_MODULES", "").split(",") if m.strip()}
    try:
        return __import__(name)
    except Exception as e:  # ImportError, or a broken install
        if name in required:
            pytest.fail(f"{name} is required (RMM_REQUIRE_MODULES) but cannot be imported: {e!r}")
        pytest.skip(f"{name} not importable: {e!r}")


@pytest.fixture(autouse=True)
def _restore_registry():
    """Puts every device's resource back after the test."""
    from rmm_rs.pylibrmm.memory_resource import _registry as registry

    saved = dict(registry._per_device_mrs)
    yield
    for device in list(registry._per_device_mrs):
        if device in saved:
            registry.set_per_device_resource(device, saved[device])
        else:
            registry._reset_per_device_resource(device)


@pytest.fixture
def sim():
    """A simulated device of 1 GiB."""
    return rmm_rs.mr.SimulatedMemoryResource("1GiB")


def run_py(code, env=None, timeout=600):
    """Runs ``code`` in a fresh interpreter (allocator hooks are
    process-wide and set once); returns its stdout, failing the test with
    its stderr when it exits non-zero."""
    import subprocess
    import sys

    full_env = dict(os.environ)
    full_env.update(env or {})
    out = subprocess.run(
        [sys.executable, "-c", code], env=full_env, capture_output=True, text=True, timeout=timeout
    )
    if out.returncode != 0:
        pytest.fail(
            f"subprocess exited {out.returncode}\n--- stdout ---\n{out.stdout[-4000:]}"
            f"\n--- stderr ---\n{out.stderr[-8000:]}"
        )
    return out.stdout
