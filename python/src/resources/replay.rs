//! Memory-event logs from Python: `replay_log` and `read_log`.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use rmm::Error;

use super::base::resource_arg;
use crate::errors::{to_py, IntoPy};

/// Replays a memory-event log (ours or RMM's CSV) against `mr`; returns a
/// dict of what the replay measured. With `snapshot` (a snapshot file's
/// path, or its JSON text as `rmm_rs.memory_snapshot` gives it through
/// `json.dumps`), the snapshot's live allocations are made first.
#[pyfunction]
#[pyo3(signature = (log_file_name, mr, snapshot=None))]
fn replay_log<'py>(
    py: Python<'py>,
    log_file_name: PathBuf,
    mr: &Bound<'py, PyAny>,
    snapshot: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let shared = resource_arg(mr, "mr")?;
    let snapshot = snapshot.map(|s| read_snapshot(&s)).transpose()?;
    let file = std::fs::File::open(&log_file_name)
        .map_err(|e| to_py(Error::io(format!("cannot open {}", log_file_name.display()), &e)))?;
    let events = rmm_replay::parse_log(std::io::BufReader::new(file)).py_err()?;
    let report = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &snapshot {
            Some(snap) => rmm_replay::replay_from_snapshot(snap, &events, &shared),
            None => rmm_replay::replay(&events, &shared),
        }))
    });
    let report = report.map_err(|_| PyRuntimeError::new_err("the replay panicked (see the debug log)"))?;
    let d = PyDict::new(py);
    d.set_item("events", report.events)?;
    d.set_item("threads", report.threads)?;
    d.set_item("elapsed_s", report.elapsed.as_secs_f64())?;
    d.set_item("peak_bytes", report.peak_bytes)?;
    d.set_item("failed_allocations", report.failed_allocations)?;
    d.set_item("logged_failures", report.logged_failures)?;
    d.set_item("unmatched_frees", report.unmatched_frees)?;
    d.set_item("leaked_allocations", report.leaked_allocations)?;
    d.set_item("leaked_bytes", report.leaked_bytes)?;
    d.set_item(
        "fragmentation_at_peak",
        report.free_blocks_at_peak.map(|s| s.fragmentation()),
    )?;
    d.set_item("preloaded_allocations", report.preloaded_allocations)?;
    d.set_item("preload_failures", report.preload_failures)?;
    d.set_item("report", report.to_string())?;
    Ok(d)
}

/// A snapshot from JSON text (starting with `{`) or a file path.
fn read_snapshot(text_or_path: &str) -> PyResult<rmm::mr::Snapshot> {
    let text = if text_or_path.trim_start().starts_with('{') {
        text_or_path.to_string()
    } else {
        std::fs::read_to_string(text_or_path)
            .map_err(|e| to_py(Error::io(format!("cannot read snapshot {text_or_path}"), &e)))?
    };
    rmm::mr::Snapshot::from_json(&text).py_err()
}

/// Parses a memory-event log into a list of `(thread, action, pointer,
/// size, stream)` tuples (`action` is "allocate", "allocate failure" or
/// "free").
#[pyfunction]
fn read_log<'py>(py: Python<'py>, log_file_name: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let file = std::fs::File::open(&log_file_name)
        .map_err(|e| to_py(Error::io(format!("cannot open {}", log_file_name.display()), &e)))?;
    let events = rmm_replay::parse_log(std::io::BufReader::new(file)).py_err()?;
    let out = PyList::empty(py);
    for e in events {
        let action = match e.action {
            rmm_replay::Action::Allocate => "allocate",
            rmm_replay::Action::AllocateFailure => "allocate failure",
            rmm_replay::Action::Free => "free",
        };
        out.append((e.thread, action, e.pointer, e.size, e.stream))?;
    }
    Ok(out)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay_log, m)?)?;
    m.add_function(wrap_pyfunction!(read_log, m)?)?;
    Ok(())
}
