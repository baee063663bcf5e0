//! `rmm.pylibrmm.device_buffer`'s functions over raw addresses:
//! `to_device`, `copy_ptr_to_host`, `copy_host_to_ptr` and
//! `copy_device_to_ptr`. As in RMM, the caller vouches for the addresses;
//! unlike RMM, every copy is done when the call returns (the host side may
//! be a Python object that is gone right after).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use rmm::{CudaStreamView, DevicePtr};

use crate::buffer::{byte_view, HostSource, PyDeviceBuffer};
use crate::errors::IntoPy;
use crate::sizes::size_arg;
use crate::stream::StreamParam;

/// Copies `n` bytes from `src` to `dst` on `stream` with the current
/// device's context, and waits for the copy.
///
/// # Safety
/// `[src, src + n)` is readable and `[dst, dst + n)` writable memory
/// (device, managed, pinned or pageable host) of the current device's
/// context until the call returns.
#[allow(unsafe_code)]
unsafe fn copy_raw_sync(dst: u64, src: u64, n: usize, stream: CudaStreamView<'_>) -> rmm::Result<()> {
    if n == 0 {
        return Ok(());
    }
    // SAFETY: forwarded contract; the synchronisation below ends the copy
    // before the call returns.
    unsafe { rmm::launch::memcpy_async(DevicePtr::new(dst), DevicePtr::new(src), n, stream) }?;
    stream.synchronize()
}

/// A new `DeviceBuffer` holding a copy of the host bytes `b`
/// (`rmm.pylibrmm.device_buffer.to_device`).
#[pyfunction]
#[pyo3(signature = (b, stream=StreamParam::Omitted))]
fn to_device(py: Python<'_>, b: &Bound<'_, PyAny>, stream: StreamParam<'_>) -> PyResult<PyDeviceBuffer> {
    if b.is_none() {
        return Err(PyTypeError::new_err(
            "Argument 'b' has incorrect type (expected bytes-like, got NoneType)",
        ));
    }
    PyDeviceBuffer::to_device(py, b, stream, None)
}

/// Copies `len(hb)` bytes from the device address `db` into the writable
/// host buffer `hb` (`rmm.pylibrmm.device_buffer.copy_ptr_to_host`); the
/// copy is done when the call returns.
#[pyfunction]
#[pyo3(signature = (db, hb, stream=StreamParam::Omitted))]
fn copy_ptr_to_host(py: Python<'_>, db: u64, hb: &Bound<'_, PyAny>, stream: StreamParam<'_>) -> PyResult<()> {
    let stream = stream.resolve(py)?;
    if hb.is_none() {
        return Err(PyTypeError::new_err(
            "Argument `hb` has incorrect type (expected bytes-like, got NoneType)",
        ));
    }
    let flat = byte_view(hb, "hb", true)?;
    let n: usize = flat.len()?;
    let mut data = vec![0u8; n];
    let (dst, view) = (data.as_mut_ptr() as u64, stream.get().view());
    #[allow(unsafe_code)]
    let copied = py.detach(|| {
        // SAFETY: as RMM's `copy_ptr_to_host`, the caller names `n`
        // readable bytes at `db`; the destination is `data`, `n` bytes
        // owned here; `copy_raw_sync` waits for the copy.
        unsafe { copy_raw_sync(dst, db, n, view) }
    });
    copied.py_err()?;
    let slice = py.import("builtins")?.getattr("slice")?.call1((0, n))?;
    flat.set_item(slice, PyBytes::new(py, &data))
}

/// Copies the bytes of the host buffer `hb` to the device address `db`
/// (`rmm.pylibrmm.device_buffer.copy_host_to_ptr`); the copy is done when
/// the call returns.
#[pyfunction]
#[pyo3(signature = (hb, db, stream=StreamParam::Omitted))]
fn copy_host_to_ptr(py: Python<'_>, hb: &Bound<'_, PyAny>, db: u64, stream: StreamParam<'_>) -> PyResult<()> {
    if hb.is_none() {
        return Err(PyTypeError::new_err(
            "Argument `hb` has incorrect type (expected bytes-like, got NoneType)",
        ));
    }
    let stream = stream.resolve(py)?;
    let src = HostSource::of(hb)?;
    let ((ptr, n), view) = (src.span(), stream.get().view());
    #[allow(unsafe_code)]
    let copied = py.detach(|| {
        // SAFETY: as RMM's `copy_host_to_ptr`, the caller names `n`
        // writable bytes at `db`; `src` (alive for the whole call) holds
        // `n` readable bytes at `ptr`; `copy_raw_sync` waits for the copy.
        unsafe { copy_raw_sync(db, ptr, n, view) }
    });
    copied.py_err()
}

/// Copies `count` bytes from the device address `d_src` to `d_dst`
/// (`rmm.pylibrmm.device_buffer.copy_device_to_ptr`); the copy is done
/// when the call returns.
#[pyfunction]
#[pyo3(signature = (d_src, d_dst, count, stream=StreamParam::Omitted))]
fn copy_device_to_ptr(
    py: Python<'_>,
    d_src: u64,
    d_dst: u64,
    count: &Bound<'_, PyAny>,
    stream: StreamParam<'_>,
) -> PyResult<()> {
    let n = size_arg(count, "count")?;
    let stream = stream.resolve(py)?;
    let view = stream.get().view();
    #[allow(unsafe_code)]
    let copied = py.detach(|| {
        // SAFETY: as RMM's `copy_device_to_ptr`, the caller names `count`
        // readable bytes at `d_src` and writable bytes at `d_dst`;
        // `copy_raw_sync` waits for the copy.
        unsafe { copy_raw_sync(d_dst, d_src, n, view) }
    });
    copied.py_err()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(to_device, m)?)?;
    m.add_function(wrap_pyfunction!(copy_ptr_to_host, m)?)?;
    m.add_function(wrap_pyfunction!(copy_host_to_ptr, m)?)?;
    m.add_function(wrap_pyfunction!(copy_device_to_ptr, m)?)?;
    Ok(())
}
