//! Reductions (sum, min, max) in two launches of one kernel: a grid of
//! blocks writes one partial per block, then a single block reduces the
//! partials to the result.
//!
//! Each thread folds a grid-stride range of 16-byte vectors (four 32-bit or
//! two 64-bit elements per load, four loads in flight per thread: 64 bytes,
//! enough memory-level parallelism to keep HBM busy), the warp reduces with
//! butterfly shuffles, and warp 0 combines the per-warp results from shared
//! memory. The elements before the first 16-byte boundary and after the
//! last whole vector are folded one by one. Blocks have [`BLOCK`] threads.

use crate::device::{
    block_dim_x, block_idx_x, global_thread_x, grid_threads_x, lane_id, sync_threads, thread_idx_x, warp_id,
    warp_reduce,
};
use crate::num::Num;

/// Threads per block the host must launch with.
pub const BLOCK: u32 = kernel_abi::BLOCK;

/// Folds the elements of one 16-byte vector (4 of a 32-bit type, 2 of a
/// 64-bit one) into `acc`.
#[inline(always)]
fn fold_vector<T: Num>(acc: T, v: u128, op: impl Fn(T, T) -> T + Copy) -> T {
    let w = |k: u32| (v >> (32 * k)) as u32;
    if T::WIDE {
        op(acc, op(T::from_words(w(0), w(1)), T::from_words(w(2), w(3))))
    } else {
        let a = op(T::from_words(w(0), 0), T::from_words(w(1), 0));
        let b = op(T::from_words(w(2), 0), T::from_words(w(3), 0));
        op(acc, op(a, b))
    }
}

/// # Safety
/// `input` holds `n` elements (aligned to its type), `out` at least
/// `gridDim.x` elements, `warp_partials` is shared memory for `BLOCK / 32`
/// elements; 1-D blocks of `BLOCK` threads.
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
    let size = core::mem::size_of::<T>();
    let per_vector = 16 / size;
    // Elements before the first 16-byte boundary (the input is aligned to
    // its type, so the offset is a whole number of elements).
    let misalign = (input as usize) & 15;
    let head = if misalign == 0 {
        0
    } else {
        ((16 - misalign) / size).min(n)
    };
    let vectors = (n - head) / per_vector;
    let (mut a0, mut a1, mut a2, mut a3) = (identity, identity, identity, identity);
    // SAFETY (loads): every vector read lies in `input[head..head +
    // vectors * per_vector]`, 16-byte aligned; every element read is below `n`.
    unsafe {
        let v = input.add(head) as *const u128;
        let mut i = tid;
        while i + 3 * stride < vectors {
            let (x0, x1) = (v.add(i).read(), v.add(i + stride).read());
            let (x2, x3) = (v.add(i + 2 * stride).read(), v.add(i + 3 * stride).read());
            a0 = fold_vector(a0, x0, op);
            a1 = fold_vector(a1, x1, op);
            a2 = fold_vector(a2, x2, op);
            a3 = fold_vector(a3, x3, op);
            i += 4 * stride;
        }
        while i < vectors {
            a0 = fold_vector(a0, v.add(i).read(), op);
            i += stride;
        }
        if tid < head {
            a1 = op(a1, input.add(tid).read());
        }
        let mut j = head + vectors * per_vector + tid;
        while j < n {
            a2 = op(a2, input.add(j).read());
            j += stride;
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
