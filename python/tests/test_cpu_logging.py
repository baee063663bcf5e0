"""What runs without a GPU: logging to a file, reading and replaying it,
the statistics module and profiler, the logger's levels, logs flushed at
exit."""

import gc
import os
import subprocess
import sys

import pytest

import rmm_rs
import rmm_rs as rmm
from rmm_rs import mr


# --- logging to a file, reading and replaying it --------------------------------


def test_logging_adaptor_and_replay(tmp_path, sim):
    log_mr = mr.LoggingResourceAdaptor(sim, log_file_name=str(tmp_path / "events.csv"))
    # RMM's naming: the current device before the extension.
    path = tmp_path / f"events.dev{mr._current_device()}.csv"
    assert log_mr.get_file_name() == str(path)
    bufs = [rmm.DeviceBuffer(size=n, mr=log_mr) for n in (1000, 2000, 3000)]
    del bufs[1]
    with pytest.raises(MemoryError):
        log_mr.allocate("2GiB")
    del bufs
    gc.collect()
    log_mr.flush()
    events = rmm.read_log(path)
    actions = [e[1] for e in events]
    assert actions.count("allocate") == 3
    assert actions.count("free") == 3
    assert actions.count("allocate failure") == 1
    assert sorted(e[3] for e in events if e[1] == "allocate") == [1000, 2000, 3000]
    # Replay the run against a pool over another simulated device.
    target = mr.StatisticsResourceAdaptor(
        mr.PoolMemoryResource(mr.SimulatedMemoryResource("16MiB"), initial_pool_size="1MiB")
    )
    report = rmm.replay_log(path, target)
    assert report["events"] == 7
    assert report["failed_allocations"] == 0
    assert report["logged_failures"] == 1
    assert report["peak_bytes"] == 6000
    assert target.allocation_counts["total_count"] == 3
    assert target.allocation_counts["current_count"] == 0
    assert "events:" in report["report"]
    # Replaying against a device too small fails allocations, not the process.
    tiny = rmm.replay_log(path, mr.SimulatedMemoryResource(2048))
    assert tiny["failed_allocations"] >= 1


def test_logging_adaptor_env(tmp_path, sim, monkeypatch):
    monkeypatch.setenv("RMM_LOG_FILE", str(tmp_path / "env.csv"))
    log_mr = mr.LoggingResourceAdaptor(sim)
    assert log_mr.get_file_name() == str(tmp_path / f"env.dev{mr._current_device()}.csv")
    monkeypatch.delenv("RMM_LOG_FILE")
    with pytest.raises(ValueError, match="RMM_LOG_FILE"):
        mr.LoggingResourceAdaptor(sim)
    with pytest.raises(OSError):
        mr.LoggingResourceAdaptor(sim, log_file_name=str(tmp_path / "no" / "such" / "dir.csv"))


def test_bad_log_is_value_error(tmp_path, sim):
    bad = tmp_path / "bad.csv"
    bad.write_text("Thread,Time,Action,Pointer,Size,Stream\n1,x,explode,0x1,10,0x0\n")
    with pytest.raises(ValueError, match="line"):
        rmm.read_log(bad)
    with pytest.raises(OSError):
        rmm.replay_log(tmp_path / "missing.csv", sim)


def test_enable_disable_logging(tmp_path, sim):
    mr.set_current_device_resource(sim)
    mr.enable_logging(log_file_name=tmp_path / "all.csv")
    res = mr.get_current_device_resource()
    assert isinstance(res, mr.LoggingResourceAdaptor)
    assert res.upstream_mr is sim
    mr.enable_logging(log_file_name=tmp_path / "again.csv")  # already logging: unchanged
    assert mr.get_current_device_resource() is res
    dev = rmm_rs._lib._current_device()
    assert mr.get_log_filenames()[dev] == str(tmp_path / f"all.dev{dev}.csv")
    rmm.DeviceBuffer(size=10)
    mr.disable_logging()
    assert mr.get_current_device_resource() is sim
    assert mr.get_log_filenames()[dev] is None
    text = (tmp_path / f"all.dev{dev}.csv").read_text()
    assert text.count("\n") == 3


# --- statistics module and profiler --------------------------------------------


