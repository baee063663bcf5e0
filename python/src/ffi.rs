//! The C-ABI functions behind `rmm_rs.allocators.torch.rmm_torch_allocator`
//! (a `torch.cuda.memory.CUDAPluggableAllocator` over this extension
//! library): they allocate from, and free to, the current resource of the
//! device PyTorch names (`rmm_rs.mr.set_per_device_resource` /
//! `set_current_device_resource` / `reinitialize`).
//!
//! * `void* allocate(ssize_t size, int device, cudaStream_t stream)` and
//!   `void deallocate(void* ptr, ssize_t size, int device, cudaStream_t
//!   stream)`: plain C functions. No panic crosses the boundary (each body
//!   runs under `catch_unwind`); a failure or a panic is logged (debug log,
//!   error level) and `allocate` returns null.
//! * `void* rmm_rs_torch_allocate(ssize_t size, int device, cudaStream_t
//!   stream)`: what `rmm_torch_allocator` uses. PyTorch does not check the
//!   pointer its allocate function returns (a null would become a tensor at
//!   address 0, and the first kernel on it an illegal-address fault that
//!   poisons the CUDA context); it expects a C++ exception. So this one,
//!   after catching every panic and logging the failure exactly like
//!   `allocate`, throws a `std::bad_alloc` carrying the message
//!   (`src/throw.cpp`), which PyTorch raises as a Python `RuntimeError`
//!   containing `out_of_memory`. A Rust panic never unwinds out; only that
//!   deliberate C++ exception does, through `extern "C-unwind"`.
// `#[no_mangle]` and the call of the C++ thrower are what the `unsafe_code`
// lint flags here; nothing in this module dereferences a pointer.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CString};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

use rmm::device::{DeviceGuard, DeviceId};
use rmm::mr::{per_device_resource, MemoryResource, SharedResource};
use rmm::{CudaStreamView, DevicePtr, Error};

/// Alignment of every allocation handed to PyTorch.
const ALIGNMENT: usize = 256;

fn check_device(device: c_int) -> rmm::Result<DeviceId> {
    if device < 0 {
        return Err(Error::InvalidArgument(format!("device {device} is negative")));
    }
    Ok(DeviceId(device))
}

/// What both entry points need: the size in bytes, the device's current
/// resource, and (for a real resource) that device made current for the
/// call. Simulated resources (CPU tests) need no device.
fn prepare(size: isize, device: c_int) -> rmm::Result<(usize, SharedResource, Option<DeviceGuard>)> {
    let bytes =
        usize::try_from(size).map_err(|_| Error::InvalidArgument(format!("size {size} is negative")))?;
    let device = check_device(device)?;
    let mr = per_device_resource(device);
    let guard = if mr.is_simulated() {
        None
    } else {
        Some(DeviceGuard::new(device)?)
    };
    Ok((bytes, mr, guard))
}

fn allocate_impl(size: isize, device: c_int, stream: usize) -> rmm::Result<*mut c_void> {
    let (bytes, mr, _guard) = prepare(size, device)?;
    // SAFETY: PyTorch passes the live stream of `device` the memory is for;
    // the view is used for this call only.
    let view = unsafe { CudaStreamView::from_raw(stream) };
    let p = mr.allocate(bytes, ALIGNMENT, view)?;
    Ok(p.addr() as usize as *mut c_void)
}

fn deallocate_impl(ptr: *mut c_void, size: isize, device: c_int, stream: usize) -> rmm::Result<()> {
    let (bytes, mr, _guard) = prepare(size, device)?;
    // SAFETY: as in `allocate_impl`.
    let view = unsafe { CudaStreamView::from_raw(stream) };
    // SAFETY: PyTorch frees each pointer it got from `allocate` once, with
    // the size it asked for, on the device it named, after its own uses
    // (its caching allocator orders frees after the stream's work). The
    // device's resource is the one that allocated it as long as the current
    // resource is not changed under live tensors (RMM's rule, see
    // README). Resources that check frees log and ignore a foreign one.
    unsafe { mr.deallocate(DevicePtr::new(ptr as usize as u64), bytes, ALIGNMENT, view) };
    Ok(())
}

