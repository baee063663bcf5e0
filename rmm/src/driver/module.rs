//! Modules and kernel launches (used by the kernels of the rmm-suite package).
//!
//! # Safety contract
//! A [`ModuleHandle`] is made by [`module_load_data`] and a
//! [`FunctionHandle`] by [`module_get_function`]; modules are never
//! unloaded, but a handle is a copyable integer, so the calls that take one
//! are `unsafe` and ask that it be live (its module loaded in a context that
//! still exists). A launch also asks for its parameters and the memory its
//! kernel touches ([`launch_kernel`]).

use std::ffi::{c_void, CStr};

use cudarc::driver::sys as cu;

use super::device::ensure_context;
use super::stream::StreamHandle;
use super::{call, check};
use crate::error::{Error, Result};

/// A `CUmodule` made by [`module_load_data`].
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ModuleHandle(usize);

/// A `CUfunction` (a kernel) made by [`module_get_function`].
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FunctionHandle(usize);

impl FunctionHandle {
    /// The driver's type, for a call.
    fn raw(self) -> cu::CUfunction {
        self.0 as cu::CUfunction
    }
}

/// Loads a module image into the current context: PTX text, or a cubin,
/// either followed by a NUL byte (the driver reads PTX up to the NUL and a
/// cubin as far as its ELF header says).
pub fn module_load_data(ptx_nul_terminated: &[u8]) -> Result<ModuleHandle> {
    ensure_context()?;
    if ptx_nul_terminated.last() != Some(&0) {
        return Err(Error::InvalidArgument("PTX image must be NUL-terminated".into()));
    }
    let mut m: cu::CUmodule = std::ptr::null_mut();
    // SAFETY: `m` is a valid out-pointer; the image is NUL-terminated (checked
    // above), so the driver reads no further than the slice.
    let status = call("cuModuleLoadData", || unsafe {
        cu::cuModuleLoadData(&mut m, ptx_nul_terminated.as_ptr().cast())
    });
    check(status, "cuModuleLoadData", 0)?;
    Ok(ModuleHandle(m as usize))
}

/// Looks up a kernel by its unmangled name.
///
/// # Safety
/// `module` is live.
pub unsafe fn module_get_function(module: ModuleHandle, name: &CStr) -> Result<FunctionHandle> {
    ensure_context()?;
    let mut f: cu::CUfunction = std::ptr::null_mut();
    // SAFETY: `f` is a valid out-pointer, `name` a NUL-terminated string for
    // the call; the caller's contract: `module` is live.
    let status = call("cuModuleGetFunction", || unsafe {
        cu::cuModuleGetFunction(&mut f, module.0 as cu::CUmodule, name.as_ptr())
    });
    check(status, "cuModuleGetFunction", 0)?;
    Ok(FunctionHandle(f as usize))
}

/// How many blocks of `block_size` threads (with `dynamic_shared` bytes of
/// dynamic shared memory) of `function` fit on one multiprocessor at once
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
///
/// # Safety
/// `function` is live.
pub unsafe fn occupancy_max_active_blocks(
    function: FunctionHandle,
    block_size: u32,
    dynamic_shared: usize,
) -> Result<i32> {
    ensure_context()?;
    let mut blocks: std::os::raw::c_int = 0;
    // SAFETY: `blocks` is a valid out-pointer; the caller's contract:
    // `function` is live.
    let status = call("cuOccupancyMaxActiveBlocksPerMultiprocessor", || unsafe {
        cu::cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut blocks,
            function.raw(),
            block_size as std::os::raw::c_int,
            dynamic_shared,
        )
    });
    check(status, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 0)?;
    Ok(blocks)
}

/// Launches `function` on `stream` (`cuLaunchKernel`).
///
/// # Safety
/// `function` and `stream` are live; `params` holds one pointer per kernel
/// parameter, each pointing to a value of exactly the parameter's type, and
/// the kernel's memory accesses are valid for the whole time it runs in
/// `stream` order.
pub unsafe fn launch_kernel(
    function: FunctionHandle,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
    stream: StreamHandle,
    params: &mut [*mut c_void],
) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract covers the handles, the parameters and
    // the kernel's memory; `extra` is null (parameters come through
    // `params` only).
    let status = call("cuLaunchKernel", || unsafe {
        cu::cuLaunchKernel(
            function.raw(),
            grid.0,
            grid.1,
            grid.2,
            block.0,
            block.1,
            block.2,
            shared_bytes,
            stream.raw(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    });
    check(status, "cuLaunchKernel", 0)
}
