//! Sizes given as ints or strings with a unit (`"1GiB"`, `"512MiB"`,
//! `"100MB"`, `"1.5 kB"`, `"4096"`), as RMM's Python API takes them.
#![forbid(unsafe_code)]

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

/// The factor of a unit name (case-insensitive; `""` and `"b"` are bytes).
fn unit_factor(unit: &str) -> Option<u128> {
    let u = unit.trim().to_ascii_lowercase();
    let (base, exp) = match u.as_str() {
        "" | "b" => return Some(1),
        "k" | "kb" => (1000u128, 1),
        "m" | "mb" => (1000, 2),
        "g" | "gb" => (1000, 3),
        "t" | "tb" => (1000, 4),
        "p" | "pb" => (1000, 5),
        "ki" | "kib" => (1024, 1),
        "mi" | "mib" => (1024, 2),
        "gi" | "gib" => (1024, 3),
        "ti" | "tib" => (1024, 4),
        "pi" | "pib" => (1024, 5),
        _ => return None,
    };
    Some(base.pow(exp))
}

/// Parses `"<number><unit>"`; errors are plain messages.
pub(crate) fn parse_size_str(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || c == '_'
                || ((c == 'e' || c == 'E')
                    && t[i + 1..].starts_with(|d: char| d.is_ascii_digit() || d == '+' || d == '-'))
                || ((c == '+' || c == '-') && (i == 0 || t[..i].ends_with(['e', 'E']))))
        })
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number = number.replace('_', "");
    if number.is_empty() {
        return Err(format!("size {text:?} has no number"));
    }
    let factor = unit_factor(unit).ok_or_else(|| {
        format!("size {text:?}: unknown unit {unit:?} (use B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)")
    })?;
    if let Ok(n) = number.parse::<u128>() {
        return n
            .checked_mul(factor)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("size {text:?} is too large"));
    }
    let x: f64 = number
        .parse()
        .map_err(|_| format!("size {text:?} is not a number with a unit"))?;
    if !x.is_finite() || x < 0.0 {
        return Err(format!("size {text:?} must be a non-negative number of bytes"));
    }
    let bytes = x * factor as f64;
    if bytes >= usize::MAX as f64 {
        return Err(format!("size {text:?} is too large"));
    }
    Ok(bytes as usize)
}

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
