//! Every raw CUDA driver call of the crate lives in this module, one file
//! per API group: [`device`] (initialisation, devices, contexts, peers),
//! [`memory`] (allocations, copies, memsets, prefetch, pointer queries),
//! [`pool`] (driver pools and stream-ordered allocation), [`vmm`] (virtual
//! memory management), [`stream`] (streams and events), [`graph`] (stream
//! capture, graphs, user objects) and [`module`] (modules and kernel
//! launches). It is private to the crate
//! (`pub(crate)`); sibling crates use the typed, public surface in
//! [`crate::launch`] and [`crate::device`].
//!
//! The binding is cudarc's raw `cudarc::driver::sys` (CUDA 12.8
//! declarations), with the driver library loaded at run time: nothing of CUDA
//! is needed to build, and a binary starts on a machine without the NVIDIA
//! driver. Status codes become [`Error`]s through [`Error::from_cuda`], the
//! one place where out-of-memory is recognised.
//!
//! # Handles
//! Driver objects are typed: [`StreamHandle`], [`EventHandle`],
//! [`PoolHandle`], [`AllocationHandle`], [`ModuleHandle`],
//! [`FunctionHandle`], [`GraphHandle`], [`GraphExecHandle`],
//! [`UserObjectHandle`] and the primary contexts' [`ContextHandle`]. Each is
//! a `#[repr(transparent)]`, `Copy` wrapper of the handle's bits, made by
//! the function that creates, imports or looks up the object or, where a
//! raw value enters from outside (a stream or pool of another library,
//! given by Python, cust or a caller as an integer), by an explicit
//! `from_raw`. A copy of a handle can outlive its object, so every
//! function that takes one (other than a [`ContextHandle`], whose primary
//! context is never released) is `unsafe`, and its `# Safety` section asks
//! that the handle be live. Each group's module documentation states the
//! contract its calls share; each call's `// SAFETY:` comment says why that
//! call meets it.
//!
//! # Without a driver
//! cudarc panics when a function is called and the library (or the symbol)
//! cannot be loaded. [`init`] therefore first checks that the library loads
//! and exports every entry point named in [`ENTRY_POINTS`]; otherwise it
//! returns [`Error::DriverUnavailable`], and so does every function here,
//! since each one calls [`init`] (directly or through [`ensure_context`])
//! before its first driver call. [`device_count`] is then 0.
//!
//! Contexts follow the CUDA runtime's model: each device's *primary* context
//! is retained once and kept for the life of the process (the same context
//! CuPy and PyTorch use); a thread that has no current context gets the
//! primary context of device 0 on its first driver call, as `cudaSetDevice(0)`
//! would give it.

use std::ffi::CStr;

use cudarc::driver::sys as cu;

use crate::error::{Error, Result};

