//! `rmm::Error` to Python exceptions, in one place.

use pyo3::create_exception;
use pyo3::exceptions::{PyIndexError, PyMemoryError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

create_exception!(
    rmm_rs,
    RMMError,
    PyRuntimeError,
    "An error of the rmm_rs memory manager (a logic error: wrong device, bad configuration, ...)."
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

/// `CUDA_ERROR_NO_DEVICE`.
const CUDA_ERROR_NO_DEVICE: u32 = 100;
/// `CUDA_ERROR_INSUFFICIENT_DRIVER`.
const CUDA_ERROR_INSUFFICIENT_DRIVER: u32 = 35;

/// The Python exception for an `rmm::Error`.
pub(crate) fn to_py(e: rmm::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        rmm::Error::OutOfMemory { .. } | rmm::Error::BadAlloc(_) => PyMemoryError::new_err(msg),
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
        _ => RMMError::new_err(msg),
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
