"""CUDA graph capture through rmm_rs's allocator hooks (GPU; needs CuPy for
the CuPy tests and PyTorch for the PyTorch ones).

The probe of issue #34, as CuPy and PyTorch users write it, over every
resource kind of ``workloads/graph_resources.py``: memory a graph was
captured with stays the graph's (a private pool of the resource, or the
driver's graph memory nodes for cuda_async) and is never handed to a later
allocation while the graph can still be replayed; replays compute the right
result; memory freed inside a capture is reused inside it; the statistics,
tracking and logging adaptors see graph allocations; the memory goes back
once the graph is deleted.

CuPy runs in this process (its allocator can be swapped per test); PyTorch's
allocator is chosen once per process, so the PyTorch probes run in one
fresh interpreter (``workloads/torch_graphs.py``) that goes through every
kind in turn and reports each kind's checks as JSON.
"""

import contextlib
import gc
import json
import os
import sys

import pytest
from conftest import need_module, run_py

import rmm_rs as rmm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "workloads"))

import graph_resources as gr  # noqa: E402

pytestmark = pytest.mark.gpu

#: Replays per test, each on new input.
REPLAYS = 5


@contextlib.contextmanager
def cupy_over(kind, tmp_path):
    """CuPy allocating through a fresh ``kind`` stack (the current device's
    resource for the duration); yields (cupy, resource)."""
    cp = need_module("cupy")
    from rmm_rs.allocators.cupy import rmm_cupy_allocator

    mr = gr.make(kind, str(tmp_path))
    rmm.mr.set_current_device_resource(mr)
    cp.cuda.set_allocator(rmm_cupy_allocator)
    try:
        yield cp, mr
    finally:
        cp.cuda.Device().synchronize()
        gc.collect()
        cp.cuda.set_allocator(cp.get_default_memory_pool().malloc)


def capture(cp, stream, body):
    """``body()`` captured on ``stream`` (CuPy's default mode, relaxed);
    returns (graph, what body returned).

    Collects garbage first, as ``torch.cuda.graph`` does: a finalizer run
    by the collector during the capture can free memory of an earlier test
    through a synchronising call (``cuMemFree``, a pool's teardown), which
    invalidates the capture (seen on the H200 with the whole suite, for the
    first CuPy capture over the cuda resource)."""
    gc.collect()
    stream.begin_capture()
    try:
        out = body()
    except BaseException:
        stream.end_capture()
        raise
    return stream.end_capture(), out


@pytest.mark.parametrize("kind", gr.KINDS)
def test_cupy_freed_output_is_not_handed_out_before_replay(kind, tmp_path):
    """Issue #34's probe: capture ``y = x * 2``, free ``y``, allocate ``z``
    of the same size and fill it with 7, replay: ``z`` stays 7."""
    with cupy_over(kind, tmp_path) as (cp, mr):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.arange(gr.ELEMENTS, dtype=cp.float32)
            s.synchronize()
            g, y = capture(cp, s, lambda: x * 2)
            y_ptr = y.data.ptr
            del y
            z = cp.empty(gr.ELEMENTS, dtype=cp.float32)
            z.fill(7)
            g.launch(s)
            s.synchronize()
            wrong = int((z != 7).sum())
            assert wrong == 0, (
                f"{kind}: the replay overwrote {wrong} of z's {gr.ELEMENTS} elements "
                f"(z at {z.data.ptr:#x}, the graph's y at {y_ptr:#x})"
            )
            del g, z, x


@pytest.mark.parametrize("kind", gr.KINDS)
def test_cupy_static_output_replays_right_and_reuses_memory_inside_capture(kind, tmp_path):
    """The usual CuPy pattern: a static input and output made before the
    capture, temporaries allocated and freed inside it. A temporary freed
    inside the capture is reused by the next one of its size (the private
    pool; cuda_async's graph memory nodes decide their own addresses), and
    every replay on new input is right."""
    np = need_module("numpy")
    with cupy_over(kind, tmp_path) as (cp, mr):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.zeros(gr.ELEMENTS, dtype=cp.float32)
            out = cp.zeros(gr.ELEMENTS, dtype=cp.float32)
            s.synchronize()

            def body():
                a = x * 2
                a_ptr = a.data.ptr
                del a
                b = x + 1
                b_ptr = b.data.ptr
                out[...] = b * 3
                del b
                return a_ptr, b_ptr

            g, (a_ptr, b_ptr) = capture(cp, s, body)
            if kind not in gr.DRIVER_GRAPH_MEMORY:
                assert a_ptr == b_ptr, f"{kind}: a temporary freed in the capture was not reused in it"
            rng = np.random.default_rng(34)
            for i in range(REPLAYS):
                host = rng.standard_normal(gr.ELEMENTS).astype(np.float32)
                x.set(host, stream=s)
                g.launch(s)
                s.synchronize()
                np.testing.assert_allclose(cp.asnumpy(out), (host + 1) * 3, rtol=1e-6, err_msg=f"replay {i}")
            del g, x, out


