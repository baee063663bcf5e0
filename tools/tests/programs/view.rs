//! The data of `rmm-report view`'s page: the columns decode back to the log's
//! allocations, snapshots and out-of-memory reports are read per their
//! schema (and refused otherwise), and nothing in the data can close the
//! page's script elements.

use rmm_tools::report::csv::parse_memlog;
use rmm_tools::report::timeline::Timeline;
use rmm_tools::report::view::{attach_reports, render_page, ViewRun};
use serde_json::{json, Value};

/// Decodes one varint column of a run.
fn column(run: &ViewRun, name: &str) -> Vec<u64> {
    let (_, offset, len, count) = run.columns.index.iter().find(|c| c.0 == name).cloned().unwrap();
    let bytes = &run.columns.bytes[offset..offset + len];
    let (mut out, mut at) = (Vec::new(), 0);
    while at < bytes.len() {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let b = bytes[at];
            at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        out.push(v);
    }
    assert_eq!(out.len(), count, "{name}");
    out
}

fn running(deltas: &[u64]) -> Vec<u64> {
    deltas
        .iter()
        .scan(0u64, |acc, d| {
            *acc += d;
            Some(*acc)
        })
        .collect()
}

fn unzigzag_running(values: &[u64]) -> Vec<i64> {
    values
        .iter()
        .scan(0i64, |acc, &v| {
            *acc += ((v >> 1) as i64) ^ -((v & 1) as i64);
            Some(*acc)
        })
        .collect()
}

const LOG: &str = "Thread,Time,Action,Pointer,Size,Stream\n\
    7,10:00:00.000001,allocate,0x7f0000001000,4096,0x0\n\
    8,10:00:00.000005,allocate,0x7f0000000000,256,0x5\n\
    7,10:00:00.000009,free,0x7f0000001000,4096,0x0\n\
    8,10:00:00.000010,allocate failure,0x0,1048576,0x5\n\
    7,10:00:00.000020,allocate,0x7f0000002000,512,0x0\n";

#[test]
fn columns_decode_to_the_logs_allocations() {
    let log = parse_memlog(LOG, "log.csv").unwrap();
    let tl = Timeline::from_log(&log);
    let run = ViewRun::from_log("log.csv", &log).unwrap();
    assert_eq!(running(&column(&run, "ev_time_us")), [0, 4, 8, 9, 19]);
    assert_eq!(unzigzag_running(&column(&run, "ev_line")), [2, 3, 4, 5, 6]);
    let starts = running(&column(&run, "a_start"));
    assert_eq!(
        starts,
        tl.allocations.iter().map(|a| a.start as u64).collect::<Vec<_>>()
    );
    assert_eq!(column(&run, "a_life"), [2, 0, 0]);
    let base = 0x7f00_0000_0000i64;
    let addrs: Vec<i64> = unzigzag_running(&column(&run, "a_addr"))
        .iter()
        .map(|o| o + base)
        .collect();
    assert_eq!(addrs, [0x7f00_0000_1000, 0x7f00_0000_0000, 0x7f00_0000_2000]);
    assert_eq!(column(&run, "a_size"), [4096, 256, 512]);
    assert_eq!(column(&run, "a_thread"), [0, 1, 0]);
    let streams: Vec<String> = column(&run, "a_stream")
        .iter()
        .map(|&s| run.header["streams"][s as usize].as_str().unwrap().to_string())
        .collect();
    assert_eq!(streams, ["0x0", "0x5", "0x0"]);
    assert_eq!(run.header["threads"], json!(["7", "8"]));
    assert_eq!(run.header["base"], "0x7f0000000000");
    let failure = &run.header["failures"][0];
    assert_eq!(
        (failure["event"].as_u64(), failure["size"].as_u64()),
        (Some(3), Some(1_048_576))
    );
    assert_eq!(failure["line"], 5);
    assert!((run.header["start_of_day"].as_f64().unwrap() - 36_000.000_001).abs() < 1e-6);
}

fn report(time: &str, size: u64) -> Value {
    json!({ "schema": "rmm-oom-report", "version": 1, "time": time, "unix_time_ns": 0,
            "request": { "size": size, "alignment": 256, "stream": "0x5" }, "failed_layer": "pool",
            "snapshot": null, "largest_live_sites": [] })
}

