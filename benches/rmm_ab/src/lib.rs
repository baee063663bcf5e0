//! A C ABI over the project's memory resources, for `rmm_ab.cu` (beside
//! this crate), which runs the allocator workloads of the anchors'
//! WORKLOADS.md on RMM's resources and on ours **in one process**,
//! alternating between the two every repetition.
//!
//! Why: on the GPU machine allocator times drift by up to 2x between
//! processes and over time, for RMM and for us alike
//! (docs/known-issues.md, "Timing noise on the GPU machine"). Separate
//! processes, even in alternating rounds, then compare two different
//! moments of the machine. In one process, repetitions of the same row a
//! few hundred milliseconds apart see the same machine, so the ratio of
//! their medians measures the two resources rather than the noise.
//!
//! The functions are a thin layer over [`rmm_replay::by_name::resource`] and
//! [`rmm::mr::MemoryResource`]; the C++ side calls them through plain function
//! calls, which cost nanoseconds against the hundreds a driver call takes.
//!
//! ```
//! use std::ffi::CString;
//! // Without a GPU, the simulated pool (addresses only) still works.
//! let name = CString::new("simulated-pool").unwrap();
//! // SAFETY: `name` is a NUL-terminated string; the handle is freed below,
//! // and the simulated resource accepts any stream value.
//! unsafe {
//!     let h = rmm_ab::rmm_ab_new(name.as_ptr(), 1 << 30);
//!     assert!(!h.is_null());
//!     let p = rmm_ab::rmm_ab_allocate(h, 1000, 0);
//!     assert_ne!(p, 0);
//!     rmm_ab::rmm_ab_deallocate(h, p, 1000, 0);
//!     rmm_ab::rmm_ab_drop(h);
//! }
//! ```

use std::ffi::{c_char, CStr};

use cudarc::driver::sys as cu;
use rmm::mr::{CudaAsyncMemoryResource, SharedResource};
use rmm::{CudaStreamView, DevicePtr};
use rmm_replay::by_name::{self, ByNameOptions};

/// Alignment of every request, as the workloads use (RMM's
/// `CUDA_ALLOCATION_ALIGNMENT`).
pub const ALIGN: usize = 256;

/// One resource of ours, owned by the C++ side between [`rmm_ab_new`] and
/// [`rmm_ab_drop`].
pub struct Handle {
    mr: SharedResource,
}

/// Builds the resource `name` ([`rmm_replay::by_name`]: `cuda_async`, `pool`,
/// `binning`, ... or a `simulated-` row without a GPU) with pools starting
/// at (and arenas of) `pool_bytes`; null when it cannot be built (the
/// reason goes to standard error). With `RMM_AB_CAPTURE_DETECTION=registered`
/// in the environment it first sets
/// [`CaptureDetection::Registered`](rmm::graph::CaptureDetection) for the
/// process.
///
/// # Safety
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_new(name: *const c_char, pool_bytes: usize) -> *mut Handle {
    // SAFETY: the caller passes a NUL-terminated string.
    let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    // RMM_AB_CAPTURE_DETECTION=registered: only captures begun through rmm
    // are looked for (no driver query per allocation), to weigh that query.
    if std::env::var("RMM_AB_CAPTURE_DETECTION").is_ok_and(|v| v == "registered") {
        rmm::graph::set_capture_detection(rmm::graph::CaptureDetection::Registered);
    }
    let mut opts = ByNameOptions::default().pool_initial_size(pool_bytes);
    if name.ends_with("arena") {
        // The global arena as large as the pools (RMM's side gets the same).
        opts = opts.arena_size(pool_bytes);
    }
    if name.starts_with("simulated") {
        opts = opts.simulated_size(2 * pool_bytes.max(1 << 20));
    }
    match by_name::resource(&name, &opts) {
        Ok(mr) => Box::into_raw(Box::new(Handle { mr })),
        Err(e) => {
            eprintln!("rmm_ab_new({name}): {e}");
            std::ptr::null_mut()
        }
    }
}

