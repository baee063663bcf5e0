"""The Python soak (issue #37): threads allocating through the CuPy and
PyTorch allocator hooks while another thread swaps the current resource
(see workloads/soak_workload.py for what is swapped and why). GPU tests
need CuPy or PyTorch; a CPU twin runs rmm_rs's own buffers over simulated
resources.

``RMM_SOAK_SECONDS`` (default 20) is the length of each GPU run; the CPU
twin runs 2 s. Each run is a fresh process: PyTorch's allocator can be
changed only once per process.
"""

import json
import os

import pytest
from conftest import need_module, run_py

HERE = os.path.dirname(os.path.abspath(__file__))


def _seconds():
    return float(os.environ.get("RMM_SOAK_SECONDS", "20"))


def _soak(seconds, libraries, threads=8):
    out = run_py(
        f"import sys; sys.path.insert(0, {os.path.join(HERE, 'workloads')!r})\n"
        f"import soak_workload; soak_workload.main({seconds!r}, {libraries!r}, {threads!r})\n",
        timeout=seconds + 180,
    )
    r = json.loads(out.strip().splitlines()[-1])
    print(json.dumps(r))
    assert r["errors"] == [], r
    assert r["hung"] == [], r
    assert r["mismatches"] == 0, r
    # Every byte handed out came back to the resource that counted it.
    assert r["current_bytes"] == r["baseline_bytes"], r
    assert r["allocations"] > 10 * threads, r
    assert r["swaps"] > 10, r
    return r


@pytest.mark.gpu
def test_cupy_soak_while_the_current_resource_swaps():
    need_module("cupy")
    r = _soak(_seconds(), ["cupy"])
    assert r["checked"] > 0, r


@pytest.mark.gpu
def test_cupy_and_torch_soak_while_the_current_resource_swaps():
    need_module("cupy")
    need_module("torch")
    r = _soak(_seconds(), ["cupy", "torch"])
    assert r["checked"] > 0, r


def test_buffer_soak_over_simulated_resources_while_they_swap():
    _soak(2.0, ["buffer"])
