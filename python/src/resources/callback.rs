//! `CallbackMemoryResource`: allocation and free by Python callables.
#![forbid(unsafe_code)]

use pyo3::exceptions::{PyMemoryError, PyTypeError};
use pyo3::prelude::*;

use rmm::mr::{CallbackMemoryResource, SharedResource};
use rmm::{DevicePtr, Error};

use super::base::{base, PyResource};
use crate::errors;
use crate::stream::PyStream;

/// `allocate_func(nbytes, stream) -> int` and `deallocate_func(ptr, nbytes,
/// stream)` (`rmm.mr.CallbackMemoryResource`).
///
/// An exception of `allocate_func` leaves the allocation as RMM's does:
/// `MemoryError` as `MemoryError`, anything else as `RuntimeError`, with
/// the exception's text.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CallbackMemoryResource")]
pub(crate) struct PyCallback;

/// The error for a failed Python allocate callback (the exception itself
/// is kept for `errors::to_py`): out-of-memory for `MemoryError` (so that a
/// failure-callback adaptor above may retry), bad_alloc for the rest.
fn callback_error(py: Python<'_>, bytes: usize, e: PyErr) -> Error {
    errors::stash_callback_error(py, &e);
    let text = e.value(py).to_string();
    if e.is_instance_of::<PyMemoryError>(py) {
        Error::OutOfMemory {
            requested: bytes,
            reason: format!("allocate callback: {text}"),
            report: None,
        }
    } else {
        Error::BadAlloc(format!("allocate callback raised {text}"))
    }
}

#[pymethods]
impl PyCallback {
    /// `simulated=True` (rmm_rs only) marks callbacks that hand out
    /// addresses without a GPU behind them (e.g. from a
    /// `SimulatedMemoryResource`), so that pools and buffers over them run
    /// without a GPU.
    #[new]
    #[pyo3(signature = (allocate_func, deallocate_func, *, simulated=false))]
    fn py_new(
        allocate_func: Bound<'_, PyAny>,
        deallocate_func: Bound<'_, PyAny>,
        simulated: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        if !allocate_func.is_callable() || !deallocate_func.is_callable() {
            return Err(PyTypeError::new_err(
                "CallbackMemoryResource needs two callables: allocate_func(nbytes, stream) and \
                 deallocate_func(ptr, nbytes, stream)",
            ));
        }
        let alloc = allocate_func.unbind();
        let dealloc = deallocate_func.unbind();
        let mr = CallbackMemoryResource::new(
            move |bytes, _alignment, stream| {
                Python::attach(|py| {
                    let s = Py::new(py, PyStream::special(stream.as_raw()))
                        .map_err(|e| callback_error(py, bytes, e))?;
                    let r = alloc
                        .call1(py, (bytes, s))
                        .and_then(|p| p.extract::<u64>(py))
                        .map_err(|e| callback_error(py, bytes, e))?;
                    Ok(DevicePtr::new(r))
                })
            },
            move |ptr, bytes, _alignment, stream| {
                Python::attach(|py| {
                    let r = Py::new(py, PyStream::special(stream.as_raw()))
                        .and_then(|s| dealloc.call1(py, (ptr.addr(), bytes, s)).map(drop));
                    if let Err(e) = r {
                        log::error!("CallbackMemoryResource: deallocate callback for {ptr} raised {e}");
                    }
                })
            },
        );
        let mr = if simulated { mr.without_gpu() } else { mr };
        Ok(base(SharedResource::new(mr)).add_subclass(PyCallback))
    }
}