/// Allocates `bytes` (aligned to [`ALIGN`]) on `stream`; 0 when the
/// resource refuses (out of memory or another error).
///
/// # Safety
/// `h` came from [`rmm_ab_new`] and was not dropped; `stream` is a live
/// stream of device 0's primary context, or 0 (the legacy default
/// stream), for as long as the allocation is used.
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_allocate(h: *const Handle, bytes: usize, stream: usize) -> u64 {
    // SAFETY: `h` is a live handle (caller's contract).
    let h = unsafe { &*h };
    // SAFETY: `stream` is a live stream or 0 (caller's contract).
    let stream = unsafe { CudaStreamView::from_raw(stream) };
    h.mr.inner()
        .allocate(bytes, ALIGN, stream)
        .map_or(0, |p| p.addr())
}

/// Frees `ptr`, allocated by [`rmm_ab_allocate`] with `bytes` on `stream`.
/// A free the resource refuses (its misuse checks) changes nothing and is
/// logged.
///
/// # Safety
/// `h` came from [`rmm_ab_new`] and was not dropped; `stream` as for
/// [`rmm_ab_allocate`]; the memory is no longer used (in `stream` order).
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_deallocate(h: *const Handle, ptr: u64, bytes: usize, stream: usize) {
    // SAFETY: `h` is a live handle (caller's contract).
    let h = unsafe { &*h };
    // SAFETY: `stream` is a live stream or 0 (caller's contract).
    let stream = unsafe { CudaStreamView::from_raw(stream) };
    // SAFETY: the caller frees memory it allocated here and no longer uses;
    // anything else is refused by the resource's checks, not trusted.
    unsafe { h.mr.inner().deallocate(DevicePtr::new(ptr), bytes, ALIGN, stream) }
}

/// The driver pool behind `h` (a `cuda_async` resource) as a
/// `CUmemoryPool`; 0 for every other resource.
///
/// # Safety
/// `h` came from [`rmm_ab_new`] and was not dropped.
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_pool_handle(h: *const Handle) -> usize {
    // SAFETY: `h` is a live handle (caller's contract).
    let h = unsafe { &*h };
    h.mr.inner()
        .downcast_ref::<CudaAsyncMemoryResource>()
        .map_or(0, CudaAsyncMemoryResource::pool_handle)
}

/// `cuMemAllocFromPoolAsync` on `pool` through the driver binding our
/// resources use (cudarc's, the library loaded at run time) and nothing
/// else: no device check, no error mapping. The floor under `cuda_async`
/// in this process, against which `rmm_ab.cu` weighs our resource's own
/// layers. 0 when the driver refuses.
///
/// # Safety
/// `pool` is a live `CUmemoryPool` of the current context's device;
/// `stream` as for [`rmm_ab_allocate`].
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_binding_allocate(pool: usize, bytes: usize, stream: usize) -> u64 {
    let mut p: cu::CUdeviceptr = 0;
    // SAFETY: `p` is a valid out-pointer; the handles are live (caller's
    // contract) and the driver was loaded by the resource that owns `pool`.
    let status = unsafe {
        cu::cuMemAllocFromPoolAsync(&mut p, bytes, pool as cu::CUmemoryPool, stream as cu::CUstream)
    };
    if status == cu::CUresult::CUDA_SUCCESS {
        p
    } else {
        0
    }
}

/// `cuMemFreeAsync` through the same binding as
/// [`rmm_ab_binding_allocate`]; a refusal is ignored (the C++ side frees
/// only what it allocated there).
///
/// # Safety
/// `ptr` came from [`rmm_ab_binding_allocate`] and is no longer used in
/// `stream` order; `stream` as for [`rmm_ab_allocate`].
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_binding_deallocate(ptr: u64, stream: usize) {
    // SAFETY: the caller's contract; the driver validates the handles.
    let _ = unsafe { cu::cuMemFreeAsync(ptr, stream as cu::CUstream) };
}

/// Drops the resource (it returns its memory upstream).
///
/// # Safety
/// `h` came from [`rmm_ab_new`], is dropped once, and none of its
/// allocations is used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rmm_ab_drop(h: *mut Handle) {
    if !h.is_null() {
        // SAFETY: `h` came from `Box::into_raw` in `rmm_ab_new`, once.
        drop(unsafe { Box::from_raw(h) });
    }
}
