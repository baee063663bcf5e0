"""The Python soak: worker threads allocate through CuPy's allocator hook,
PyTorch's allocator hook, or rmm_rs's own DeviceBuffer, while one more
thread swaps the device's current resource every millisecond. Run by
test_soak.py, each run in a fresh process (PyTorch's allocator can be set
once per process). Prints one line of JSON: what was done, what went wrong.

Usage: soak_workload.py SECONDS LIBRARY[,LIBRARY...] [THREADS]
with LIBRARY one of cupy, torch, buffer (buffer alone runs without a GPU,
over simulated resources).

Which resources are swapped in, and why:

* CuPy alone (and buffer): unrelated resources (a pool, the driver's pool,
  an arena, binning, managed memory), each under a statistics adaptor.
  Every buffer holds the resource that allocated it and is freed there,
  whatever is current by then.
* With PyTorch: PyTorch's hook frees through the *current* resource (see
  README, "Lifetimes": RMM's rule is not to change the resource under live
  tensors). So the swapped resources are one statistics adaptor over one
  pool and two failure-callback adaptors over that statistics adaptor:
  each frees correctly what any of them allocated, and the statistics
  adaptor sees every allocation and free, whichever is current.

Content: each allocation is filled with its own byte and about one in four
is read back on the host before it is dropped. At the end every statistics
adaptor must count the bytes it counted before the threads started
(nothing lost), and no thread may have raised.
"""

import gc
import json
import random
import sys
import threading
import time

import rmm_rs as rmm

MAX_BYTES = 1 << 20
HELD = 8


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {"allocations": 0, "checked": 0, "mismatches": 0, "swaps": 0}
        self.errors = []

    def add(self, key, n=1):
        with self.lock:
            self.counts[key] += n

    def error(self, where, e):
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(f"{where}: {e!r}")


def _cupy_alloc(cp, n, value):
    return cp.full(n, value, dtype=cp.uint8)


def _cupy_check(cp, x, value):
    return bool((cp.asnumpy(x) == value).all())


def _torch_alloc(torch, n, value):
    return torch.full((n,), value, dtype=torch.uint8, device="cuda")


def _torch_check(torch, x, value):
    return bool((x.cpu() == value).all())


def _library(name):
    """(module, stream context factory, allocate, check) for a library."""
    if name == "cupy":
        import cupy as cp

        return cp, (lambda: cp.cuda.Stream(non_blocking=True)), _cupy_alloc, _cupy_check
    if name == "torch":
        import torch

        return torch, (lambda: torch.cuda.stream(torch.cuda.Stream())), _torch_alloc, _torch_check
    if name == "buffer":
        import contextlib

        return (
            None,
            contextlib.nullcontext,
            lambda _m, n, _v: rmm.DeviceBuffer(size=n),
            None,  # simulated memory cannot be read
        )
    raise SystemExit(f"unknown library {name}")


def worker(t, library, deadline, tally):
    module, stream_ctx, alloc, check = _library(library)
    rng = random.Random(t)
    held = []
    try:
        with stream_ctx():
            while time.monotonic() < deadline:
                n = rng.randrange(1, MAX_BYTES)
                value = rng.randrange(1, 256)
                held.append((alloc(module, n, value), value))
                tally.add("allocations")
                if len(held) > HELD or rng.random() < 0.5:
                    x, value = held.pop(rng.randrange(len(held)))
                    if check is not None and rng.random() < 0.25:
                        tally.add("checked")
                        if not check(module, x, value):
                            tally.add("mismatches")
                    del x
            held.clear()
    except Exception as e:  # reported in the JSON line, failing the test
        tally.error(f"{library} thread {t}", e)
        held.clear()


def swapper(resources, stop, tally):
    i = 0
    try:
        while not stop.is_set():
            rmm.mr.set_current_device_resource(resources[i % len(resources)])
            tally.add("swaps")
            i += 1
            time.sleep(0.001)
    except Exception as e:
        tally.error("swapper", e)


def resources_for(libraries):
    """(the resources to swap in, the statistics adaptors that count them)."""
    if "buffer" in libraries:
        sim = rmm.mr.SimulatedMemoryResource("64GiB")
        bases = [sim, rmm.mr.PoolMemoryResource(sim, initial_pool_size="256MiB"),
                 rmm.mr.BinningMemoryResource(sim, 10, 20)]
        stats = [rmm.mr.StatisticsResourceAdaptor(b) for b in bases]
        return stats, stats
    if "torch" in libraries:
        pool = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size="1GiB")
        stats = rmm.mr.StatisticsResourceAdaptor(pool)
        never = lambda _bytes: False  # noqa: E731
        return [stats, rmm.mr.FailureCallbackResourceAdaptor(stats, never),
                rmm.mr.FailureCallbackResourceAdaptor(stats, never)], [stats]
    cuda = rmm.mr.CudaMemoryResource()
    bases = [
        rmm.mr.PoolMemoryResource(cuda, initial_pool_size="512MiB"),
        rmm.mr.CudaAsyncMemoryResource(),
        rmm.mr.ArenaMemoryResource(cuda, arena_size="512MiB"),
        rmm.mr.BinningMemoryResource(rmm.mr.CudaAsyncMemoryResource(), 10, 20),
        rmm.mr.ManagedMemoryResource(),
    ]
    stats = [rmm.mr.StatisticsResourceAdaptor(b) for b in bases]
    return stats, stats


def install_hooks(libraries):
    if "cupy" in libraries:
        import cupy as cp
        from rmm_rs.allocators.cupy import rmm_cupy_allocator

        cp.cuda.set_allocator(rmm_cupy_allocator)
    if "torch" in libraries:
        import torch
        from rmm_rs.allocators.torch import rmm_torch_allocator

        torch.cuda.memory.change_current_allocator(rmm_torch_allocator)


def synchronize(libraries):
    if "cupy" in libraries:
        import cupy as cp

        cp.cuda.Device().synchronize()
    if "torch" in libraries:
        import torch

        torch.cuda.synchronize()


def main(seconds, libraries, threads=8):
    original = rmm.mr.get_current_device_resource()
    swapped, counters = resources_for(libraries)
    rmm.mr.set_current_device_resource(swapped[0])
    install_hooks(libraries)
    # A first round on this thread, so that what a library keeps for good
    # (handles, workspaces) is counted before the baseline.
    for library in libraries:
        worker(-1, library, time.monotonic() + 0.2, Tally())
    synchronize(libraries)
    gc.collect()
    baseline = [s.allocation_counts["current_bytes"] for s in counters]
    tally = Tally()
    stop = threading.Event()
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    pool = [threading.Thread(target=swapper, args=(swapped, stop, tally))]
    pool += [
        threading.Thread(target=worker, args=(t, libraries[t % len(libraries)], deadline, tally))
        for t in range(threads)
    ]
    for th in pool:
        th.start()
    for th in pool[1:]:
        th.join(timeout=seconds + 60)
    stop.set()
    pool[0].join(timeout=60)
    hung = [th.name for th in pool if th.is_alive()]
    synchronize(libraries)
    gc.collect()
    rmm.mr.set_current_device_resource(original)
    result = dict(tally.counts)
    result.update(
        seconds=round(time.monotonic() - started, 1),
        threads=threads,
        libraries=libraries,
        errors=tally.errors,
        hung=hung,
        baseline_bytes=baseline,
        current_bytes=[s.allocation_counts["current_bytes"] for s in counters],
        total_counts=[s.allocation_counts["total_count"] for s in counters],
    )
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main(float(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3]) if len(sys.argv) > 3 else 8)
