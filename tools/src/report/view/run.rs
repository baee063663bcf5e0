//! One run as the page draws it: the events' times and log lines, the
//! allocations with their live intervals, the failures, from a memory-event
//! log ([`ViewRun::from_log`]) or from a snapshot ([`ViewRun::from_snapshot`]).
//!
//! Numbers travel as varint columns ([`Columns`]); names, failures, reports
//! and backtraces as JSON in the run's header.
#![forbid(unsafe_code)]

use serde_json::{json, Value};

use super::encode::{zigzag, Columns};
use crate::report::timeline::{AddressMap, Timeline};
use crate::report::ReportError;
use rmm_replay::memlog::{parse_time_of_day, MemoryLog};

/// Addresses are drawn relative to the lowest one as JavaScript numbers,
/// exact below 2^53.
const EXACT_SPAN: u64 = 1 << 53;

/// One run: its JSON header and its binary columns.
#[derive(Debug, Clone)]
pub struct ViewRun {
    /// Names, counts, failures, reports, the address axis, the column index.
    pub header: Value,
    /// `ev_time_us` (delta), `ev_line` (delta), `a_start` (delta), `a_life`
    /// (freeing event minus allocating event, 0 when never freed), `a_addr`
    /// (zigzag delta of the offset from the lowest address), `a_size`,
    /// `a_thread`, `a_stream` (indices into the header's lists).
    pub columns: Columns,
}

/// What the columns are built from: one entry per allocation.
struct AllocRow {
    start: usize,
    end: Option<usize>,
    address: u64,
    size: u64,
    thread: usize,
    stream: usize,
}

