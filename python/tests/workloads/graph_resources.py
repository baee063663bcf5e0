"""The resource stacks the graph-capture tests run over, by name (one home
for test_graphs.py and torch_graphs.py).

Every stack serves an array of ``ELEMENTS`` float32 values (4 MiB), the
size of the probe in issue #34, from the resource kind under test: the
fixed-size resource has 4 MiB blocks, the binning resource a 4 MiB bin.
"""

import itertools
import os

import rmm_rs as rmm

#: Numbers the logging adaptors' files, one file per adaptor.
_LOG_NUMBER = itertools.count()

#: Elements of the arrays the probes allocate (float32: 4 MiB).
ELEMENTS = 1 << 20

#: Every resource kind the graph tests cover: the driver resources, the
#: sub-allocators over cuMemAlloc, a resource of Python callbacks (over
#: cuMemAlloc), and adaptor stacks over a pool (prefetch: over managed).
KINDS = [
    "cuda",
    "managed",
    "cuda_async",
    "pool",
    "arena",
    "binning",
    "fixed_size",
    "callback",
    "statistics",
    "tracking",
    "logging",
    "limiting",
    "prefetch",
]

#: The kinds whose allocations under capture become the driver's graph
#: memory nodes (no private pool of rmm_rs).
DRIVER_GRAPH_MEMORY = {"cuda_async"}


def make(kind, log_dir=None):
    """A fresh resource stack of ``kind`` (``log_dir``: where the logging
    adaptor writes; the current directory when None)."""
    cuda = rmm.mr.CudaMemoryResource
    if kind == "cuda":
        return cuda()
    if kind == "managed":
        return rmm.mr.ManagedMemoryResource()
    if kind == "cuda_async":
        return rmm.mr.CudaAsyncMemoryResource()
    if kind == "pool":
        return rmm.mr.PoolMemoryResource(cuda(), initial_pool_size="64MiB")
    if kind == "arena":
        return rmm.mr.ArenaMemoryResource(cuda(), arena_size="256MiB")
    if kind == "binning":
        return rmm.mr.BinningMemoryResource(
            rmm.mr.PoolMemoryResource(cuda(), initial_pool_size="64MiB"), 10, 22
        )
    if kind == "fixed_size":
        return rmm.mr.FixedSizeMemoryResource(cuda(), block_size="4MiB", blocks_to_preallocate=8)
    if kind == "callback":
        base = cuda()
        return rmm.mr.CallbackMemoryResource(
            lambda nbytes, stream: base.allocate(nbytes, stream),
            lambda ptr, nbytes, stream: base.deallocate(ptr, nbytes, stream),
        )
    if kind == "prefetch":
        return rmm.mr.PrefetchResourceAdaptor(rmm.mr.ManagedMemoryResource())
    pool = rmm.mr.PoolMemoryResource(cuda(), initial_pool_size="64MiB")
    if kind == "limiting":
        return rmm.mr.LimitingResourceAdaptor(pool, allocation_limit="1GiB")
    if kind == "statistics":
        return rmm.mr.StatisticsResourceAdaptor(pool)
    if kind == "tracking":
        return rmm.mr.TrackingResourceAdaptor(pool)
    if kind == "logging":
        name = os.path.join(log_dir or os.getcwd(), f"graph-capture-{next(_LOG_NUMBER)}.csv")
        return rmm.mr.LoggingResourceAdaptor(pool, log_file_name=name)
    raise ValueError(f"unknown resource kind {kind!r}")


def graph_memory(mr):
    """``mr.graph_memory()`` (a dict, or None where the resource keeps no
    private pools), or None when this build has no such method."""
    method = getattr(mr, "graph_memory", None)
    return None if method is None else method()


def wait_graph_memory_released(mr, timeout=5.0, pools=0):
    """Polls ``mr.graph_memory()`` until at most ``pools`` private pools
    are left (the driver destroys a graph's user objects asynchronously,
    within milliseconds of the graph and its executable, and a release
    waits up to 1 s while the process has captures registered); returns
    the last report."""
    import time

    deadline = time.monotonic() + timeout
    report = graph_memory(mr)
    while report is not None and report["pools"] > pools and time.monotonic() < deadline:
        time.sleep(0.01)
        report = graph_memory(mr)
    return report
