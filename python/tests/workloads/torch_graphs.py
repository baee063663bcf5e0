"""PyTorch graph capture (``torch.cuda.graph``) through rmm_rs's
``CUDAPluggableAllocator`` hook, over every kind of graph_resources.py in
turn, in one interpreter (PyTorch's allocator is chosen once per process;
the hook uses whatever resource is current at each call, so each kind runs
with its own stack current and ends with every tensor of it freed).

Prints one JSON line per kind: {"kind": ..., "<scenario>": {...}} where a
scenario's dict holds what it measured, or "error" with the traceback.
Run by test_graphs.py, which checks the numbers.

Usage: torch_graphs.py [KIND...]
"""

import gc
import json
import sys
import tempfile
import traceback

import torch

import graph_resources as gr
import rmm_rs as rmm
from rmm_rs.allocators.torch import rmm_torch_allocator

#: Replays per scenario, each on new input.
REPLAYS = 5


def settle():
    """Frees what PyTorch keeps on the side for the current resource (the
    cuBLAS workspaces are allocated through the hook, per stream, and
    kept), so that the resource can be left or its graph memory checked."""
    gc.collect()
    torch.cuda.synchronize()
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    torch.cuda.synchronize()


def mlp():
    """A small MLP captured once, replayed on new inputs, each result
    compared with the eager forward of the same input."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)
    ).cuda()
    static_x = torch.randn(64, 256, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    errors = []
    with torch.no_grad():
        with torch.cuda.stream(side):
            for _ in range(3):
                model(static_x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_y = model(static_x)
        for _ in range(REPLAYS):
            new = torch.randn(64, 256, device="cuda")
            static_x.copy_(new)
            g.replay()
            expect = model(new)
            torch.cuda.synchronize()
            errors.append(float((static_y - expect).abs().max()))
    del g, static_y, static_x, model
    return {"replays": len(errors), "max_error": max(errors)}


def probe():
    """Issue #34's probe: capture ``y = x * 2``, free ``y``, fill a new
    tensor of its size with 7, replay: count the elements overwritten."""
    x = torch.arange(gr.ELEMENTS, dtype=torch.float32, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x * 2
    y_ptr = y.data_ptr()
    del y
    z = torch.full((gr.ELEMENTS,), 7.0, device="cuda")
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    # Counted on the host: a reduction on the GPU would allocate an int64
    # copy of the mask (8 MiB), more than the fixed-size kind's blocks.
    overwritten = int((z.cpu() != 7).sum())
    z_ptr = z.data_ptr()
    del g, z, x
    return {"overwritten": overwritten, "y_ptr": y_ptr, "z_ptr": z_ptr}


def shared_pool():
    """Two graphs captured with one graph_pool_handle(), the second reading
    the first's output, replayed one after the other on new input."""
    x = torch.zeros(gr.ELEMENTS, device="cuda")
    pool = torch.cuda.graph_pool_handle()
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, pool=pool):
        y1 = x * 2
    with torch.cuda.graph(g2, pool=pool):
        y2 = y1 + 1
    errors = []
    for _ in range(REPLAYS):
        new = torch.randn(gr.ELEMENTS, device="cuda")
        x.copy_(new)
        g1.replay()
        g2.replay()
        expect = new * 2 + 1
        torch.cuda.synchronize()
        errors.append(float((y2 - expect).abs().max()))
    del g1, g2, y1, y2, x
    return {"replays": len(errors), "max_error": max(errors)}


def released(kind, log_dir, keep):
    """A capture over a fresh resource of ``kind``: its private pools while
    the graph lives, and after the graph and its tensors are deleted."""
    mr = gr.make(kind, log_dir)
    keep.append(mr)
    rmm.mr.set_current_device_resource(mr)
    # cuda and managed keep one graph memory per process: what earlier
    # scenarios left (PyTorch may cache a workspace made during a capture)
    # is the baseline.
    before = gr.wait_graph_memory_released(mr, timeout=3.0)
    x = torch.ones(gr.ELEMENTS, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        t = x * 2
        t_ptr = t.data_ptr()
        del t
        y = x + 2
    alive = gr.graph_memory(mr)
    g.replay()
    torch.cuda.synchronize()
    right = float(y.sum()) == 3.0 * gr.ELEMENTS
    reused = y.data_ptr() == t_ptr
    del g, y, x
    settle()
    after = gr.wait_graph_memory_released(mr, pools=0 if before is None else before["pools"])
    return {
        "pools_before": None if before is None else before["pools"],
        "reserved_before": None if before is None else before["reserved_bytes"],
        "right": right,
        "reused_inside": reused,
        "pools_while_alive": None if alive is None else alive["pools"],
        "reserved_while_alive": None if alive is None else alive["reserved_bytes"],
        "pools_after": None if after is None else after["pools"],
        "reserved_after": None if after is None else after["reserved_bytes"],
    }


def run_kind(kind, log_dir, keep):
    """Every scenario over a fresh stack of ``kind``; the row to print."""
    row = {"kind": kind}
    mr = gr.make(kind, log_dir)
    # Resources stay alive to the end: nothing handed out by one may be
    # freed into a dropped one.
    keep.append(mr)
    rmm.mr.set_current_device_resource(mr)
    for name, scenario in (("mlp", mlp), ("probe", probe), ("shared_pool", shared_pool)):
        try:
            row[name] = scenario()
        except Exception:
            row[name] = {"error": traceback.format_exc()}
        settle()
    row["graph_memory"] = gr.graph_memory(mr)
    try:
        row["released"] = released(kind, log_dir, keep)
    except Exception:
        row["released"] = {"error": traceback.format_exc()}
    settle()
    return row


def failure_in_capture(keep):
    """An allocation that fails during ``torch.cuda.graph`` (over a
    limiting adaptor): PyTorch raises the hook's error as a RuntimeError,
    the capture ends, and the process goes on."""
    mr = rmm.mr.LimitingResourceAdaptor(gr.make("pool"), allocation_limit="64MiB")
    keep.append(mr)
    rmm.mr.set_current_device_resource(mr)
    x = torch.ones(1000, device="cuda")
    g = torch.cuda.CUDAGraph()
    raised = None
    try:
        with torch.cuda.graph(g):
            torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    except Exception as e:  # RuntimeError from PyTorch (or the capture's end)
        raised = f"{type(e).__name__}: {e}"
    del g
    torch.cuda.synchronize()
    after = float((x * 2).sum())
    del x
    settle()
    return {"kind": "failure_in_capture", "raised": raised, "after": after}


def main(kinds=None):
    torch.cuda.memory.change_current_allocator(rmm_torch_allocator)
    log_dir = tempfile.mkdtemp(prefix="rmm-torch-graphs-")
    keep = []
    for kind in kinds or gr.KINDS:
        print(json.dumps(run_kind(kind, log_dir, keep)), flush=True)
    try:
        row = failure_in_capture(keep)
    except Exception:
        row = {"kind": "failure_in_capture", "error": traceback.format_exc()}
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or None)
