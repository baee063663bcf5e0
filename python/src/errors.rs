//! `rmm::Error` to Python exceptions, in one place, and the exception
//! classes of the package.

use std::cell::RefCell;

use pyo3::create_exception;
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyErr;

create_exception!(
    rmm_rs,
    RMMError,
    PyRuntimeError,
    "An error of the rmm_rs memory manager (a logic error: wrong device, bad configuration, ...).\n\n\
     `RMMError(errcode, msg)` as RMM's: `errcode` is kept as the attribute `errcode` and `str(e)` is \
     `msg`; `RMMError(msg)` leaves `errcode` None."
);
create_exception!(
    rmm_rs,
    CUDAError,
    RMMError,
    "A CUDA driver call failed (other than out-of-memory, which is MemoryError)."
);
create_exception!(
    rmm_rs,
    DriverUnavailableError,
    RMMError,
    "The CUDA driver library (libcuda.so.1) could not be loaded or initialised: no usable GPU."
);

create_exception!(
    rmm_rs,
    CaptureError,
    RMMError,
    "A CUDA stream capture (CuPy's `Stream.begin_capture()`, `torch.cuda.graph`, the rmm crate's own) \
     stopped a call: the stream's capture was invalidated, or the call cannot be made while that stream \
     captures. The message names the stream (`stream capture on stream 0x...: reason`)."
);

/// `rmm_rs.ConfigurationError`, made once (see [`config_error`]).
static CONFIGURATION_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The class `ConfigurationError(ValueError, RMMError)`: a resource
/// configuration that is refused (sizes that do not fit together, ...).
/// It is a `ValueError`, and a `RuntimeError` as RMM's `logic_error` for
/// the same configurations is.
fn configuration_error_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    CONFIGURATION_ERROR
        .get_or_try_init(py, || {
            let bases = PyTuple::new(py, [py.get_type::<PyValueError>(), py.get_type::<RMMError>()])?;
            let dict = PyDict::new(py);
            dict.set_item("__module__", "rmm_rs")?;
            dict.set_item(
                "__doc__",
                "A resource configuration that is refused: a ValueError, and an RMMError (a RuntimeError) \
                 as RMM's logic_error for it is.",
            )?;
            let ty = py
                .get_type::<PyType>()
                .call1(("ConfigurationError", bases, dict))?;
            Ok::<_, PyErr>(ty.cast_into::<PyType>()?.unbind())
        })
        .map(|t| t.bind(py))
}

/// A `ConfigurationError` with `msg` (a plain `ValueError` should the class
/// not be made).
pub(crate) fn config_error(py: Python<'_>, msg: String) -> PyErr {
    match configuration_error_type(py) {
        Ok(ty) => PyErr::from_type(ty.clone(), msg),
        Err(_) => PyValueError::new_err(msg),
    }
}

/// `CUDA_ERROR_NO_DEVICE`.
const CUDA_ERROR_NO_DEVICE: u32 = 100;
/// `CUDA_ERROR_INSUFFICIENT_DRIVER`.
const CUDA_ERROR_INSUFFICIENT_DRIVER: u32 = 35;