fn stream_index(streams: &mut Vec<u64>, stream: u64) -> usize {
    match streams.iter().position(|&s| s == stream) {
        Some(i) => i,
        None => {
            streams.push(stream);
            streams.len() - 1
        }
    }
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

/// Time-of-day seconds and seconds after it, as the page formats them.
fn micros(seconds: f64) -> u64 {
    (seconds * 1e6).round().max(0.0) as u64
}

impl ViewRun {
    /// A run from a parsed memory-event log.
    pub fn from_log(name: &str, log: &MemoryLog) -> Result<ViewRun, ReportError> {
        let tl = Timeline::from_log(log);
        let mut streams = Vec::new();
        let rows: Vec<AllocRow> = tl
            .allocations
            .iter()
            .map(|a| AllocRow {
                start: a.start,
                end: a.end,
                address: a.pointer,
                size: a.size,
                thread: a.thread,
                stream: stream_index(&mut streams, log.events[a.start].stream),
            })
            .collect();
        let failures: Vec<Value> = tl
            .failures
            .iter()
            .map(|f| {
                let stream = log.events[f.index].stream;
                let time = tl.has_time.then(|| tl.times[f.index]);
                json!({ "event": f.index, "size": f.size, "thread": f.thread, "time": time,
                        "stream": hex(stream), "line": f.line, "report": null })
            })
            .collect();
        let start_of_day = if tl.has_time {
            log.events.first().and_then(|e| e.time)
        } else {
            None
        };
        let lines = log.events.iter().map(|e| e.line as u64);
        let mut run = ViewRun::assemble(name, &tl.times, lines, &rows, &tl)?;
        let h = &mut run.header;
        h["kind"] = json!("log");
        h["has_time"] = json!(tl.has_time);
        h["start_of_day"] = json!(start_of_day);
        h["threads"] = json!(tl.threads);
        h["streams"] = json!(streams.iter().map(|&s| hex(s)).collect::<Vec<_>>());
        h["failures"] = Value::Array(failures);
        let stats = tl.stats();
        h["stats"] = json!({ "peak_bytes": stats.peak_bytes, "allocations": stats.allocations,
            "frees": stats.frees, "failures": stats.failures, "unknown_frees": stats.unknown_frees,
            "duration": stats.duration, "skipped_lines": log.skipped });
        Ok(run)
    }

    /// The columns and the address axis, common to logs and snapshots.
    fn assemble(
        name: &str,
        times: &[f64],
        lines: impl IntoIterator<Item = u64>,
        rows: &[AllocRow],
        tl: &Timeline,
    ) -> Result<ViewRun, ReportError> {
        let base = rows.iter().map(|r| r.address).min().unwrap_or(0);
        let top = rows.iter().map(|r| r.address.saturating_add(r.size)).max();
        if top.is_some_and(|t| t - base >= EXACT_SPAN) {
            return Err(ReportError::NoData(format!(
                "{name}: addresses span {:#x} bytes; the viewer draws spans below 2^53 only",
                top.unwrap_or(0) - base
            )));
        }
        let mut cols = Columns::default();
        let mut prev = 0u64;
        cols.push(
            "ev_time_us",
            times.iter().map(|&t| {
                let us = micros(t).max(prev);
                let d = us - prev;
                prev = us;
                d
            }),
        );
        let mut prev_line = 0u64;
        cols.push(
            "ev_line",
            lines.into_iter().map(|l| {
                let d = zigzag(l as i64 - prev_line as i64);
                prev_line = l;
                d
            }),
        );
        let mut prev_start = 0usize;
        cols.push(
            "a_start",
            rows.iter().map(|r| {
                let d = (r.start - prev_start) as u64;
                prev_start = r.start;
                d
            }),
        );
        cols.push(
            "a_life",
            rows.iter().map(|r| r.end.map_or(0, |e| (e - r.start) as u64)),
        );
        let mut prev_addr = 0i64;
        cols.push(
            "a_addr",
            rows.iter().map(|r| {
                let off = (r.address - base) as i64;
                let d = zigzag(off - prev_addr);
                prev_addr = off;
                d
            }),
        );
        cols.push("a_size", rows.iter().map(|r| r.size));
        cols.push("a_thread", rows.iter().map(|r| r.thread as u64));
        cols.push("a_stream", rows.iter().map(|r| r.stream as u64));
        let map = AddressMap::new(&tl.allocations, true);
        let (starts, offsets): (Vec<u64>, Vec<f64>) =
            map.stretches().map(|(s, o)| (s.saturating_sub(base), o)).unzip();
        let header = json!({
            "name": name, "events": times.len(), "allocations": rows.len(), "base": hex(base),
            "axis": { "starts": starts, "offsets": offsets, "total": map.total,
                      "collapsed_at": map.collapsed_at },
            "reports": [], "snapshot": null, "backtraces": {},
        });
        Ok(ViewRun {
            header,
            columns: cols,
        })
    }

    /// A run from a snapshot (schema `rmm-snapshot`, version 1): its live
    /// allocations, allocated at their logged times and live at the
    /// snapshot's time (the last event), with their backtraces; the
    /// resource stack is kept for the page's state panel.
    pub fn from_snapshot(name: &str, snapshot: &Value) -> Result<ViewRun, ReportError> {
        super::json::check_schema(name, snapshot, "rmm-snapshot")?;
        let live = snapshot["live_allocations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let snap_time = super::json::time_of_day(name, &snapshot["time"])?;
        let mut entries = Vec::with_capacity(live.len());
        for (i, a) in live.iter().enumerate() {
            let at = format!("{name}: live_allocations[{i}]");
            let address = super::json::hex_field(&at, a, "address")?;
            let size = super::json::u64_field(&at, a, "size")?;
            let stream = super::json::hex_field(&at, a, "stream").unwrap_or(0);
            let thread = match &a["thread"] {
                Value::String(s) => s.clone(),
                Value::Null => "?".to_string(),
                other => other.to_string(),
            };
            let time = a["time"].as_str().and_then(parse_time_of_day);
            entries.push((time.unwrap_or(snap_time), address, size, stream, thread, i));
        }
        entries.sort_by(|x, y| x.0.total_cmp(&y.0));
        let first = entries.first().map_or(snap_time, |e| e.0.min(snap_time));
        let (mut threads, mut streams, mut rows) = (Vec::<String>::new(), Vec::new(), Vec::new());
        let mut times = Vec::with_capacity(entries.len() + 1);
        let mut backtraces = serde_json::Map::new();
        let mut log = MemoryLog::default();
        for (k, (time, address, size, stream, thread, i)) in entries.into_iter().enumerate() {
            times.push(time - first);
            let t = match threads.iter().position(|x| *x == thread) {
                Some(t) => t,
                None => {
                    threads.push(thread);
                    threads.len() - 1
                }
            };
            let s = stream_index(&mut streams, stream);
            if let Some(bt) = live[i]["backtrace"].as_array() {
                backtraces.insert(k.to_string(), Value::Array(bt.clone()));
            }
            rows.push(AllocRow {
                start: k,
                end: None,
                address,
                size,
                thread: t,
                stream: s,
            });
            log.events
                .push(super::json::alloc_event(k, address, size, t, stream));
        }
        times.push(snap_time - first);
        let tl = Timeline::from_log(&log);
        let lines = (0..times.len() as u64).map(|_| 0);
        let mut run = ViewRun::assemble(name, &times, lines, &rows, &tl)?;
        let h = &mut run.header;
        h["kind"] = json!("snapshot");
        h["has_time"] = json!(true);
        h["start_of_day"] = json!(first);
        h["threads"] = json!(threads);
        h["streams"] = json!(streams.iter().map(|&s| hex(s)).collect::<Vec<_>>());
        h["failures"] = json!([]);
        h["snapshot"] = snapshot["resource"].clone();
        h["backtraces"] = Value::Object(backtraces);
        let bytes: u64 = rows.iter().map(|r| r.size).sum();
        h["stats"] = json!({ "peak_bytes": bytes, "allocations": rows.len(), "frees": 0,
            "failures": 0, "unknown_frees": 0, "duration": times.last(), "skipped_lines": 0 });
        Ok(run)
    }
}