#[test]
fn reports_match_failures_by_size_and_time() {
    let log = parse_memlog(LOG, "log.csv").unwrap();
    let mut run = ViewRun::from_log("log.csv", &log).unwrap();
    let reports = vec![
        ("other.json".to_string(), report("10:00:00.000011", 999)),
        ("oom.json".to_string(), report("10:00:00.000010", 1_048_576)),
    ];
    attach_reports(&mut run, &reports).unwrap();
    assert_eq!(run.header["failures"][0]["report"], 1);
    assert_eq!(run.header["reports"][0]["failure"], Value::Null);
    assert!((run.header["reports"][0]["time"].as_f64().unwrap() - 0.000_010).abs() < 1e-9);
    let mut wrong = report("10:00:00.000010", 1);
    wrong["schema"] = json!("rmm-snapshot");
    let err = attach_reports(&mut run, &[("w.json".to_string(), wrong)]).unwrap_err();
    assert!(err.to_string().contains("expected `rmm-oom-report`"), "{err}");
    let mut newer = report("10:00:00.000010", 1);
    newer["version"] = json!(2);
    let err = attach_reports(&mut run, &[("n.json".to_string(), newer)]).unwrap_err();
    assert!(err.to_string().contains("version"), "{err}");
}

fn snapshot() -> Value {
    json!({ "schema": "rmm-snapshot", "version": 1, "time": "14:02:07.200000", "unix_time_ns": 0, "device": 0,
        "resource": { "name": "pool", "type": "PoolMemoryResource", "reserved_bytes": 1048576, "used_bytes": 8192,
            "free_bytes": 1040384, "largest_free_block": 1040384, "fragmentation": 0.0,
            "free_bytes_by_stream": { "0x0": 1040384 }, "chunks": [], "blocks": [],
            "graph_memory": null, "counters": null, "upstream": null },
        "live_allocations": [
            { "address": "0x7f00002000", "size": 4096, "stream": "0x0", "thread": 2, "time": "14:02:07.150000", "backtrace": null },
            { "address": "0x7f00001000", "size": 4096, "stream": "0x0", "thread": 1, "time": "14:02:07.100000",
              "backtrace": ["main", "</script><b>"] } ] })
}

#[test]
fn snapshots_become_live_allocations_with_backtraces() {
    let run = ViewRun::from_snapshot("snap.json", &snapshot()).unwrap();
    assert_eq!(run.header["kind"], "snapshot");
    assert_eq!(run.header["events"], 3);
    assert_eq!(running(&column(&run, "ev_time_us")), [0, 50_000, 100_000]);
    assert_eq!(column(&run, "a_life"), [0, 0], "live at the snapshot");
    assert_eq!(run.header["threads"], json!(["1", "2"]), "in order of time");
    assert_eq!(run.header["backtraces"]["0"][0], "main");
    assert_eq!(run.header["snapshot"]["name"], "pool");
    let mut bad = snapshot();
    bad["live_allocations"][0]["address"] = json!("nowhere");
    let err = ViewRun::from_snapshot("snap.json", &bad).unwrap_err();
    assert!(err.to_string().contains("live_allocations[0]"), "{err}");
}

#[test]
fn data_cannot_close_the_pages_script_elements() {
    let run = ViewRun::from_snapshot("</script>.json", &snapshot()).unwrap();
    let html = render_page("<title> {{DATA}}", &[run]);
    let data = html
        .split("<script type=\"application/json\" id=\"run0-header\">")
        .nth(1)
        .unwrap();
    let header = data.split("</script>").next().unwrap();
    let value: Value = serde_json::from_str(header).unwrap();
    assert_eq!(value["backtraces"]["0"][1], "</script><b>");
    assert_eq!(value["name"], "</script>.json");
    assert_eq!(
        html.matches("id=\"run0-header\"").count(),
        1,
        "the title is no placeholder"
    );
    assert!(
        !html.contains("src=") && !html.contains("href="),
        "nothing loaded from outside"
    );
}
