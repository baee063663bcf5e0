//! Reading the forensics JSON (snapshots and out-of-memory reports, schemas
//! `rmm-snapshot` and `rmm-oom-report`, version 1, docs/snapshots.md) and
//! matching reports to the `allocate failure` rows of a log.
#![forbid(unsafe_code)]

use std::path::Path;

use serde_json::{json, Value};

use super::run::ViewRun;
use crate::report::{read_text, ReportError};
use rmm_replay::memlog::{parse_pointer, parse_time_of_day, Action, Event};

/// The schema version this viewer reads.
pub const SCHEMA_VERSION: u64 = 1;

fn bad(origin: &str, message: String) -> ReportError {
    ReportError::Parse {
        origin: origin.to_string(),
        line: 1,
        message,
    }
}

/// Reads a JSON file.
pub fn read_json(path: &Path) -> Result<Value, ReportError> {
    let text = read_text(path)?;
    serde_json::from_str(&text).map_err(|e| ReportError::Parse {
        origin: path.display().to_string(),
        line: e.line(),
        message: format!("not valid JSON: {e}"),
    })
}

/// Checks `schema` and `version`.
pub fn check_schema(origin: &str, v: &Value, schema: &str) -> Result<(), ReportError> {
    let found = v["schema"].as_str().unwrap_or("(none)");
    if found != schema {
        return Err(bad(origin, format!("schema is `{found}`, expected `{schema}`")));
    }
    match v["version"].as_u64() {
        Some(SCHEMA_VERSION) => Ok(()),
        other => Err(bad(
            origin,
            format!(
                "{schema} version {}, this viewer reads version {SCHEMA_VERSION}",
                other.map_or_else(|| v["version"].to_string(), |n| n.to_string())
            ),
        )),
    }
}

/// A `time` field (`HH:MM:SS.ffffff`, UTC time of day) in seconds.
pub fn time_of_day(origin: &str, v: &Value) -> Result<f64, ReportError> {
    v.as_str()
        .and_then(parse_time_of_day)
        .ok_or_else(|| bad(origin, format!("`time` is {v}, expected HH:MM:SS.ffffff")))
}

/// A hex address or stream field.
pub fn hex_field(origin: &str, v: &Value, key: &str) -> Result<u64, ReportError> {
    match &v[key] {
        Value::String(s) => parse_pointer(s).map_err(|e| bad(origin, format!("`{key}`: {e}"))),
        Value::Number(n) if n.as_u64().is_some() => Ok(n.as_u64().unwrap_or(0)),
        other => Err(bad(origin, format!("`{key}` is {other}, expected a hex string"))),
    }
}

/// A non-negative integer field.
pub fn u64_field(origin: &str, v: &Value, key: &str) -> Result<u64, ReportError> {
    v[key]
        .as_u64()
        .ok_or_else(|| bad(origin, format!("`{key}` is {}, expected a size", v[key])))
}

/// An allocation event (for the address axis of a snapshot's allocations).
pub fn alloc_event(index: usize, pointer: u64, size: u64, thread: usize, stream: u64) -> Event {
    Event {
        line: index + 1,
        thread,
        time: None,
        action: Action::Allocate,
        pointer,
        size: usize::try_from(size).unwrap_or(usize::MAX),
        stream,
    }
}

/// Adds out-of-memory reports to a run: each is matched to the unmatched
/// failure of the same requested size nearest in time (or, without times,
/// the first); a report without a match is kept and drawn at its own time.
pub fn attach_reports(run: &mut ViewRun, reports: &[(String, Value)]) -> Result<(), ReportError> {
    let start = run.header["start_of_day"].as_f64();
    for (origin, report) in reports {
        check_schema(origin, report, "rmm-oom-report")?;
        let size = u64_field(origin, &report["request"], "size")?;
        let time = time_of_day(origin, &report["time"]).ok();
        let rel = match (time, start) {
            (Some(t), Some(s)) => Some(if t < s { t + 86_400.0 - s } else { t - s }),
            _ => None,
        };
        let index = run.header["reports"].as_array().map_or(0, Vec::len);
        let matched = best_failure(&run.header["failures"], size, rel);
        if let Some(f) = matched {
            run.header["failures"][f]["report"] = json!(index);
        }
        let entry = json!({ "file": origin, "time": rel, "failure": matched, "report": report });
        if let Some(list) = run.header["reports"].as_array_mut() {
            list.push(entry);
        }
    }
    Ok(())
}

fn best_failure(failures: &Value, size: u64, rel: Option<f64>) -> Option<usize> {
    let list = failures.as_array()?;
    let mut best: Option<(usize, f64)> = None;
    for (i, f) in list.iter().enumerate() {
        if f["size"].as_u64() != Some(size) || !f["report"].is_null() {
            continue;
        }
        let at = f["time"].as_f64();
        let dist = match (rel, at) {
            (Some(r), Some(a)) => (r - a).abs(),
            _ => i as f64,
        };
        if best.is_none_or(|(_, d)| dist < d) {
            best = Some((i, dist));
        }
    }
    best.map(|b| b.0)
}
