//! Size arguments given as ints or strings with a unit (`"1GiB"`,
//! `"512MiB"`, `"100MB"`, `"1.5 kB"`, `"4096"`), as RMM's Python API takes
//! them; the strings go through the one parser,
//! [`rmm_replay::sizes::parse_size_str`].
#![forbid(unsafe_code)]

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};
use rmm_replay::sizes::parse_size_str;

/// A size argument: a non-negative int or a string with a unit.
///
/// # Errors
/// `TypeError` for other types (bool included), `ValueError` for negative
/// numbers and malformed strings; `what` names the argument.
pub(crate) fn size_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    if obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be an int or a size string, not bool"
        )));
    }
    if obj.is_instance_of::<PyInt>() {
        let n: i128 = obj.extract()?;
        if n < 0 {
            return Err(PyValueError::new_err(format!(
                "{what} must be non-negative, got {n}"
            )));
        }
        return usize::try_from(n).map_err(|_| PyValueError::new_err(format!("{what} {n} is too large")));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let text: String = s.extract()?;
        return parse_size_str(&text).map_err(|m| PyValueError::new_err(format!("{what}: {m}")));
    }
    // Objects with __index__ (numpy integers).
    if obj.hasattr("__index__")? {
        let n: i128 = obj.call_method0("__index__")?.extract()?;
        if n < 0 {
            return Err(PyValueError::new_err(format!(
                "{what} must be non-negative, got {n}"
            )));
        }
        return usize::try_from(n).map_err(|_| PyValueError::new_err(format!("{what} {n} is too large")));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be an int or a size string like \"1GiB\", not {}",
        obj.get_type().name()?
    )))
}

/// An optional size argument (`None` stays `None`).
pub(crate) fn opt_size_arg(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<usize>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => size_arg(o, what).map(Some),
    }
}

/// `parse_bytes(size)`: bytes of an int or a size string such as `"1GiB"`.
#[pyfunction]
pub(crate) fn parse_bytes(size: &Bound<'_, PyAny>) -> PyResult<usize> {
    size_arg(size, "size")
}
