"""Out-of-memory reports, observers and snapshots from Python, over the
simulated resource (no GPU needed); the numbers are computed from what each
test allocated."""

import json
import os

import pytest

import rmm_rs
from rmm_rs import mr


def _round(n):
    return (n + 255) // 256 * 256


def test_memory_error_carries_the_report_text_and_object():
    lim = mr.LimitingResourceAdaptor(mr.SimulatedMemoryResource("1GiB"), allocation_limit=10_000)
    p = lim.allocate(3000)
    with pytest.raises(MemoryError) as info:
        lim.allocate(8000)
    e = info.value
    report = e.report
    assert isinstance(report, rmm_rs.OutOfMemoryReport)
    assert (report.size, report.alignment, report.failed_layer) == (8000, 256, "limiting")
    assert report.layers == ["limiting", "simulated"]
    # The exception's text is the Rust error's: the message, then the report.
    assert "out_of_memory" in str(e)
    assert str(report).rstrip() in str(e)
    d = report.to_dict()
    assert d["schema"] == "rmm-oom-report" and d["version"] == 1
    assert d["request"] == {"size": 8000, "alignment": 256, "stream": "0x0"}
    layer = d["snapshot"]["resource"]
    used = lim.get_allocated_bytes()
    assert used == _round(3000)
    assert (layer["limit_bytes"], layer["used_bytes"], layer["free_bytes"]) == (10_000, used, 10_000 - used)
    assert json.loads(report.to_json()) == d
    assert rmm_rs.last_oom_report().to_dict() == d
    lim.deallocate(p, 3000)


def test_pool_report_names_the_largest_free_block():
    size = 1 << 20
    pool = mr.PoolMemoryResource(mr.SimulatedMemoryResource("1GiB"), initial_pool_size=size, maximum_pool_size=size)
    a = pool.allocate(300_000)
    b = pool.allocate(200_000)
    c = pool.allocate(100_000)
    pool.deallocate(b, 200_000)
    used = _round(300_000) + _round(100_000)
    # Free: the hole left by b, and the tail after c.
    tail = size - (_round(300_000) + _round(200_000) + _round(100_000))
    largest = max(_round(200_000), tail)
    with pytest.raises(MemoryError) as info:
        pool.allocate(largest + 256)
    layer = info.value.report.to_dict()["snapshot"]["resource"]
    assert layer["name"] == "pool"
    assert (layer["reserved_bytes"], layer["used_bytes"]) == (size, used)
    assert (layer["free_bytes"], layer["largest_free_block"]) == (size - used, largest)
    assert layer["free_bytes_by_stream"] == {"0x0": size - used}
    assert layer["fragmentation"] == pytest.approx(1 - largest / (size - used))
    pool.deallocate(a, 300_000)
    pool.deallocate(c, 100_000)


def test_memory_snapshot_of_a_stack():
    sim = mr.SimulatedMemoryResource("1GiB")
    pool = mr.PoolMemoryResource(sim, initial_pool_size="1MiB")
    tracked = mr.TrackingResourceAdaptor(pool)
    p = tracked.allocate(5000)
    snap = rmm_rs.memory_snapshot(tracked)
    assert snap["schema"] == "rmm-snapshot" and snap["version"] == 1
    names = []
    layer = snap["resource"]
    while layer is not None:
        names.append(layer["name"])
        layer = layer["upstream"]
    assert names == ["tracking", "pool", "simulated"]
    assert [(a["size"], a["address"]) for a in snap["live_allocations"]] == [(5000, hex(p))]
    pool_layer = snap["resource"]["upstream"]
    used_blocks = [b for b in pool_layer["blocks"] if b["state"] == "used"]
    assert [(b["address"], b["size"]) for b in used_blocks] == [(hex(p), _round(5000))]
    tracked.deallocate(p, 5000)


def test_memory_snapshot_defaults_to_the_current_device_resource():
    sim = mr.SimulatedMemoryResource("1GiB")
    mr.set_current_device_resource(sim)
    assert rmm_rs.memory_snapshot()["resource"]["name"] == "simulated"


def test_observer_is_called_once_per_failure_before_the_retry():
    events = []
    ask = 777_777_664

    def observer(report):
        if report.size == ask:
            events.append(("observe", report.layers[0]))

    def callback(nbytes):
        events.append(("callback", nbytes))
        return len([e for e in events if e[0] == "callback"]) < 3

    oid = rmm_rs.add_oom_observer(observer)
    try:
        fc = mr.FailureCallbackResourceAdaptor(mr.SimulatedMemoryResource("1MiB"), callback)
        with pytest.raises(MemoryError):
            fc.allocate(ask)
    finally:
        assert rmm_rs.remove_oom_observer(oid)
    assert events == [("observe", "failure_callback"), ("callback", ask)] * 3
    assert not rmm_rs.remove_oom_observer(oid)


def test_report_files_are_written_at_the_failure(tmp_path):
    ask = 555_555_584
    oid = rmm_rs.write_oom_reports_to(str(tmp_path))
    try:
        lim = mr.LimitingResourceAdaptor(mr.SimulatedMemoryResource("1GiB"), allocation_limit="1MiB")
        with pytest.raises(MemoryError):
            lim.allocate(ask)
    finally:
        rmm_rs.remove_oom_observer(oid)
    reports = [json.loads(open(os.path.join(tmp_path, f)).read()) for f in os.listdir(tmp_path)]
    mine = [r for r in reports if r["request"]["size"] == ask]
    assert len(mine) == 1
    assert mine[0]["failed_layer"] == "limiting"
    assert mine[0]["snapshot"]["resource"]["limit_bytes"] == 1 << 20


def test_replay_log_starts_from_a_snapshot(tmp_path):
    tracked = mr.TrackingResourceAdaptor(mr.SimulatedMemoryResource("1GiB"))
    kept = tracked.allocate(40_000)
    snap = json.dumps(rmm_rs.memory_snapshot(tracked))
    log = tmp_path / "after.csv"
    log.write_text(
        "Thread,Time,Action,Pointer,Size,Stream\n"
        f"1,10:00:00.000001,allocate,0x7f0000000000,10000,0x0\n"
        f"1,10:00:00.000002,free,{hex(kept)},40000,0x0\n"
        "1,10:00:00.000003,free,0x7f0000000000,10000,0x0\n"
    )
    r = rmm_rs.replay_log(str(log), mr.SimulatedMemoryResource("1GiB"), snapshot=snap)
    assert (r["preloaded_allocations"], r["unmatched_frees"], r["peak_bytes"]) == (1, 0, 50_000)
    plain = rmm_rs.replay_log(str(log), mr.SimulatedMemoryResource("1GiB"))
    assert (plain["unmatched_frees"], plain["peak_bytes"]) == (1, 10_000)
    tracked.deallocate(kept, 40_000)