/// Makes one raw driver call `name`: runs `raw` and returns its status,
/// unless fault injection (feature `fault-injection`, `crate::fault`)
/// fails the call, in which case `raw` is never run and the injected status
/// is returned. Every raw call of the group files goes through here (the
/// test `every_call_goes_through_the_hook` checks it); without the feature
/// this is `raw()`.
#[inline(always)]
fn call(name: &'static str, raw: impl FnOnce() -> cu::CUresult) -> cu::CUresult {
    #[cfg(feature = "fault-injection")]
    if let Some(error) = crate::fault::driver_fault(name) {
        return injected_status(error);
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = name;
    raw()
}

/// The driver status of an injected fault.
#[cfg(feature = "fault-injection")]
#[cold]
fn injected_status(error: crate::fault::InjectedError) -> cu::CUresult {
    use crate::fault::InjectedError;
    match error {
        InjectedError::OutOfMemory => cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
        InjectedError::LaunchFailed => cu::CUresult::CUDA_ERROR_LAUNCH_FAILED,
        InjectedError::Unknown => cu::CUresult::CUDA_ERROR_UNKNOWN,
    }
}

/// Maps a driver status to `Ok(())` or an [`Error`] via [`Error::from_cuda`].
#[inline]
fn check(status: cu::CUresult, call: &'static str, requested: usize) -> Result<()> {
    if status == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(error(status, call, requested))
}

/// The [`Error`] of a failed driver call (out of line: every call's success
/// path stays a compare and a branch).
#[cold]
#[inline(never)]
fn error(status: cu::CUresult, call: &'static str, requested: usize) -> Error {
    Error::from_cuda(status as u32, error_name(status), call, requested)
}

/// The driver's name for a status code (`CUDA_ERROR_...`).
fn error_name(status: cu::CUresult) -> &'static str {
    let mut name: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string (or leaves it
    // null for unknown codes); `name` is a valid out-pointer.
    let ok = unsafe { cu::cuGetErrorName(status, &mut name) };
    if ok != cu::CUresult::CUDA_SUCCESS || name.is_null() {
        return "CUDA_ERROR_UNKNOWN";
    }
    // SAFETY: the driver returns a NUL-terminated string with static lifetime.
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .unwrap_or("CUDA_ERROR_UNKNOWN")
}

pub mod device;
pub mod graph;
pub mod memory;
pub mod module;
pub mod pool;
pub mod stream;
pub mod vmm;

pub use device::*;
pub use graph::*;
pub use memory::*;
pub use module::*;
pub use pool::*;
pub use stream::*;
pub use vmm::*;

/// The driver library as the NVIDIA driver installs it (what error messages name).
const DRIVER_LIBRARY: &str = if cfg!(windows) {
    "nvcuda.dll"
} else {
    "libcuda.so.1"
};

/// Every driver entry point this module calls, checked once by [`init`]
/// before the first call: cudarc panics on a missing symbol, we return an
/// error instead. Keep in step with the calls of the group files (the test
/// `entry_points_cover_every_call` reads them and checks it).
const ENTRY_POINTS: &[&str] = &[
    "cuGetErrorName",
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuMemGetInfo_v2",
    "cuDeviceGetAttribute",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocManaged",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemPoolTrimTo",
    "cuMemPoolSetAttribute",
    "cuMemPoolGetAttribute",
    "cuMemGetAllocationGranularity",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemSetAccess",
    "cuMemUnmap",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuMemcpyAsync",
    "cuMemcpyPeerAsync",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemPrefetchAsync",
    "cuMemAdvise",
    "cuMemPoolExportToShareableHandle",
    "cuMemPoolImportFromShareableHandle",
    "cuMemPoolExportPointer",
    "cuMemPoolImportPointer",
    "cuMemRangeGetAttribute",
    "cuPointerGetAttribute",
    "cuDeviceCanAccessPeer",
    "cuCtxEnablePeerAccess",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuLaunchKernel",
    "cuCtxPushCurrent_v2",
    "cuCtxPopCurrent_v2",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuStreamIsCapturing",
    "cuStreamGetCaptureInfo_v3",
    "cuStreamGetCtx",
    "cuThreadExchangeStreamCaptureMode",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
    "cuGraphGetNodes",
    "cuUserObjectCreate",
    "cuUserObjectRelease",
    "cuGraphRetainUserObject",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The sources of the group files (every driver call but `cuGetErrorName` is in one).
    const GROUP_FILES: [&str; 7] = [
        include_str!("device.rs"),
        include_str!("graph.rs"),
        include_str!("memory.rs"),
        include_str!("module.rs"),
        include_str!("pool.rs"),
        include_str!("stream.rs"),
        include_str!("vmm.rs"),
    ];

    /// Every raw driver call of the group files (outside their tests) is
    /// made through [`call`] under its own name, so fault injection can fail
    /// any of them; `cuGetErrorName` (which only names a failure) is the one
    /// exception.
    #[test]
    fn every_call_goes_through_the_hook() {
        let files = GROUP_FILES;
        let mut hooked = 0;
        for file in files {
            let code = file.split("\n#[cfg(test)]\nmod tests").next().unwrap();
            for (at, _) in code.match_indices("cu::cu") {
                let name: String = code[at + 4..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !code[at + 4 + name.len()..].starts_with('(') || !name.as_bytes()[2].is_ascii_uppercase() {
                    continue; // a type or constant, not a call
                }
                let block = code[..at]
                    .rfind("unsafe {")
                    .expect("a driver call outside an unsafe block");
                let before = &code[..block];
                let by_name = before.ends_with(&format!("call(\"{name}\", || "));
                let memset = name.starts_with("cuMemsetD") && before.ends_with("call(name, || ");
                assert!(
                    by_name || memset,
                    "{name} is called without the fault-injection hook"
                );
                hooked += 1;
            }
        }
        assert!(hooked > 70, "found only {hooked} hooked calls");
    }

    /// Every `cu*` function the group files call is in [`ENTRY_POINTS`], so
    /// that [`super::init`] checks it before cudarc could panic on it.
    #[test]
    fn entry_points_cover_every_call() {
        let source = [include_str!("mod.rs")]
            .iter()
            .chain(&GROUP_FILES)
            .copied()
            .collect::<String>();
        let source = source.as_str();
        let mut called = Vec::new();
        for (at, marker) in source.match_indices("cu::") {
            let name: String = source[at + marker.len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.starts_with("cu") {
                called.push(name);
            }
        }
        called.sort();
        called.dedup();
        // Driver entry points are `cu` + a capital letter; this keeps out
        // cudarc's loader helpers (`cu::culib`).
        called.retain(|n| n.len() > 2 && n.as_bytes()[2].is_ascii_uppercase());
        assert!(called.len() > 40, "found only {called:?}");
        for name in &called {
            assert!(
                ENTRY_POINTS.contains(&name.as_str()),
                "{name} is called but not in ENTRY_POINTS"
            );
        }
        for name in ENTRY_POINTS {
            assert!(
                called.iter().any(|c| c == name),
                "{name} is in ENTRY_POINTS but never called"
            );
        }
    }
}
