"""CUDA graph capture and rmm_rs (``rmm_rs.graph``).

Capture with CuPy (``stream.begin_capture()`` / ``end_capture()``) or
PyTorch (``torch.cuda.graph``) while they allocate through
``rmm_cupy_allocator`` / ``rmm_torch_allocator``: nothing needs to be
called here. Every resource asks the driver whether the stream of an
allocation captures and, if so, serves it from a pool private to that
capture's graph (cuda_async: the driver's graph memory nodes), which stays
reserved until the graph is deleted; python/README.md, "Graph capture",
says what that means and where the limits are.

This module holds what a user may want next to that:

* ``capture_status(stream)``: the driver's capture state of a stream, a
  ``CaptureStatus(state, id)`` with ``state`` ``"none"``, ``"active"`` or
  ``"invalidated"``; ``is_capturing(stream)``;
* ``graph_memory(mr=None)``: what a resource (default: the current
  device's) keeps for graphs, as ``mr.graph_memory()``;
* ``get_capture_detection()`` / ``set_capture_detection(mode)``:
  ``"driver"`` (default; captures begun by any library are seen) or
  ``"registered"`` (only captures begun through the rmm crate);
* ``CaptureError``: what a call stopped by a capture raises (an
  ``RMMError``, so a ``RuntimeError``), naming the stream.
"""

from collections import namedtuple

from rmm_rs._lib import CaptureError, get_capture_detection, set_capture_detection
from rmm_rs._lib import capture_status as _capture_status
from rmm_rs.pylibrmm.stream import DEFAULT_STREAM

CaptureStatus = namedtuple("CaptureStatus", ["state", "id"])
CaptureStatus.__doc__ = """The capture state of a stream: ``state`` is ``"none"``,
``"active"`` (``id`` is the driver's capture id, shared by every stream
joined to the capture) or ``"invalidated"`` (``id`` is None)."""


def capture_status(stream=DEFAULT_STREAM):
    """The driver's capture state of ``stream`` (an rmm_rs ``Stream``, or a
    CuPy, PyTorch or Numba stream), a ``CaptureStatus``."""
    state, capture_id = _capture_status(stream)
    return CaptureStatus(state, capture_id)


def is_capturing(stream=DEFAULT_STREAM):
    """True while ``stream`` is being captured (an invalidated capture
    included: it must still be ended)."""
    return capture_status(stream).state != "none"


def graph_memory(mr=None):
    """What ``mr`` (default: the current device's resource) keeps for CUDA
    graphs: a dict with ``pools`` (private pools alive), ``reserved_bytes``
    (memory they hold), ``live_bytes`` (of that, handed out and not freed),
    ``graphs_alive`` (pools a graph or executable still uses),
    ``deferred_frees`` (frees of shared memory made on a capturing stream,
    done once the graph is gone) and ``bad_frees`` (frees of graph memory
    refused as misuse); None for resources without private pools
    (cuda_async's graph memory is the driver's)."""
    if mr is None:
        from rmm_rs.mr import get_current_device_resource

        mr = get_current_device_resource()
    return mr.graph_memory()


__all__ = [
    "CaptureError",
    "CaptureStatus",
    "capture_status",
    "get_capture_detection",
    "graph_memory",
    "is_capturing",
    "set_capture_detection",
]
