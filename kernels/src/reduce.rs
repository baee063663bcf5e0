//! Reductions (sum, min, max) in two launches of one kernel: a grid of
//! blocks writes one partial per block, then a single block reduces the
//! partials to the result.
//!
//! Each thread folds a grid-stride range (four independent accumulators
//! for memory-level parallelism), the warp reduces with butterfly shuffles,
//! and warp 0 combines the per-warp results from shared memory. Blocks have
//! [`BLOCK`] threads.

use crate::device::{
    block_dim_x, block_idx_x, global_thread_x, grid_threads_x, lane_id, sync_threads, thread_idx_x, warp_id,
    warp_reduce,
};
use crate::num::Num;

/// Threads per block the host must launch with.
pub const BLOCK: u32 = kernel_abi::BLOCK;

/// # Safety
/// `input` holds `n` elements, `out` at least `gridDim.x` elements,
/// `warp_partials` is shared memory for `BLOCK / 32` elements; 1-D blocks of
/// `BLOCK` threads.
#[inline(always)]
pub(crate) unsafe fn reduce_impl<T: Num>(
    input: *const T,
    n: usize,
    out: *mut T,
    identity: T,
    op: impl Fn(T, T) -> T + Copy,
    warp_partials: *mut T,
) {
    let tid = global_thread_x();
    let stride = grid_threads_x();
    let (mut a0, mut a1, mut a2, mut a3) = (identity, identity, identity, identity);
    let mut i = tid;
    // SAFETY (loads): every index read is below `n`.
    unsafe {
        while i + 3 * stride < n {
            a0 = op(a0, input.add(i).read());
            a1 = op(a1, input.add(i + stride).read());
            a2 = op(a2, input.add(i + 2 * stride).read());
            a3 = op(a3, input.add(i + 3 * stride).read());
            i += 4 * stride;
        }
        while i < n {
            a0 = op(a0, input.add(i).read());
            i += stride;
        }
    }
    let acc = warp_reduce(op(op(a0, a1), op(a2, a3)), op);
    let warps = block_dim_x() / 32;
    // SAFETY: `warp_partials` has BLOCK / 32 slots; each warp writes its own,
    // and the barrier orders the writes before warp 0 reads them.
    unsafe {
        if lane_id() == 0 {
            warp_partials.add(warp_id() as usize).write(acc);
        }
        sync_threads();
        if warp_id() == 0 {
            let lane = lane_id();
            let v = if lane < warps {
                warp_partials.add(lane as usize).read()
            } else {
                identity
            };
            let total = warp_reduce(v, op);
            if thread_idx_x() == 0 {
                out.add(block_idx_x() as usize).write(total);
            }
        }
    }
}

macro_rules! reduce_kernels {
    ($($sum:ident, $min:ident, $max:ident: $t:ty),*) => {$(
        /// Sum of `input[..n]` (wrapping for integers): one partial per block
        /// into `out[blockIdx.x]`.
        ///
        /// # Safety
        /// `input` holds `n` elements; `out` holds `gridDim.x` elements and
        /// does not overlap `input`; blocks of 256 threads.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $sum(input: *const $t, n: usize, out: *mut $t) {
            let s = crate::shared_bytes!(rmm_reduce_smem, 256) as *mut $t;
            // SAFETY: forwarded host contract; `s` holds 8 elements.
            unsafe { reduce_impl(input, n, out, <$t as Num>::ZERO, |a: $t, b: $t| Num::add(a, b), s) }
        }
        /// Minimum of `input[..n]` (floats: NaNs ignored unless all are NaN),
        /// one partial per block; see the sum kernel for the contract.
        ///
        /// # Safety
        /// As the sum kernel.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $min(input: *const $t, n: usize, out: *mut $t) {
            let s = crate::shared_bytes!(rmm_reduce_smem, 256) as *mut $t;
            // SAFETY: forwarded host contract.
            unsafe { reduce_impl(input, n, out, <$t as Num>::MIN_IDENTITY, |a: $t, b: $t| Num::min(a, b), s) }
        }
        /// Maximum of `input[..n]` (floats: NaNs ignored unless all are NaN),
        /// one partial per block; see the sum kernel for the contract.
        ///
        /// # Safety
        /// As the sum kernel.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $max(input: *const $t, n: usize, out: *mut $t) {
            let s = crate::shared_bytes!(rmm_reduce_smem, 256) as *mut $t;
            // SAFETY: forwarded host contract.
            unsafe { reduce_impl(input, n, out, <$t as Num>::MAX_IDENTITY, |a: $t, b: $t| Num::max(a, b), s) }
        }
    )*};
}
reduce_kernels!(
    rmm_reduce_sum_u32, rmm_reduce_min_u32, rmm_reduce_max_u32: u32,
    rmm_reduce_sum_i32, rmm_reduce_min_i32, rmm_reduce_max_i32: i32,
    rmm_reduce_sum_u64, rmm_reduce_min_u64, rmm_reduce_max_u64: u64,
    rmm_reduce_sum_i64, rmm_reduce_min_i64, rmm_reduce_max_i64: i64,
    rmm_reduce_sum_f32, rmm_reduce_min_f32, rmm_reduce_max_f32: f32,
    rmm_reduce_sum_f64, rmm_reduce_min_f64, rmm_reduce_max_f64: f64
);