thread_local! {
    /// The exception a Python callback raised inside an allocation on this
    /// thread (a failure callback cannot return an error, only a bool), to
    /// be raised in place of the allocation's out-of-memory error.
    static CALLBACK_ERROR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// Forgets a callback's exception left by an earlier allocation (one whose
/// failure another resource absorbed); called where an allocation starts.
pub(crate) fn clear_callback_error() {
    CALLBACK_ERROR.with(|c| c.borrow_mut().take());
}

/// Keeps the exception a Python callback raised during an allocation on
/// this thread, translated as RMM translates it: `MemoryError` stays a
/// `MemoryError`, anything else becomes `RuntimeError`, both with the
/// exception's text.
pub(crate) fn stash_callback_error(py: Python<'_>, e: &PyErr) {
    let text = e.value(py).to_string();
    let translated = if e.is_instance_of::<PyMemoryError>(py) {
        PyMemoryError::new_err(text)
    } else {
        PyRuntimeError::new_err(text)
    };
    CALLBACK_ERROR.with(|c| *c.borrow_mut() = Some(translated));
}

/// The Python exception for an `rmm::Error`.
pub(crate) fn to_py(e: rmm::Error) -> PyErr {
    if e.is_bad_alloc() {
        if let Some(raised) = CALLBACK_ERROR.with(|c| c.borrow_mut().take()) {
            return raised;
        }
    }
    let msg = e.to_string();
    match e {
        rmm::Error::OutOfMemory { .. } => out_of_memory_error(&e, msg),
        rmm::Error::BadAlloc(_) => PyMemoryError::new_err(msg),
        rmm::Error::InvalidArgument(_) => PyValueError::new_err(msg),
        rmm::Error::OutOfRange(_) => PyIndexError::new_err(msg),
        rmm::Error::DriverUnavailable(_) => DriverUnavailableError::new_err(msg),
        // The driver loads but there is no GPU (or the driver is too old
        // for CUDA 12.8): as unusable as a missing driver.
        rmm::Error::Cuda { code, .. }
            if code == CUDA_ERROR_NO_DEVICE || code == CUDA_ERROR_INSUFFICIENT_DRIVER =>
        {
            DriverUnavailableError::new_err(format!("no usable GPU: {msg}"))
        }
        rmm::Error::Cuda { .. } => CUDAError::new_err(msg),
        rmm::Error::Io { .. } => PyOSError::new_err(msg),
        rmm::Error::Capture { .. } => CaptureError::new_err(msg),
        _ => RMMError::new_err(msg),
    }
}

/// A `MemoryError` with the error's text (the report included) and its
/// report as the attribute `report` (an `OutOfMemoryReport`, or None).
fn out_of_memory_error(e: &rmm::Error, msg: String) -> PyErr {
    let err = PyMemoryError::new_err(msg);
    Python::attach(|py| {
        let set = crate::forensics::report_object(py, e).and_then(|r| err.value(py).setattr("report", r));
        if let Err(failed) = set {
            log::error!("rmm_rs: cannot attach the out-of-memory report to MemoryError: {failed}");
        }
    });
    err
}

/// The Python exception for a failed allocation: as [`to_py`], except that
/// a driver failure is a `MemoryError` (RMM turns every CUDA error of an
/// allocation into `bad_alloc`), e.g. a pool destroyed under a view.
pub(crate) fn alloc_to_py(e: rmm::Error) -> PyErr {
    match e {
        rmm::Error::Cuda { code, .. }
            if code != CUDA_ERROR_NO_DEVICE && code != CUDA_ERROR_INSUFFICIENT_DRIVER =>
        {
            PyMemoryError::new_err(format!("bad_alloc: {e}"))
        }
        other => to_py(other),
    }
}

/// `Result<T, rmm::Error>` to `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    /// Converts the error with [`to_py`].
    fn py_err(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for rmm::Result<T> {
    fn py_err(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

/// `RMMError.__init__(self, *args)`: with two arguments, RMM's
/// `(errcode, msg)`; otherwise the arguments of any exception.
#[pyfunction]
#[pyo3(signature = (exc, *args))]
fn rmm_error_init(exc: &Bound<'_, PyAny>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
    let py = exc.py();
    let base_init = py.get_type::<PyRuntimeError>().getattr("__init__")?;
    if args.len() == 2 {
        exc.setattr("errcode", args.get_item(0)?)?;
        base_init.call1((exc, args.get_item(1)?))?;
    } else {
        let mut all = vec![exc.clone()];
        all.extend(args.iter());
        base_init.call1(PyTuple::new(py, all)?)?;
    }
    Ok(())
}

/// Adds the exception classes to the module, `RMMError` with RMM's
/// constructor and its `errcode` attribute (None unless given).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let rmm_error = py.get_type::<RMMError>();
    // A builtin function is not a method descriptor; `partialmethod` makes
    // it one, so that `__init__` receives the exception object first.
    let init = wrap_pyfunction!(rmm_error_init, m)?;
    let method = py.import("functools")?.getattr("partialmethod")?.call1((init,))?;
    rmm_error.setattr("__init__", method)?;
    rmm_error.setattr("errcode", py.None())?;
    m.add("RMMError", &rmm_error)?;
    m.add("CUDAError", py.get_type::<CUDAError>())?;
    m.add("DriverUnavailableError", py.get_type::<DriverUnavailableError>())?;
    m.add("CaptureError", py.get_type::<CaptureError>())?;
    m.add("ConfigurationError", configuration_error_type(py)?)?;
    Ok(())
}
