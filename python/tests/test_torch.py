"""PyTorch allocating through rmm_rs's CUDAPluggableAllocator hook (GPU;
needs PyTorch). Each run is a fresh process: PyTorch's allocator can only
be changed before its first CUDA allocation."""

import json
import os

import pytest
from conftest import need_module, run_py

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("kind", ["pool", "arena", "cuda_async", "managed"])
def test_torch_mlp_through(kind):
    need_module("torch")
    out = run_py(
        f"import sys; sys.path.insert(0, {os.path.join(HERE, 'workloads')!r})\n"
        f"import torch_workload; torch_workload.main({kind!r}, 20)\n"
    )
    counts = json.loads(out.strip().splitlines()[-1])
    assert counts["total_count"] > 100
    assert counts["peak_bytes"] > 1 << 20


def test_torch_hook_failure_is_an_error_not_a_crash():
    need_module("torch")
    out = run_py(
        "import rmm_rs as rmm, torch\n"
        "from rmm_rs.allocators.torch import rmm_torch_allocator\n"
        "lim = rmm.mr.LimitingResourceAdaptor(rmm.mr.CudaMemoryResource(), allocation_limit='64MiB')\n"
        "rmm.mr.set_current_device_resource(lim)\n"
        "torch.cuda.memory.change_current_allocator(rmm_torch_allocator)\n"
        "ok = torch.ones(1000, device='cuda')\n"
        "try:\n"
        "    torch.empty(1 << 30, dtype=torch.uint8, device='cuda')\n"
        "    print('no error')\n"
        "except (RuntimeError, MemoryError) as e:\n"
        "    print('raised', type(e).__name__, 'out_of_memory' in str(e))\n"
        "torch.cuda.synchronize()\n"
        "print(float(ok.sum()), float(torch.ones(10, device='cuda').sum()))\n"
    )
    lines = out.strip().splitlines()
    # PyTorch raises the C++ bad_alloc of rmm_rs_torch_allocate; the CUDA
    # context stays healthy (no tensor at address 0).
    assert lines[0].startswith("raised") and lines[0].endswith("True"), out
    assert lines[-1] == "1000.0 10.0"


def test_torch_out_of_memory_carries_the_report_text():
    need_module("torch")
    out = run_py(
        "import rmm_rs as rmm, torch\n"
        "from rmm_rs.allocators.torch import rmm_torch_allocator\n"
        "pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size='64MiB', "
        "maximum_pool_size='64MiB')\n"
        "rmm.mr.set_current_device_resource(pool)\n"
        "torch.cuda.memory.change_current_allocator(rmm_torch_allocator)\n"
        "ok = torch.ones(1000, device='cuda')\n"
        "try:\n"
        "    torch.empty(1 << 30, dtype=torch.uint8, device='cuda')\n"
        "    print('no error')\n"
        "except (RuntimeError, MemoryError) as e:\n"
        "    text = str(e)\n"
        "    print('raised', 'out-of-memory report' in text, 'refused by pool' in text)\n"
        "r = rmm.last_oom_report()\n"
        "print('last', r.failed_layer, r.size >= 1 << 30)\n"
    )
    lines = out.strip().splitlines()
    # The C++ exception of rmm_rs_torch_allocate carries the error's text,
    # the report included; rmm_rs.last_oom_report() gives the report.
    assert lines[0] == "raised True True", out
    # PyTorch may round the request up.
    assert lines[1] == "last pool True", out
