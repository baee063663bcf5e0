//! `LoggingResourceAdaptor`: a CSV log of every allocation and free.
#![forbid(unsafe_code)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmm::mr::{LoggingAdaptor, SharedResource};

use super::base::{over, upstream_arg, PyUpstream};
use crate::errors::IntoPy;

/// A CSV log of every allocation and free (`rmm.mr.LoggingResourceAdaptor`),
/// in RMM's format (readable by `rmm_rs.replay_log` and RMM's replay tool).
///
/// The file is named as RMM names it: `log_file_name` (or `RMM_LOG_FILE`)
/// with `.dev<current device>` before its extension, made absolute
/// (`os.path.abspath`); `get_file_name()` returns that name. `device=`
/// (rmm_rs only, keyword) names the device of the suffix instead of the
/// current one, for building a device's adaptor without making it
/// current (as `reinitialize` over simulated devices does).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "LoggingResourceAdaptor")]
pub(crate) struct PyLogging {
    mr: LoggingAdaptor,
    file_name: String,
}

/// RMM's file name: `<name>.dev<device><ext>`, absolute.
fn log_file_path(
    py: Python<'_>,
    log_file_name: Option<&Bound<'_, PyAny>>,
    device: Option<i32>,
) -> PyResult<String> {
    let os = py.import("os")?;
    let path = os.getattr("path")?;
    let name = match log_file_name.filter(|n| !n.is_none()) {
        Some(n) => os.call_method1("fspath", (n,))?,
        None => match rmm::env::log_file() {
            Some(p) => p.into_pyobject(py)?.into_any(),
            None => {
                return Err(PyValueError::new_err(
                    "RMM log file must be specified either using log_file_name= argument or \
                     RMM_LOG_FILE environment variable",
                ))
            }
        },
    };
    let (stem, ext): (String, String) = path.call_method1("splitext", (name,))?.extract()?;
    let device = match device {
        Some(d) => d,
        None => rmm::device::current_device().map(|d| d.0).unwrap_or(0),
    };
    path.call_method1("abspath", (format!("{stem}.dev{device}{ext}"),))?
        .extract()
}

#[pymethods]
impl PyLogging {
    #[new]
    #[pyo3(signature = (upstream_mr, log_file_name=None, *, device=None))]
    fn py_new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        log_file_name: Option<&Bound<'_, PyAny>>,
        device: Option<i32>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        if let Some(d) = device.filter(|d| *d < 0) {
            return Err(PyValueError::new_err(format!(
                "device must be non-negative, got {d}"
            )));
        }
        let file_name = log_file_path(py, log_file_name, device)?;
        let mr = LoggingAdaptor::to_file(upstream, file_name.as_str(), false).py_err()?;
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyLogging { mr, file_name }))
    }

    /// Writes buffered log lines to the file.
    fn flush(&self) -> PyResult<()> {
        self.mr.flush().py_err()
    }

    /// The log file's absolute name (with the `.dev<N>` suffix).
    fn get_file_name(&self) -> String {
        self.file_name.clone()
    }
}
