//! Modules and kernel launches (used by the kernels of the rmm-suite package).

use std::ffi::{c_void, CStr};

use cudarc::driver::sys as cu;

use super::device::ensure_context;
use crate::error::{Error, Result};

/// Loads a PTX module (NUL-terminated text) into the current context.
pub fn module_load_data(ptx_nul_terminated: &[u8]) -> Result<usize> {
    ensure_context()?;
    if ptx_nul_terminated.last() != Some(&0) {
        return Err(Error::InvalidArgument("PTX image must be NUL-terminated".into()));
    }
    let mut m: cu::CUmodule = std::ptr::null_mut();
    call!(cuModuleLoadData(&mut m, ptx_nul_terminated.as_ptr().cast()))?;
    Ok(m as usize)
}

/// Looks up a kernel by its unmangled name.
pub fn module_get_function(module: usize, name: &CStr) -> Result<usize> {
    ensure_context()?;
    let mut f: cu::CUfunction = std::ptr::null_mut();
    call!(cuModuleGetFunction(&mut f, module as cu::CUmodule, name.as_ptr()))?;
    Ok(f as usize)
}
/// How many blocks of `block_size` threads (with `dynamic_shared` bytes of
/// dynamic shared memory) of `function` fit on one multiprocessor at once
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
pub fn occupancy_max_active_blocks(function: usize, block_size: u32, dynamic_shared: usize) -> Result<i32> {
    ensure_context()?;
    let mut blocks: std::os::raw::c_int = 0;
    call!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &mut blocks,
        function as cu::CUfunction,
        block_size as std::os::raw::c_int,
        dynamic_shared
    ))?;
    Ok(blocks)
}

/// Launches `function` on `stream` (`cuLaunchKernel`).
///
/// # Safety
/// `params` holds one pointer per kernel parameter, each pointing to a
/// value of exactly the parameter's type, and the kernel's memory accesses
/// are valid for the whole time it runs in `stream` order.
pub unsafe fn launch_kernel(
    function: usize,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
    stream: usize,
    params: &mut [*mut c_void],
) -> Result<()> {
    ensure_context()?;
    call!(cuLaunchKernel(
        function as cu::CUfunction,
        grid.0,
        grid.1,
        grid.2,
        block.0,
        block.1,
        block.2,
        shared_bytes,
        stream as cu::CUstream,
        params.as_mut_ptr(),
        std::ptr::null_mut()
    ))
}