@pytest.mark.parametrize("kind", [k for k in gr.KINDS if k not in gr.DRIVER_GRAPH_MEMORY])
def test_cupy_output_allocated_in_capture_held_across_replays(kind, tmp_path):
    """``y = x * 2`` captured and held: every replay writes the right values
    into ``y``, and arrays allocated between replays never land on ``y``."""
    np = need_module("numpy")
    with cupy_over(kind, tmp_path) as (cp, mr):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.zeros(gr.ELEMENTS, dtype=cp.float32)
            s.synchronize()
            g, y = capture(cp, s, lambda: x * 2)
            rng = np.random.default_rng(7)
            others = []
            for i in range(REPLAYS):
                host = rng.standard_normal(gr.ELEMENTS).astype(np.float32)
                x.set(host, stream=s)
                other = cp.full(gr.ELEMENTS, float(i), dtype=cp.float32)
                others.append(other)
                g.launch(s)
                s.synchronize()
                np.testing.assert_array_equal(cp.asnumpy(y), host * 2, err_msg=f"replay {i}")
                for j, o in enumerate(others):
                    assert int((o != j).sum()) == 0, f"replay {i} overwrote the array allocated before replay {j}"
            del g, y, x, others


def test_cupy_cuda_async_output_held_needs_freeing_between_launches(tmp_path):
    """cuda_async under CuPy: ``y`` allocated in the capture is a graph
    memory node that the graph does not free, and CuPy instantiates without
    CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH, so the first launch
    works and a second one while ``y`` is held is the driver's
    cudaErrorInvalidValue (documented in python/README.md)."""
    np = need_module("numpy")
    with cupy_over("cuda_async", tmp_path) as (cp, mr):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            host = np.arange(gr.ELEMENTS, dtype=np.float32)
            x = cp.asarray(host)
            s.synchronize()
            g, y = capture(cp, s, lambda: x * 2)
            g.launch(s)
            s.synchronize()
            np.testing.assert_array_equal(cp.asnumpy(y), host * 2)
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError, match="cudaErrorInvalidValue"):
                g.launch(s)
                s.synchronize()
            del y
            s.synchronize()
            del g, x


@pytest.mark.parametrize("kind", ["statistics", "tracking", "logging"])
def test_cupy_adaptors_count_graph_allocations(kind, tmp_path):
    """The adaptors above a pool see the allocations made during a capture
    (on the capturing stream) and their frees, as any other."""
    nbytes = gr.ELEMENTS * 4
    with cupy_over(kind, tmp_path) as (cp, mr):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.ones(gr.ELEMENTS, dtype=cp.float32)
            s.synchronize()
            if kind == "statistics":
                mr.push_counters()
            before = mr.get_allocated_bytes() if kind == "tracking" else None
            g, y = capture(cp, s, lambda: (x * 2) + 1)
            y_ptr = y.data.ptr
            if kind == "statistics":
                c = mr.allocation_counts
                # x * 2 (freed in the capture) and y.
                assert c["total_count"] == 2 and c["total_bytes"] == 2 * nbytes, c
                assert c["current_count"] == 1 and c["current_bytes"] == nbytes, c
            if kind == "tracking":
                assert mr.get_allocated_bytes() - before == nbytes
            g.launch(s)
            s.synchronize()
            assert float(y[0]) == 3.0
            del y
            s.synchronize()
            if kind == "statistics":
                assert mr.pop_counters()["current_bytes"] == 0
            if kind == "tracking":
                assert mr.get_allocated_bytes() == before
            if kind == "logging":
                mr.flush()
                rows = rmm.read_log(mr.get_file_name())
                mine = [r for r in rows if r[2] == y_ptr and r[3] == nbytes]
                assert [r[1] for r in mine] == ["allocate", "free"], mine
                assert mine[0][4] == s.ptr, f"logged on stream {mine[0][4]:#x}, captured on {s.ptr:#x}"
            del g, x


