"""A CuPy workload allocating through an rmm_rs pool (under a statistics
adaptor), checked against NumPy. Run by test_cupy.py and, under
compute-sanitizer memcheck, by scripts/gpu-python.sh. Prints one line of
JSON with what the statistics adaptor saw."""

import json
import os
import sys

import cupy as cp
import numpy as np

import rmm_rs as rmm
from rmm_rs.allocators.cupy import rmm_cupy_allocator


def main(steps=20):
    # RMM_WORKLOAD_RESOURCE=cuda: plain cudaMalloc per allocation, so that
    # memcheck sees the bounds of every array (it cannot inside a pool).
    if os.environ.get("RMM_WORKLOAD_RESOURCE", "pool") == "cuda":
        base = rmm.mr.CudaMemoryResource()
    else:
        base = rmm.mr.PoolMemoryResource(rmm.mr.CudaMemoryResource(), initial_pool_size="256MiB")
    stats = rmm.mr.StatisticsResourceAdaptor(base)
    rmm.mr.set_current_device_resource(stats)
    cp.cuda.set_allocator(rmm_cupy_allocator)
    rng = np.random.default_rng(0)
    for step in range(steps):
        n = int(rng.integers(1, 2000))
        a_h = rng.standard_normal((n, 64)).astype(np.float32)
        b_h = rng.standard_normal((64, 32)).astype(np.float32)
        a, b = cp.asarray(a_h), cp.asarray(b_h)
        c = a @ b
        np.testing.assert_allclose(cp.asnumpy(c), a_h @ b_h, rtol=1e-3, atol=1e-3)
        s = cp.cumsum(cp.arange(n, dtype=cp.int64))
        assert int(s[-1]) == n * (n - 1) // 2
        # Work on a non-default stream too.
        with cp.cuda.Stream(non_blocking=True) as st:
            x = cp.sort(cp.asarray(rng.permutation(n)))
            st.synchronize()
        assert (cp.asnumpy(x) == np.arange(n)).all()
        del a, b, c, s, x
    # A DeviceBuffer seen by CuPy, and CuPy memory copied into a DeviceBuffer.
    buf = rmm.DeviceBuffer.to_device(np.arange(256, dtype=np.uint8).tobytes())
    view = cp.asarray(buf)
    assert view.dtype == cp.uint8 and int(view.sum()) == sum(range(256))
    src = cp.arange(1000, dtype=cp.float64)
    dst = rmm.DeviceBuffer(size=src.nbytes)
    dst.copy_from_device(src)
    assert np.frombuffer(dst.tobytes(), dtype=np.float64).tolist() == list(range(1000))
    cp.cuda.Device().synchronize()
    counts = dict(stats.allocation_counts)
    print(json.dumps(counts))
    return counts


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
