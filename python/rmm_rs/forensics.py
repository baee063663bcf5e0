"""Out-of-memory forensics: reports, observers and snapshots.

Every out-of-memory error of ``rmm_rs`` is a ``MemoryError`` whose text
ends with a report (the request, then each layer of the resource stack:
bytes reserved and in use, free bytes, the largest free block, free bytes
by stream, fragmentation, the largest live allocation sites of a tracking
adaptor), and whose attribute ``report`` is that report as an
:class:`OutOfMemoryReport` (``str()``, ``to_json()``, ``to_dict()``).

>>> import rmm_rs
>>> mr = rmm_rs.mr.LimitingResourceAdaptor(rmm_rs.mr.SimulatedMemoryResource("1GiB"), allocation_limit=4096)
>>> try:
...     mr.allocate(8192)
... except MemoryError as e:
...     report = e.report
>>> report.failed_layer, report.size
('limiting', 8192)
>>> rmm_rs.memory_snapshot(mr)["resource"]["limit_bytes"]
4096

The JSON formats (schemas ``rmm-snapshot`` and ``rmm-oom-report``) are
described in docs/snapshots.md of the repository.
"""

import json

from rmm_rs import _lib
from rmm_rs._lib import OutOfMemoryReport, add_oom_observer, last_oom_report, remove_oom_observer, write_oom_reports_to

__all__ = [
    "OutOfMemoryReport",
    "add_oom_observer",
    "last_oom_report",
    "memory_snapshot",
    "remove_oom_observer",
    "write_oom_reports_to",
]


def memory_snapshot(mr=None):
    """The snapshot of ``mr``'s resource stack (default: the current
    device's resource) as a dict of schema ``rmm-snapshot``: each layer
    from the top down (``resource``, then ``upstream`` nested) with its
    reserved, used and free bytes, chunks, blocks, counters, and the live
    allocations of a tracking adaptor in the stack."""
    if mr is None:
        from rmm_rs.mr import get_current_device_resource

        mr = get_current_device_resource()
    return json.loads(_lib.memory_snapshot_json(mr))