@pytest.mark.parametrize("kind", [k for k in gr.KINDS if k not in gr.DRIVER_GRAPH_MEMORY])
def test_cupy_graph_memory_released_after_graph_deleted(kind, tmp_path):
    """While a graph exists its private pool holds the memory it was
    captured with (``graph_memory()``); once the graph, its executable and
    every array from the capture are gone, the pool is released."""
    with cupy_over(kind, tmp_path) as (cp, mr):
        if not hasattr(mr, "graph_memory"):
            pytest.fail("this build's resources have no graph_memory()")
        # cuda and managed keep one graph memory per process (their
        # instances compare equal): earlier tests' pools go within ms.
        assert gr.wait_graph_memory_released(mr)["pools"] == 0
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.ones(gr.ELEMENTS, dtype=cp.float32)
            s.synchronize()
            g, y = capture(cp, s, lambda: x * 2)
            report = gr.graph_memory(mr)
            assert report is not None and report["pools"] >= 1, report
            assert report["reserved_bytes"] >= gr.ELEMENTS * 4, report
            assert report["live_bytes"] >= gr.ELEMENTS * 4, report
            g.launch(s)
            s.synchronize()
            del g
            gc.collect()
            # y still lives in the private pool: not released yet.
            report = gr.graph_memory(mr)
            assert report["pools"] >= 1 and report["live_bytes"] >= gr.ELEMENTS * 4, report
            del y
            s.synchronize()
            report = gr.wait_graph_memory_released(mr)
            assert report["pools"] == 0 and report["reserved_bytes"] == 0, report
            del x


def test_cupy_private_chunks_return_to_the_pool_after_graph_deleted(tmp_path):
    """A pool's graph-private chunks come out of its free memory and go
    back to it once the graph and the arrays of the capture are gone."""
    with cupy_over("pool", tmp_path) as (cp, pool):
        s = cp.cuda.Stream(non_blocking=True)
        with s:
            x = cp.ones(gr.ELEMENTS, dtype=cp.float32)
            s.synchronize()
            free_before = pool.free_bytes()
            g, y = capture(cp, s, lambda: x * 2)
            assert pool.free_bytes() <= free_before - gr.ELEMENTS * 4, (pool.free_bytes(), free_before)
            g.launch(s)
            s.synchronize()
            assert float(y.sum()) == 2.0 * gr.ELEMENTS
            del g, y
            gc.collect()
            s.synchronize()
            report = gr.wait_graph_memory_released(pool)
            assert report["pools"] == 0, report
            assert pool.free_bytes() == free_before
            del x


def test_cupy_capture_status_and_capture_error(tmp_path):
    """rmm_rs.graph sees CuPy's capture; an allocation on a stream whose
    capture an illegal call invalidated is an rmm_rs.CaptureError naming
    the stream (not a crash, not memory handed to a dead capture)."""
    with cupy_over("pool", tmp_path) as (cp, mr):
        s = cp.cuda.Stream(non_blocking=True)
        other = cp.cuda.Stream(non_blocking=True)
        assert rmm.graph.capture_status(s) == ("none", None)
        with s:
            s.begin_capture(mode=cp.cuda.runtime.streamCaptureModeGlobal)
            state, capture_id = rmm.graph.capture_status(s)
            assert state == "active" and capture_id is not None
            assert rmm.graph.is_capturing(s)
            # In global mode, synchronising another stream is illegal and
            # invalidates the capture (measured on the H200, 2026-12-02).
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
                cp.cuda.runtime.streamSynchronize(other.ptr)
            assert rmm.graph.capture_status(s).state == "invalidated"
            with pytest.raises(rmm.CaptureError, match=f"stream {s.ptr:#x}") as e:
                cp.empty(1024, dtype=cp.uint8)
            assert isinstance(e.value, RuntimeError)
            with pytest.raises(cp.cuda.runtime.CUDARuntimeError):
                s.end_capture()
        assert rmm.graph.capture_status(s).state == "none"
        # The resource works on after the failed capture.
        with s:
            a = cp.full(1000, 3, dtype=cp.int32)
            assert int(a.sum()) == 3000


def test_free_of_one_graphs_memory_during_another_capture_is_refused(tmp_path):
    """Misuse (issue #34, item 6): memory a capture allocated, freed on a
    stream that captures another graph, is refused (logged, counted in
    ``bad_frees``) and stays with its graph; nothing raises through the
    free and both captures end intact."""
    with cupy_over("pool", tmp_path) as (cp, mr):
        s1 = cp.cuda.Stream(non_blocking=True)
        s2 = cp.cuda.Stream(non_blocking=True)
        nbytes = 1 << 20
        s1.begin_capture()
        ptr = mr.allocate(nbytes, stream=rmm.Stream(s1))
        g1 = s1.end_capture()
        assert mr.graph_memory()["live_bytes"] >= nbytes
        s2.begin_capture()
        # The resources learn of a foreign capture at its first allocation
        # (frees consult only what they learnt).
        own = mr.allocate(256, stream=rmm.Stream(s2))
        mr.deallocate(ptr, nbytes, stream=rmm.Stream(s2))
        assert rmm.graph.capture_status(s2).state == "active"
        mr.deallocate(own, 256, stream=rmm.Stream(s2))
        g2 = s2.end_capture()
        report = mr.graph_memory()
        assert report["bad_frees"] == 1, report
        assert report["live_bytes"] >= nbytes, report
        g1.launch(s1)
        g2.launch(s2)
        s1.synchronize()
        s2.synchronize()
        del g1, g2


