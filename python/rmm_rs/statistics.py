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
from collections.abc import Mapping
from dataclasses import dataclass

from rmm_rs import mr as _mr

_FIELDS = ("current_bytes", "current_count", "peak_bytes", "peak_count", "total_bytes", "total_count")


@dataclass
class Statistics:
    """The six counters of a ``StatisticsResourceAdaptor`` scope, what its
    ``allocation_counts``, ``push_counters()`` and ``pop_counters()``
    return (the extension makes them through this class).

    As in RMM the counters are attributes; as in the dicts of older
    releases they are also items (``s["current_bytes"]``, ``keys()``,
    ``dict(s)``), and a ``Statistics`` equals a mapping of the six names
    with the same values.

    >>> s = Statistics(10, 1, 10, 1, 30, 2)
    >>> s.total_bytes, s["total_bytes"]
    (30, 30)
    >>> s == dict(s)
    True
    """

    current_bytes: int
    current_count: int
    peak_bytes: int
    peak_count: int
    total_bytes: int
    total_count: int

    def __getitem__(self, key):
        if key not in _FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def keys(self):
        """The six counter names."""
        return list(_FIELDS)

    def __eq__(self, other):
        if isinstance(other, Statistics):
            return all(self[k] == other[k] for k in _FIELDS)
        if isinstance(other, Mapping):
            return set(other.keys()) == set(_FIELDS) and all(self[k] == other[k] for k in _FIELDS)
        return NotImplemented


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
    return None if res is None else res.allocation_counts


def push_statistics():
    """Starts a nested scope; returns the counters of the scope below (None
    when statistics are off)."""
    res = _stats_mr()
    return None if res is None else res.push_counters()


def pop_statistics():
    """Ends the current scope; returns its counters (None when statistics
    are off)."""
    res = _stats_mr()
    return None if res is None else res.pop_counters()


@contextlib.contextmanager
def statistics():
    """Statistics for the block: a new scope when statistics are on, else a
    ``StatisticsResourceAdaptor`` over the current resource, removed again
    at the end. ``ValueError`` when the block changed the current resource
    (the adaptor must stay on top)."""
    previous = None
    if push_statistics() is None:
        previous = _mr.get_current_device_resource()
        enable_statistics()
    current = _mr.get_current_device_resource()
    try:
        yield
    finally:
        if current is not _mr.get_current_device_resource():
            raise ValueError("RMM memory source stack was changed while in the statistics context")
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
        """Adds one call of ``name`` with its ``Statistics`` (thread-safe)."""
        with self._lock:
            self._records[name].add(memory_total=data.total_bytes, memory_peak=data.peak_bytes)

    @property
    def records(self):
        """A copy: ``{name: MemoryRecord}``."""
        with self._lock:
            return {k: ProfilerRecords.MemoryRecord(**vars(v)) for k, v in self._records.items()}

    def clear(self):
        """Forgets every record (rmm_rs only)."""
        with self._lock:
            self._records.clear()

    def report(self, ordered_by="memory_peak"):
        """The records as RMM formats them, largest ``ordered_by`` first
        (``memory_peak``, ``memory_total`` or ``num_calls``).

        >>> r = ProfilerRecords()
        >>> r.add("f", Statistics(0, 0, 20, 2, 40, 4))
        >>> print(r.report().splitlines()[-1])
             1              20              40  f
        """
        rows = sorted(self.records.items(), key=lambda kv: getattr(kv[1], ordered_by), reverse=True)
        out = "Memory Profiling\n================\n\n"
        if not rows:
            return out + "No data, maybe profiling wasn't enabled?"
        out += (
            "Legends:\n"
            "  ncalls       - number of times the function or code block was called\n"
            "  memory_peak  - peak memory allocated in function or code block (in bytes)\n"
            "  memory_total - total memory allocated in function or code block (in bytes)\n"
            f"\nOrdered by: {ordered_by}\n"
            "\nncalls     memory_peak    memory_total  filename:lineno(function)\n"
        )
        lines = [f"{r.num_calls:6,d} {r.memory_peak:15,d} {r.memory_total:15,d}  {name}" for name, r in rows]
        return out + "\n".join(lines)

    def __repr__(self):
        return f"{type(self).__name__}({self.records})"

    def __str__(self):
        return self.report()


default_profiler_records = ProfilerRecords()


def _get_descriptive_name_of_object(obj):
    """``"<file>:<line>(<qualified name>)"`` of a function (of what it
    wraps, for decorated ones): the profiler's record name for it."""
    unwrapped = inspect.unwrap(obj)
    _, line = inspect.getsourcelines(unwrapped)
    return f"{inspect.getfile(unwrapped)}:{line}({unwrapped.__qualname__})"


class ProfilerContext:
    """What ``profiler()`` returns: a decorator, or (with a name) a context
    manager, recording memory statistics into ``records``."""

    def __init__(self, records, name):
        self._records = records
        self._name = name

    def __call__(self, func):
        name = self._name or _get_descriptive_name_of_object(func)

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

    def __enter__(self):
        if not self._name:
            raise ValueError("When profiler is used as a context manager, a name must be provided")
        push_statistics()
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        stats = pop_statistics()
        if stats is not None:
            self._records.add(name=self._name, data=stats)


def profiler(*, records=default_profiler_records, name=""):
    """Records memory use per function or code block into ``records``
    while statistics are enabled (``enable_statistics()`` or inside
    ``statistics()``); a no-op otherwise::

        @rmm_rs.statistics.profiler()
        def f(): ...

        with rmm_rs.statistics.profiler(name="block"): ...

    A decorated function's record is named ``file:line(function)``
    without ``name``; a context manager needs ``name``.
    """
    return ProfilerContext(records, name)
