"""Allocation statistics and the memory profiler (``rmm.statistics``).

``enable_statistics()`` wraps the current device resource in a
``StatisticsResourceAdaptor``; ``get_statistics()`` reads its counters;
``push_statistics()`` / ``pop_statistics()`` nest scopes; ``statistics()``
is a context manager doing either; ``profiler`` (a decorator and a context
manager) records per-name calls, peak and total bytes into
``default_profiler_records``, whose ``report()`` formats them.
"""

import contextlib
import functools
import inspect
import threading
from collections import defaultdict
from dataclasses import dataclass

from rmm_rs import mr as _mr


@dataclass
class Statistics:
    """The six counters of a ``StatisticsResourceAdaptor`` scope."""

    current_bytes: int
    current_count: int
    peak_bytes: int
    peak_count: int
    total_bytes: int
    total_count: int


def _stats_mr():
    res = _mr.get_current_device_resource()
    return res if isinstance(res, _mr.StatisticsResourceAdaptor) else None


def enable_statistics():
    """Wraps the current device resource in a ``StatisticsResourceAdaptor``
    (nothing when it already is one)."""
    if _stats_mr() is None:
        _mr.set_current_device_resource(
            _mr.StatisticsResourceAdaptor(_mr.get_current_device_resource())
        )


def get_statistics():
    """The counters of the current scope, or None when statistics are off."""
    res = _stats_mr()
    return None if res is None else Statistics(**res.allocation_counts)


def push_statistics():
    """Starts a nested scope; returns the counters of the scope below (None
    when statistics are off)."""
    res = _stats_mr()
    return None if res is None else Statistics(**res.push_counters())


def pop_statistics():
    """Ends the current scope; returns its counters (None when statistics
    are off)."""
    res = _stats_mr()
    return None if res is None else Statistics(**res.pop_counters())


@contextlib.contextmanager
def statistics():
    """Statistics for the block: a new scope when statistics are on, else a
    ``StatisticsResourceAdaptor`` over the current resource, removed again
    at the end."""
    previous = None
    if push_statistics() is None:
        previous = _mr.get_current_device_resource()
        enable_statistics()
    try:
        yield
    finally:
        if previous is None:
            pop_statistics()
        else:
            _mr.set_current_device_resource(previous)


class ProfilerRecords:
    """Per-name memory records of ``profiler``."""

    @dataclass
    class MemoryRecord:
        """Calls, total and peak bytes of one name."""

        num_calls: int = 0
        memory_total: int = 0
        memory_peak: int = 0

        def add(self, memory_total, memory_peak):
            self.num_calls += 1
            self.memory_total += memory_total
            self.memory_peak = max(self.memory_peak, memory_peak)

    def __init__(self):
        self._lock = threading.Lock()
        self._records = defaultdict(ProfilerRecords.MemoryRecord)

    def add(self, name, data):
        """Adds one call of ``name`` with its ``Statistics``."""
        with self._lock:
            self._records[name].add(memory_total=data.total_bytes, memory_peak=data.peak_bytes)

    @property
    def records(self):
        """A copy: ``{name: MemoryRecord}``."""
        with self._lock:
            return {k: ProfilerRecords.MemoryRecord(**vars(v)) for k, v in self._records.items()}

    def clear(self):
        """Forgets every record."""
        with self._lock:
            self._records.clear()

    def report(self, ordered_by="memory_peak"):
        """The records as a table, largest ``ordered_by`` first (one of
        ``memory_peak``, ``memory_total``, ``num_calls``)."""
        if ordered_by not in ("memory_peak", "memory_total", "num_calls"):
            raise ValueError(f"ordered_by must be memory_peak, memory_total or num_calls, not {ordered_by!r}")
        rows = sorted(self.records.items(), key=lambda kv: getattr(kv[1], ordered_by), reverse=True)
        lines = [
            "Memory Profiling",
            "================",
            "",
            "Legends:",
            "  ncalls       - number of times the function or code block was called",
            "  memory_peak  - peak memory allocated in function or code block (in bytes)",
            "  memory_total - total memory allocated in function or code block (in bytes)",
            "",
            f"Ordered by: {ordered_by}",
            "",
            f"{'ncalls':>8} {'memory_peak':>15} {'memory_total':>15}  filename:lineno(function)",
        ]
        for name, r in rows:
            lines.append(f"{r.num_calls:>8} {r.memory_peak:>15,} {r.memory_total:>15,}  {name}")
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return self.report()


default_profiler_records = ProfilerRecords()


def _describe(obj):
    try:
        path = inspect.getsourcefile(obj)
        _, line = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", repr(obj))
    return f"{path}:{line}({obj.__qualname__})"


class profiler:
    """Records memory use per function or code block into ``records``::

        @rmm.statistics.profiler()
        def f(): ...

        with rmm.statistics.profiler(name="block"): ...

    Records only while statistics are enabled (``enable_statistics()`` or
    inside ``statistics()``).
    """

    def __init__(self, *, records=default_profiler_records, name=""):
        self._records = records
        self._name = name
        self._names = []

    def __enter__(self):
        name = self._name
        if not name:
            frame = inspect.currentframe()
            caller = frame.f_back if frame is not None else None
            name = f"{caller.f_code.co_filename}:{caller.f_lineno}" if caller is not None else "<unknown>"
            del frame, caller
        self._names.append(name)
        push_statistics()
        return self

    def __exit__(self, *exc):
        stats = pop_statistics()
        name = self._names.pop()
        if stats is not None:
            self._records.add(name=name, data=stats)
        return False

    def __call__(self, func):
        name = self._name or _describe(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            push_statistics()
            try:
                return func(*args, **kwargs)
            finally:
                stats = pop_statistics()
                if stats is not None:
                    self._records.add(name=name, data=stats)

        return wrapper


__all__ = [
    "ProfilerRecords",
    "Statistics",
    "default_profiler_records",
    "enable_statistics",
    "get_statistics",
    "pop_statistics",
    "profiler",
    "push_statistics",
    "statistics",
]