# --- PyTorch: one fresh interpreter for every kind ---------------------------


@pytest.fixture(scope="module")
def torch_results():
    """What ``workloads/torch_graphs.py`` reports for each kind: a dict of
    kind -> {check: value} or {"error": traceback}. With
    ``RMM_GRAPH_REPORT_DIR`` set, its output is also written there."""
    need_module("torch")
    out = run_py(
        f"import sys; sys.path.insert(0, {os.path.join(HERE, 'workloads')!r})\n"
        "import torch_graphs; torch_graphs.main()\n",
        # cuBLAS workspaces of 4 MiB at most (PyTorch's default on Hopper is
        # larger): the fixed-size kind serves 4 MiB blocks, no larger.
        env={"CUBLAS_WORKSPACE_CONFIG": ":4096:1", "CUBLASLT_WORKSPACE_SIZE": "1024"},
        timeout=300,
    )
    report_dir = os.environ.get("RMM_GRAPH_REPORT_DIR")
    if report_dir:
        # The GPU run keeps what each kind measured (pointers, pool counts).
        with open(os.path.join(report_dir, "torch_graphs.jsonl"), "w") as f:
            f.write(out)
    results = {}
    for line in out.strip().splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            results[row.pop("kind")] = row
    return results


def torch_result(results, kind, scenario):
    row = results.get(kind)
    assert row is not None, f"torch_graphs.py reported nothing for {kind}"
    got = row.get(scenario)
    assert got is not None, f"{kind}: no result for {scenario}: {row}"
    assert "error" not in got, f"{kind} {scenario} failed:\n{got['error']}"
    return got


@pytest.mark.parametrize("kind", gr.KINDS)
def test_torch_graph_replays_match_eager(torch_results, kind):
    """A small MLP captured with ``torch.cuda.graph`` (static input and
    output tensors) replayed on new inputs: each result equals the eager
    forward of the same input."""
    got = torch_result(torch_results, kind, "mlp")
    assert got["replays"] >= 5 and got["max_error"] <= 1e-5, got


@pytest.mark.parametrize("kind", gr.KINDS)
def test_torch_freed_output_is_not_handed_out_before_replay(torch_results, kind):
    """Issue #34's probe with ``torch.cuda.graph``: the output freed after
    the capture, a new tensor of its size filled with 7, replays: the new
    tensor stays 7."""
    got = torch_result(torch_results, kind, "probe")
    assert got["overwritten"] == 0, got


@pytest.mark.parametrize("kind", gr.KINDS)
def test_torch_graphs_sharing_a_pool_handle(torch_results, kind):
    """Two graphs captured with one ``graph_pool_handle()`` (the second
    reads the first's output) and replayed one after the other, on new
    input each time: right results."""
    got = torch_result(torch_results, kind, "shared_pool")
    assert got["replays"] >= 5 and got["max_error"] == 0.0, got


@pytest.mark.parametrize("kind", [k for k in gr.KINDS if k not in gr.DRIVER_GRAPH_MEMORY])
def test_torch_graph_memory_released_after_graphs_deleted(torch_results, kind):
    """A temporary freed inside the capture is reused inside it; private
    pools exist while the graph does and are released once the graph and
    its tensors are deleted."""
    got = torch_result(torch_results, kind, "released")
    assert got["right"] and got["reused_inside"], got
    assert got["pools_while_alive"] >= got["pools_before"] + 1, got
    assert got["pools_after"] == got["pools_before"], got
    assert got["reserved_after"] == got["reserved_before"], got


def test_torch_allocation_failure_in_capture_is_an_error(torch_results):
    """An allocation the resource refuses during ``torch.cuda.graph`` comes
    out as PyTorch's RuntimeError with rmm_rs's message (the hook throws a
    C++ exception, never a Rust panic or a null pointer), and CUDA work goes
    on after the failed capture."""
    row = torch_results.get("failure_in_capture")
    assert row is not None and "error" not in row, row
    assert row["raised"] is not None and "out_of_memory" in row["raised"], row
    assert row["after"] == 2000.0, row
