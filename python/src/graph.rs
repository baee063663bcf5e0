//! The native half of `rmm_rs.graph`: what a Python user needs of the
//! crate's CUDA graph support (`rmm::graph`) next to CuPy's and PyTorch's
//! own capture: the capture state of a stream, and how the resources find
//! out that a stream captures.
//!
//! Capturing itself is CuPy's (`Stream.begin_capture()`) or PyTorch's
//! (`torch.cuda.graph`): with the default detection (`"driver"`) the
//! resources ask the driver about the stream of every allocation and adopt
//! such a capture on their own.
#![forbid(unsafe_code)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmm::graph::{CaptureDetection, CaptureStatus};

use crate::errors::IntoPy;
use crate::stream::StreamParam;

/// `capture_status(stream=DEFAULT_STREAM) -> (state, capture_id)`: the
/// driver's capture state of `stream` (cuStreamGetCaptureInfo):
/// `("none", None)`, `("active", id)` (streams joined to one capture share
/// its id) or `("invalidated", None)` (a capture an illegal call broke; it
/// must still be ended). The default streams never capture.
#[pyfunction]
#[pyo3(signature = (stream=StreamParam::Omitted))]
fn capture_status(py: Python<'_>, stream: StreamParam<'_>) -> PyResult<(&'static str, Option<u64>)> {
    let stream = stream.resolve(py)?;
    let view = stream.get().view();
    let status = py.detach(|| view.capture_status()).py_err()?;
    Ok(match status {
        CaptureStatus::None => ("none", None),
        CaptureStatus::Active { id } => ("active", Some(id)),
        CaptureStatus::Invalidated => ("invalidated", None),
    })
}

/// The name of a detection mode, as `set_capture_detection` takes it.
fn detection_name(d: CaptureDetection) -> &'static str {
    match d {
        CaptureDetection::Driver => "driver",
        CaptureDetection::Registered => "registered",
    }
}

/// `get_capture_detection() -> str`: `"driver"` (the default: every
/// allocation on a stream other than the default streams asks the driver
/// whether it captures, about 30 ns, so captures begun by CuPy, PyTorch or
/// any other library are adopted) or `"registered"` (only captures begun
/// through the `rmm` crate's own API are seen).
#[pyfunction]
fn get_capture_detection() -> &'static str {
    detection_name(rmm::graph::capture_detection())
}

/// `set_capture_detection(mode)`: `"driver"` or `"registered"` (see
/// `get_capture_detection`); process-wide. With `"registered"`, memory
/// allocated under a CuPy or PyTorch capture is ordinary shared memory
/// again, which a later allocation can be handed while the graph still
/// writes it: keep `"driver"` unless nothing else captures.
///
/// # Errors
/// `ValueError` for another name.
#[pyfunction]
fn set_capture_detection(mode: &str) -> PyResult<()> {
    let d = match mode {
        "driver" => CaptureDetection::Driver,
        "registered" => CaptureDetection::Registered,
        other => {
            return Err(PyValueError::new_err(format!(
                "capture detection must be 'driver' or 'registered', not {other:?}"
            )))
        }
    };
    rmm::graph::set_capture_detection(d);
    Ok(())
}

/// Adds the functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(capture_status, m)?)?;
    m.add_function(wrap_pyfunction!(get_capture_detection, m)?)?;
    m.add_function(wrap_pyfunction!(set_capture_detection, m)?)?;
    Ok(())
}