/// Allocates with every panic caught; the error message (already logged)
/// on failure.
fn guarded_allocate(size: isize, device: c_int, stream: usize) -> Result<*mut c_void, String> {
    match catch_unwind(AssertUnwindSafe(|| allocate_impl(size, device, stream))) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => {
            // The message carries the out-of-memory report's text;
            // `rmm_rs.last_oom_report()` gives the report itself.
            crate::forensics::remember(&e);
            let msg =
                format!("rmm_rs allocate({size} bytes, device {device}, stream {stream:#x}) failed: {e}");
            let _ = catch_unwind(|| log::error!("{msg}"));
            Err(msg)
        }
        Err(_) => {
            let msg = format!("rmm_rs allocate({size} bytes, device {device}) panicked");
            let _ = catch_unwind(|| log::error!("{msg}"));
            Err(msg)
        }
    }
}

/// `void* allocate(ssize_t size, int device, cudaStream_t stream)`: `size`
/// bytes from `device`'s current resource, ordered on `stream`; null on
/// failure (logged).
#[no_mangle]
pub extern "C" fn allocate(size: isize, device: c_int, stream: *mut c_void) -> *mut c_void {
    guarded_allocate(size, device, stream as usize).unwrap_or(std::ptr::null_mut())
}

extern "C-unwind" {
    /// Throws a C++ `std::bad_alloc` whose `what()` is `message` (copied).
    fn rmm_rs_throw_bad_alloc(message: *const c_char) -> !;
}

/// `void* rmm_rs_torch_allocate(ssize_t size, int device, cudaStream_t
/// stream)`: as [`allocate`], but a failure throws a C++ `std::bad_alloc`
/// (see the module docs): for PyTorch's `CUDAPluggableAllocator`, which
/// catches C++ exceptions and does not check for null. Not for callers
/// that cannot catch a C++ exception (ctypes, C).
#[no_mangle]
pub extern "C-unwind" fn rmm_rs_torch_allocate(
    size: isize,
    device: c_int,
    stream: *mut c_void,
) -> *mut c_void {
    match guarded_allocate(size, device, stream as usize) {
        Ok(p) => p,
        Err(msg) => {
            let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
            // SAFETY: `msg` is a valid NUL-terminated string for the call;
            // the C++ side copies it into the exception before throwing. The
            // exception unwinds through this `C-unwind` frame only (no
            // `catch_unwind` is on the way) into PyTorch's C++ caller.
            unsafe { rmm_rs_throw_bad_alloc(msg.as_ptr()) }
        }
    }
}

/// `void deallocate(void* ptr, ssize_t size, int device, cudaStream_t
/// stream)`: returns `ptr` to `device`'s current resource; failures are
/// logged.
#[no_mangle]
pub extern "C" fn deallocate(ptr: *mut c_void, size: isize, device: c_int, stream: *mut c_void) {
    let stream = stream as usize;
    match catch_unwind(AssertUnwindSafe(|| deallocate_impl(ptr, size, device, stream))) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            log::error!("rmm_rs torch deallocate({ptr:p}, {size} bytes, device {device}) failed: {e}");
        }
        Err(_) => {
            let _ = catch_unwind(|| log::error!("rmm_rs torch deallocate({ptr:p}, {size} bytes) panicked"));
        }
    }
}

/// The names of the C functions for `CUDAPluggableAllocator`:
/// `("rmm_rs_torch_allocate", "deallocate")`.
#[pyfunction]
pub(crate) fn extension_path_symbols() -> (&'static str, &'static str) {
    ("rmm_rs_torch_allocate", "deallocate")
}