def test_statistics_module(sim):
    mr.set_current_device_resource(sim)
    assert rmm.statistics.get_statistics() is None
    assert rmm.statistics.push_statistics() is None
    with rmm.statistics.statistics():
        b = rmm.DeviceBuffer(size=1000)
        s = rmm.statistics.get_statistics()
        assert (s.current_bytes, s.current_count, s.total_bytes) == (1000, 1, 1000)
        with rmm.statistics.statistics():
            c = rmm.DeviceBuffer(size=500)
            assert rmm.statistics.get_statistics().current_bytes == 500
            del c
        s = rmm.statistics.get_statistics()
        assert (s.current_bytes, s.peak_bytes, s.total_bytes) == (1000, 1500, 1500)
        del b
    assert mr.get_current_device_resource() is sim
    rmm.statistics.enable_statistics()
    st = mr.get_current_device_resource()
    assert isinstance(st, mr.StatisticsResourceAdaptor)
    rmm.statistics.enable_statistics()
    assert mr.get_current_device_resource() is st
    before = rmm.statistics.push_statistics()
    assert before.current_bytes == 0
    x = rmm.DeviceBuffer(size=256)
    assert rmm.statistics.pop_statistics().total_bytes == 256
    del x


def test_profiler(sim):
    mr.set_current_device_resource(sim)
    records = rmm.statistics.ProfilerRecords()

    @rmm.statistics.profiler(records=records)
    def f(n):
        return rmm.DeviceBuffer(size=n)

    f(100)  # statistics off: nothing recorded
    assert records.records == {}
    rmm.statistics.enable_statistics()
    f(1000)
    f(3000)
    with rmm.statistics.profiler(records=records, name="block"):
        a = rmm.DeviceBuffer(size=2000)
        b = rmm.DeviceBuffer(size=2000)
        del a, b
    with pytest.raises(ValueError, match="a name must be provided"):
        with rmm.statistics.profiler(records=records):
            rmm.DeviceBuffer(size=10)
    recs = records.records
    fname = next(k for k in recs if "(test_profiler.<locals>.f)" in k or k.endswith(".f)"))
    assert recs[fname].num_calls == 2
    assert recs[fname].memory_peak == 3000
    assert recs[fname].memory_total == 4000
    assert recs["block"].memory_peak == 4000
    assert any(k.startswith(__file__) for k in recs)
    report = records.report()
    assert "Memory Profiling" in report and "block" in report
    assert report.index("block") < report.index(fname)  # by peak, largest first
    with pytest.raises(AttributeError):
        records.report(ordered_by="bogus")
    assert isinstance(rmm.statistics.default_profiler_records, rmm.statistics.ProfilerRecords)


# --- logging levels ---------------------------------------------------------------


def test_logging_levels():
    old = rmm.get_logging_level()
    level = rmm.level_enum
    try:
        rmm.set_logging_level(level.trace)
        assert rmm.get_logging_level() == level.trace
        assert rmm.should_log(level.debug)
        rmm.set_logging_level(level.error)
        assert rmm.get_logging_level() is level.error
        assert not rmm.should_log(level.warn)
        assert rmm.should_log(level.critical)
        rmm.set_logging_level(level.off)
        assert not rmm.should_log(level.critical)
        rmm.flush_logger()
        # As in RMM, only level_enum members are levels.
        for bad in ("trace", "loud", 2, 9, 2.0):
            with pytest.raises(TypeError, match="level_enum"):
                rmm.set_logging_level(bad)
    finally:
        rmm.set_logging_level(old)


def test_debug_log_file(tmp_path):
    # A fresh process with RMM_DEBUG_LOG_FILE: errors of the allocators land there.
    log = tmp_path / "debug.log"
    code = (
        "import rmm_rs as rmm\n"
        "sim = rmm.mr.SimulatedMemoryResource('1MiB')\n"
        "pool = rmm.mr.PoolMemoryResource(sim, initial_pool_size=0, maximum_pool_size='512KiB')\n"
        "try:\n    pool.allocate('1MiB')\nexcept MemoryError:\n    pass\n"
        "rmm.flush_logger()\n"
    )
    env = dict(os.environ, RMM_DEBUG_LOG_FILE=str(log), RMM_DEBUG_LOG_LEVEL="debug")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    text = log.read_text()
    assert "out_of_memory" in text


def test_logs_are_flushed_at_exit(tmp_path):
    """The registry keeps its resources for the whole process: a logging
    adaptor set there is flushed at exit (as RMM does with atexit)."""
    log = tmp_path / "exit.csv"
    code = (
        "import rmm_rs as rmm\n"
        f"rmm.reinitialize(logging=True, log_file_name={str(log)!r}, simulated_memory='1GiB')\n"
        "stats = rmm.mr.StatisticsResourceAdaptor(rmm.mr.get_current_device_resource())\n"
        "rmm.mr.set_current_device_resource(stats)\n"
        "keep = [rmm.DeviceBuffer(size=100) for _ in range(3)]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = (tmp_path / "exit.dev0.csv").read_text().splitlines()
    assert lines[0].startswith("Thread,Time,Action")
    assert sum(",allocate," in line for line in lines) == 3
