"""A PyTorch workload (an MLP's forward and backward, and tensors of many
sizes) allocating through an rmm_rs resource, checked against the same
computation on the CPU. Run by test_torch.py. Prints one line of JSON with
what the statistics adaptor saw.

Usage: torch_workload.py [pool|arena|cuda_async|managed] [steps]
"""

import json
import sys

import torch

import rmm_rs as rmm
from rmm_rs.allocators.torch import rmm_torch_allocator


def make(kind):
    cuda = rmm.mr.CudaMemoryResource
    if kind == "pool":
        return rmm.mr.PoolMemoryResource(cuda(), initial_pool_size="512MiB")
    if kind == "arena":
        return rmm.mr.ArenaMemoryResource(cuda(), arena_size="1GiB")
    if kind == "cuda_async":
        return rmm.mr.CudaAsyncMemoryResource()
    if kind == "managed":
        return rmm.mr.ManagedMemoryResource()
    raise SystemExit(f"unknown resource {kind}")


def main(kind="pool", steps=30):
    stats = rmm.mr.StatisticsResourceAdaptor(make(kind))
    rmm.mr.set_current_device_resource(stats)
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    torch.manual_seed(0)
    model_cpu = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    )
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).cuda()
    model.load_state_dict(model_cpu.state_dict())
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    opt_cpu = torch.optim.SGD(model_cpu.parameters(), lr=0.01)
    for step in range(steps):
        x = torch.randn(64, 256)
        y = torch.randint(0, 10, (64,))
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_cpu = torch.nn.functional.cross_entropy(model_cpu(x), y)
        opt_cpu.zero_grad()
        loss_cpu.backward()
        opt_cpu.step()
        assert abs(float(loss) - float(loss_cpu)) < 1e-3, (step, float(loss), float(loss_cpu))
    for p_gpu, p_cpu in zip(model.parameters(), model_cpu.parameters()):
        assert torch.allclose(p_gpu.cpu(), p_cpu, atol=1e-4)
    # Tensors of many sizes, freed in a scrambled order.
    held = []
    for i in range(200):
        n = (i * 7919) % 50000 + 1
        t = torch.full((n,), float(i), device="cuda")
        held.append((t, n, i))
        if i % 3 == 0:
            held.pop(len(held) // 2)
    for t, n, i in held:
        assert float(t.sum()) == float(i) * n
    del held
    torch.cuda.synchronize()
    counts = dict(stats.allocation_counts)
    print(json.dumps(counts))
    return counts


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "pool", int(sys.argv[2]) if len(sys.argv) > 2 else 30)
