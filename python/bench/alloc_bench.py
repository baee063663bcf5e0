"""Allocation-heavy PyTorch and CuPy loops: their own allocators against
rmm_rs resources. A benchmark, not a test: it prints times and ratios and
never fails on a timing.

    python alloc_bench.py [--quick] [--json OUT.json]

Each configuration runs in its own process (PyTorch's allocator can only be
changed before its first CUDA allocation):

* PyTorch: ``torch`` (its caching allocator) against rmm_rs ``pool``,
  ``arena``, ``cuda_async`` (and ``cuda``, plain cudaMalloc, for scale)
  through ``rmm_torch_allocator``; two workloads: an MLP's forward and
  backward (``mlp``), and tensors of many sizes allocated and freed in a
  shuffled order (``sizes``).
* CuPy: ``cupy`` (its default memory pool) against rmm_rs ``pool`` through
  ``rmm_cupy_allocator``; one workload of arrays of many sizes with a small
  kernel on each (``arrays``).

Ratios are time / time of the library's own allocator: below 1 we are
faster, above 1 slower.
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

TORCH_CONFIGS = ["torch", "pool", "arena", "cuda_async", "cuda"]
CUPY_CONFIGS = ["cupy", "pool"]
RATIO_METRICS = {"mlp_s_per_step", "sizes_us_per_alloc", "tiny_us_per_pair", "arrays_us_per_alloc"}


def rmm_resource(kind):
    import rmm_rs as rmm

    cuda = rmm.mr.CudaMemoryResource
    if kind == "pool":
        return rmm.mr.PoolMemoryResource(cuda(), initial_pool_size="2GiB")
    if kind == "arena":
        return rmm.mr.ArenaMemoryResource(cuda(), arena_size="2GiB")
    if kind == "cuda_async":
        return rmm.mr.CudaAsyncMemoryResource()
    if kind == "cuda":
        return cuda()
    raise SystemExit(f"unknown rmm_rs resource {kind}")


def sizes_plan(n, seed=1):
    rng = random.Random(seed)
    lo, hi = math.log(1 << 10), math.log(8 << 20)
    return [int(math.exp(rng.uniform(lo, hi))) // 4 * 4 + 4 for _ in range(n)]


def best_of(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_torch(kind, quick):
    import torch

    if kind != "torch":
        import rmm_rs as rmm
        from rmm_rs.allocators.torch import rmm_torch_allocator

        rmm.mr.set_current_device_resource(rmm_resource(kind))
        torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    steps = 60 if quick else 300
    if kind == "cuda":
        steps = max(steps // 5, 10)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
        torch.nn.Linear(2048, 10),
    ).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.randn(steps, 128, 1024, device="cuda")
    labels = torch.randint(0, 10, (steps, 128), device="cuda")

    def mlp():
        for i in range(steps):
            loss = torch.nn.functional.cross_entropy(model(data[i]), labels[i])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()

    n_sizes = 2000 if quick else 10000
    if kind == "cuda":
        n_sizes //= 5
    plan = sizes_plan(n_sizes)
    order = random.Random(2)

    def sizes():
        live = []
        for n in plan:
            live.append(torch.empty(n // 4, dtype=torch.float32, device="cuda"))
            if len(live) > 64:
                live.pop(order.randrange(len(live)))
        del live[:]
        torch.cuda.synchronize()

    n_tiny = 20000

    def tiny():
        for _ in range(n_tiny):
            t = torch.empty(64, dtype=torch.float32, device="cuda")
            del t
        torch.cuda.synchronize()

    mlp()  # warm up (and grow the pools)
    sizes()
    tiny()
    result = {
        "mlp_s_per_step": best_of(mlp, 3) / steps,
        "sizes_us_per_alloc": best_of(sizes, 3) / len(plan) * 1e6,
        "tiny_us_per_pair": best_of(tiny, 3) / n_tiny * 1e6,
    }
    if kind == "torch":
        # How many allocations one MLP step asks of the allocator: what a
        # pluggable allocator is called for (the caching allocator counts
        # every request, served from its cache or not).
        before = torch.cuda.memory_stats()["allocation.all.allocated"]
        mlp()
        after = torch.cuda.memory_stats()["allocation.all.allocated"]
        result["mlp_allocs_per_step"] = (after - before) / steps
    return result


def run_cupy(kind, quick):
    import cupy as cp

    if kind == "pool":
        import rmm_rs as rmm
        from rmm_rs.allocators.cupy import rmm_cupy_allocator

        rmm.mr.set_current_device_resource(rmm_resource("pool"))
        cp.cuda.set_allocator(rmm_cupy_allocator)
    n = 3000 if quick else 20000
    plan = sizes_plan(n, seed=3)
    order = random.Random(4)

    def arrays():
        live = []
        for nbytes in plan:
            a = cp.empty(nbytes // 4, dtype=cp.float32)
            a.fill(1.0)
            live.append(a)
            if len(live) > 64:
                live.pop(order.randrange(len(live)))
        del live[:]
        cp.cuda.Device().synchronize()

    arrays()
    return {"arrays_us_per_alloc": best_of(arrays, 3) / len(plan) * 1e6}


def child(lib, kind, quick):
    result = run_torch(kind, quick) if lib == "torch" else run_cupy(kind, quick)
    print("RESULT " + json.dumps({"lib": lib, "config": kind, **result}))


def spawn(lib, kind, quick, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", lib, kind] + (["--quick"] if quick else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"lib": lib, "config": kind, "error": f"timed out after {timeout}s"}
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"lib": lib, "config": kind, "error": f"exit {out.returncode}: {out.stderr.strip()[-600:]}"}


def explain_mlp(results):
    """Where an rmm_rs configuration's extra MLP time per step goes: the
    allocations one step makes (counted under PyTorch's own allocator) times
    the extra cost of one allocate/free pair through the pluggable-allocator
    path (the ``tiny`` loop: a 256-byte tensor made and dropped, Python's and
    PyTorch's per-tensor work the same in every configuration)."""
    own = next((r for r in results if r.get("config") == "torch" and "error" not in r), None)
    if not own or "mlp_allocs_per_step" not in own:
        return
    n = own["mlp_allocs_per_step"]
    print(f"\nMLP: {n:.0f} allocations per step (PyTorch's count)")
    for r in results:
        if r.get("lib") != "torch" or r.get("config") == "torch" or "error" in r:
            continue
        extra_ms = (r["mlp_s_per_step"] - own["mlp_s_per_step"]) * 1e3
        pair_us = r["tiny_us_per_pair"] - own["tiny_us_per_pair"]
        print(
            f"  {r['config']:<11} {extra_ms:+.3f} ms per step; a pair costs {pair_us:+.2f} us more, "
            f"x {n:.0f} allocations = {n * pair_us / 1e3:+.3f} ms"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    ap.add_argument("--json", help="write all results to this file")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per configuration")
    ap.add_argument("--only", choices=["torch", "cupy"], help="one library only")
    ap.add_argument("--child", nargs=2, metavar=("LIB", "CONFIG"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.quick)
        return
    results = []
    plans = []
    if args.only in (None, "torch"):
        plans += [("torch", k) for k in TORCH_CONFIGS]
    if args.only in (None, "cupy"):
        plans += [("cupy", k) for k in CUPY_CONFIGS]
    for lib, kind in plans:
        r = spawn(lib, kind, args.quick, args.timeout)
        results.append(r)
        print(json.dumps(r), flush=True)
    print()
    print(f"{'lib':<6} {'config':<11} {'metric':<20} {'value':>12} {'ratio vs own':>13}")
    base = {}
    for r in results:
        if r["config"] in ("torch", "cupy") and "error" not in r:
            base[r["lib"]] = r
    for r in results:
        if "error" in r:
            print(f"{r['lib']:<6} {r['config']:<11} ERROR {r['error']}")
            continue
        for metric, value in r.items():
            if metric in ("lib", "config"):
                continue
            own = base.get(r["lib"], {}).get(metric)
            ratio = f"{value / own:.2f}x" if own and metric in RATIO_METRICS else "n/a"
            unit = value * 1e3 if metric.endswith("_s_per_step") else value
            label = metric.replace("_s_per_step", "_ms_per_step")
            print(f"{r['lib']:<6} {r['config']:<11} {label:<20} {unit:>12.3f} {ratio:>13}")
    explain_mlp(results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    errors = sum("error" in r for r in results)
    print(f"bench: {len(results)} configurations, {errors} failed")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
