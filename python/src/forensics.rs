//! Out-of-memory reports, observers and snapshots for Python: the
//! `OutOfMemoryReport` class (`MemoryError.report`), `memory_snapshot_json`,
//! `add_oom_observer` / `remove_oom_observer` / `write_oom_reports_to`
//! and `last_oom_report` (the report of the last out-of-memory error any
//! thread raised through this extension or the PyTorch hook).

use std::sync::{Arc, Mutex};

use pyo3::prelude::*;

use rmm::mr::{OomObserverId, OomReport};

/// The report of an out-of-memory error (`MemoryError.report`): `str()`
/// is the readable text, `to_json()` the JSON (schema `rmm-oom-report`,
/// docs/snapshots.md), `to_dict()` that JSON parsed.
#[pyclass(module = "rmm_rs", name = "OutOfMemoryReport", frozen)]
pub(crate) struct PyOomReport {
    report: Arc<OomReport>,
}

#[pymethods]
impl PyOomReport {
    /// The JSON text.
    fn to_json(&self) -> String {
        self.report.to_json()
    }

    /// The JSON as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (self.report.to_json(),))
    }

    /// The bytes asked for.
    #[getter]
    fn size(&self) -> usize {
        self.report.request.size
    }

    /// The alignment asked for.
    #[getter]
    fn alignment(&self) -> usize {
        self.report.request.alignment
    }

    /// The raw stream handle.
    #[getter]
    fn stream(&self) -> usize {
        self.report.request.stream
    }

    /// The name of the layer that refused the request.
    #[getter]
    fn failed_layer(&self) -> String {
        self.report.failed_layer.clone()
    }

    /// The layers' names, the top first.
    #[getter]
    fn layers(&self) -> Vec<String> {
        self.report
            .snapshot
            .layers
            .iter()
            .map(|l| l.name.clone())
            .collect()
    }

    fn __str__(&self) -> String {
        self.report.to_string()
    }

    fn __repr__(&self) -> String {
        format!(
            "<OutOfMemoryReport: {} bytes refused by {}>",
            self.report.request.size, self.report.failed_layer
        )
    }
}

/// The last report seen by [`report_object`].
static LAST: Mutex<Option<Arc<OomReport>>> = Mutex::new(None);

/// Remembers `e`'s report as the last one (see [`last_oom_report`]).
pub(crate) fn remember(e: &rmm::Error) {
    if let rmm::Error::OutOfMemory { report: Some(r), .. } = e {
        *LAST.lock().unwrap_or_else(|p| p.into_inner()) = Some(r.clone());
    }
}

/// The Python object for `e`'s report (None without one), remembered as
/// the last report.
pub(crate) fn report_object(py: Python<'_>, e: &rmm::Error) -> PyResult<Py<PyAny>> {
    remember(e);
    match e {
        rmm::Error::OutOfMemory { report: Some(r), .. } => {
            Ok(Py::new(py, PyOomReport { report: r.clone() })?.into_any())
        }
        _ => Ok(py.None()),
    }
}

/// `last_oom_report()`: the report of the last out-of-memory error raised
/// through this extension (a `MemoryError`) or refused to PyTorch's hook,
/// on any thread; None before the first.
#[pyfunction]
fn last_oom_report(py: Python<'_>) -> PyResult<Option<Py<PyOomReport>>> {
    let last = LAST.lock().unwrap_or_else(|p| p.into_inner()).clone();
    last.map(|report| Py::new(py, PyOomReport { report })).transpose()
}

/// `memory_snapshot_json(mr)`: the snapshot of `mr`'s stack as JSON
/// (schema `rmm-snapshot`); `rmm_rs.memory_snapshot` parses it.
#[pyfunction]
fn memory_snapshot_json(py: Python<'_>, mr: &Bound<'_, PyAny>) -> PyResult<String> {
    let shared = crate::resources::resource_arg(mr, "mr")?;
    Ok(py.detach(|| rmm::mr::snapshot(shared.inner()).to_json()))
}

/// `add_oom_observer(callback) -> int`: `callback(report)` is called with
/// the `OutOfMemoryReport` of every out-of-memory error, before a failure
/// callback adaptor's retry; an exception it raises is printed and
/// ignored. Returns an id for `remove_oom_observer`.
#[pyfunction]
fn add_oom_observer(callback: Py<PyAny>) -> u64 {
    let id = rmm::mr::add_oom_observer(move |r: &OomReport| {
        Python::attach(|py| {
            let report = PyOomReport {
                report: Arc::new(r.clone()),
            };
            if let Err(e) = callback.call1(py, (report,)) {
                e.print(py);
            }
        })
    });
    id_number(id)
}

/// Observer ids handed to Python, by number.
static IDS: Mutex<Vec<OomObserverId>> = Mutex::new(Vec::new());

fn id_number(id: OomObserverId) -> u64 {
    let mut ids = IDS.lock().unwrap_or_else(|p| p.into_inner());
    ids.push(id);
    ids.len() as u64
}

/// `remove_oom_observer(id) -> bool`: removes an observer; False when it
/// was not registered.
#[pyfunction]
fn remove_oom_observer(id: u64) -> bool {
    let ids = IDS.lock().unwrap_or_else(|p| p.into_inner());
    match id.checked_sub(1).and_then(|i| ids.get(i as usize)) {
        Some(&real) => rmm::mr::remove_oom_observer(real),
        None => false,
    }
}

/// `write_oom_reports_to(directory) -> int`: an observer that writes each
/// report as `rmm-oom-<unix_ns>-<n>.json` into `directory`.
#[pyfunction]
fn write_oom_reports_to(directory: std::path::PathBuf) -> u64 {
    id_number(rmm::mr::write_oom_reports_to(directory))
}

/// Adds the class and functions to `m`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyOomReport>()?;
    m.add_function(wrap_pyfunction!(last_oom_report, m)?)?;
    m.add_function(wrap_pyfunction!(memory_snapshot_json, m)?)?;
    m.add_function(wrap_pyfunction!(add_oom_observer, m)?)?;
    m.add_function(wrap_pyfunction!(remove_oom_observer, m)?)?;
    m.add_function(wrap_pyfunction!(write_oom_reports_to, m)?)?;
    Ok(())
}
