//! The device-side toolbox (what `cuda_std` offers): indices, grid-stride
//! loops, barriers, warp shuffles, shared memory.

use core::arch::nvptx;

/// Aborts the kernel (and the context) with an illegal-instruction trap.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` takes no operands and never returns.
    unsafe { nvptx::trap() }
}

/// `threadIdx.x`.
#[inline(always)]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `blockIdx.x`.
#[inline(always)]
pub fn block_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `blockDim.x`.
#[inline(always)]
pub fn block_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `gridDim.x`.
#[inline(always)]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// The global thread index along x.
#[inline(always)]
pub fn global_thread_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// The total number of threads in the grid along x.
#[inline(always)]
pub fn grid_threads_x() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// Iterates `global_thread_x(), + grid_threads_x(), ...` below `n`: the
/// grid-stride loop.
#[inline(always)]
pub fn grid_stride(n: usize) -> impl Iterator<Item = usize> {
    (global_thread_x()..n).step_by(grid_threads_x().max(1))
}

/// `__syncthreads()`.
#[inline(always)]
pub fn sync_threads() {
    // SAFETY: every thread of the block reaches the barrier (callers' contract).
    unsafe { nvptx::_syncthreads() }
}
