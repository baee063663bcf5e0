//! The per-device registry's native half (the Python side, `rmm_rs.mr`,
//! keeps the Python objects) and the device queries.
#![forbid(unsafe_code)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmm::device::DeviceId;

use super::base::resource_arg;
use super::device::wrap_default;
use crate::errors::IntoPy;

/// The current device (device 0 without a GPU, as the registry does).
#[pyfunction]
fn _current_device() -> i32 {
    rmm::device::current_device().map(|d| d.0).unwrap_or(0)
}

/// Makes `device` current on this thread.
#[pyfunction]
fn _set_current_device(device: i32) -> PyResult<()> {
    rmm::device::set_current_device(DeviceId(device)).py_err()
}

/// Sets the Rust registry's resource of `device` (what buffers without
/// `mr=` and the PyTorch hook use).
#[pyfunction]
fn _set_per_device_resource(device: i32, mr: &Bound<'_, PyAny>) -> PyResult<()> {
    if device < 0 {
        return Err(PyValueError::new_err(format!(
            "device must be non-negative, got {device}"
        )));
    }
    let shared = resource_arg(mr, "mr")?;
    rmm::mr::set_per_device_resource(DeviceId(device), shared).py_err()?;
    Ok(())
}

/// A Python object for the registry's initial resource of `device`.
#[pyfunction]
fn _initial_resource(py: Python<'_>, device: i32) -> PyResult<Py<PyAny>> {
    let shared = rmm::mr::per_device_resource(DeviceId(device));
    wrap_default(py, shared)
}

/// Gives `device` its initial (cuda) resource back in the Rust registry.
#[pyfunction]
fn _reset_per_device_resource(device: i32) {
    rmm::mr::reset_per_device_resource(DeviceId(device));
}

/// `(free, total)` bytes of the current device.
#[pyfunction]
fn available_device_memory() -> PyResult<(usize, usize)> {
    rmm::device::available_device_memory().py_err()
}

/// Number of GPUs (0 without a usable driver).
#[pyfunction]
fn device_count() -> usize {
    rmm::device::device_count()
}

/// Why no GPU can be used (the missing driver library, no device...), or
/// None when the driver loads and sees at least one GPU.
#[pyfunction]
fn gpu_unavailable_reason() -> Option<String> {
    match rmm::device::init_driver() {
        Err(e) => Some(e.to_string()),
        Ok(()) if rmm::device::device_count() == 0 => Some("the CUDA driver reports no GPU".into()),
        Ok(()) => None,
    }
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_set_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_set_per_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(_initial_resource, m)?)?;
    m.add_function(wrap_pyfunction!(_reset_per_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(available_device_memory, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_unavailable_reason, m)?)?;
    Ok(())
}
