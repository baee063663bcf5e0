//! Exclusive prefix sum, in three launches (reduce, then scan, then
//! downsweep):
//!
//! 1. `rmm_scan_partials_*`: block `b` owns the contiguous range of
//!    `tiles_per_block` tiles starting at `b * tiles_per_block * TILE` and
//!    writes its sum to `block_sums[b]`;
//! 2. `rmm_scan_single_*`: one block scans `block_sums` in place (exclusive);
//! 3. `rmm_scan_down_*`: block `b` scans its range tile by tile, starting
//!    from `block_sums[b]`.
//!
//! A tile is [`BLOCK`] threads × [`ITEMS`] consecutive elements per thread.
//! Integer sums wrap; float sums are computed in a tree order (not the
//! sequential order), so they round differently from a sequential loop.

use crate::device::{
    block_idx_x, lane_id, shfl_up, sync_threads, thread_idx_x, warp_id, warp_inclusive_scan, warp_reduce,
};
use crate::num::Num;

/// Threads per block the host must launch with.
pub const BLOCK: usize = kernel_abi::BLOCK as usize;
pub use kernel_abi::scan::{ITEMS, TILE};
const WARPS: usize = BLOCK / kernel_abi::WARP as usize;

/// Exclusive scan of one value per thread over the block; returns
/// `(exclusive prefix, block total)`.
///
/// # Safety
/// Every thread of the (BLOCK-thread) block calls it; `warp_totals` is shared
/// memory for `WARPS` elements, not used by anything else meanwhile.
#[inline(always)]
pub unsafe fn block_exclusive_scan<T: Num>(v: T, warp_totals: *mut T) -> (T, T) {
    let lane = lane_id();
    let warp = warp_id() as usize;
    let inclusive = warp_inclusive_scan(v, |a: T, b: T| a.add(b));
    let mut exclusive = shfl_up(inclusive, 1);
    if lane == 0 {
        exclusive = T::ZERO;
    }
    // SAFETY: each warp writes its own slot; barriers order the writes before
    // the reads and the reads before any later reuse of the slots.
    unsafe {
        if lane == 31 {
            warp_totals.add(warp).write(inclusive);
        }
        sync_threads();
        let mut prefix = T::ZERO;
        let mut total = T::ZERO;
        let mut w = 0;
        while w < WARPS {
            let t = warp_totals.add(w).read();
            if w < warp {
                prefix = prefix.add(t);
            }
            total = total.add(t);
            w += 1;
        }
        sync_threads();
        (prefix.add(exclusive), total)
    }
}

/// Scans the tile `[start, start + valid)` of `input` into `output` after
/// `carry`; returns `carry` plus the tile's sum.
///
/// # Safety
/// Whole block calls it; both arrays hold `start + valid` elements (they may
/// be the same array: each thread reads its elements before writing them);
/// `warp_totals` as in [`block_exclusive_scan`].
#[inline(always)]
unsafe fn scan_tile<T: Num>(
    input: *const T,
    output: *mut T,
    start: usize,
    valid: usize,
    carry: T,
    warp_totals: *mut T,
) -> T {
    let first = thread_idx_x() as usize * ITEMS;
    let mut v = [T::ZERO; ITEMS];
    let mut k = 0;
    while k < ITEMS {
        if first + k < valid {
            // SAFETY: `start + first + k < start + valid`.
            v[k] = unsafe { input.add(start + first + k).read() };
        }
        k += 1;
    }
    let mut sum = T::ZERO;
    k = 0;
    while k < ITEMS {
        let x = v[k];
        v[k] = sum;
        sum = sum.add(x);
        k += 1;
    }
    // SAFETY: forwarded contract.
    let (exclusive, total) = unsafe { block_exclusive_scan(sum, warp_totals) };
    let offset = carry.add(exclusive);
    k = 0;
    while k < ITEMS {
        if first + k < valid {
            // SAFETY: as the load.
            unsafe { output.add(start + first + k).write(offset.add(v[k])) };
        }
        k += 1;
    }
    carry.add(total)
}

/// Block `b`'s range: `[start, end)`.
#[inline(always)]
fn block_range(n: usize, tiles_per_block: usize) -> (usize, usize) {
    let span = tiles_per_block * TILE;
    let start = (block_idx_x() as usize).saturating_mul(span).min(n);
    (start, (start + span).min(n))
}

/// Step 1 body: block `b`'s sum into `block_sums[b]`.
///
/// # Safety
/// `input` holds `n` elements, `block_sums` `gridDim.x`; `warp_totals` is
/// shared memory for `WARPS` elements; 256-thread blocks.
#[inline(always)]
pub(crate) unsafe fn partials_impl<T: Num>(
    input: *const T,
    n: usize,
    tiles_per_block: usize,
    block_sums: *mut T,
    warp_totals: *mut T,
) {
    let (start, end) = block_range(n, tiles_per_block);
    let mut acc = T::ZERO;
    let mut i = start + thread_idx_x() as usize;
    while i < end {
        // SAFETY: `i < end <= n`.
        acc = acc.add(unsafe { input.add(i).read() });
        i += BLOCK;
    }
    let acc = warp_reduce(acc, |a: T, b: T| a.add(b));
    // SAFETY: each warp writes its slot; the barrier orders writes before reads.
    unsafe {
        if lane_id() == 0 {
            warp_totals.add(warp_id() as usize).write(acc);
        }
        sync_threads();
        if thread_idx_x() == 0 {
            let mut total = T::ZERO;
            let mut w = 0;
            while w < WARPS {
                total = total.add(warp_totals.add(w).read());
                w += 1;
            }
            block_sums.add(block_idx_x() as usize).write(total);
        }
    }
}

/// Step 2 body: one block scans `data[..m]` in place, tile by tile.
///
/// # Safety
/// `data` holds `m` elements; `warp_totals` as in [`partials_impl`]; one
/// 256-thread block.
#[inline(always)]
pub(crate) unsafe fn single_impl<T: Num>(data: *mut T, m: usize, warp_totals: *mut T) {
    let mut carry = T::ZERO;
    let mut start = 0;
    while start < m {
        let valid = (m - start).min(TILE);
        // SAFETY: forwarded contract; in place is allowed.
        carry = unsafe { scan_tile(data, data, start, valid, carry, warp_totals) };
        start += TILE;
    }
}

/// Step 3 body: block `b` scans its range from `block_sums[b]`.
///
/// # Safety
/// `input`/`output` hold `n` elements (identical or disjoint);
/// `block_sums` holds the scanned step-1 sums of the same grid and
/// `tiles_per_block`; `warp_totals` as in [`partials_impl`].
#[inline(always)]
pub(crate) unsafe fn down_impl<T: Num>(
    input: *const T,
    output: *mut T,
    n: usize,
    tiles_per_block: usize,
    block_sums: *const T,
    warp_totals: *mut T,
) {
    let (mut start, end) = block_range(n, tiles_per_block);
    if start >= end {
        return;
    }
    // SAFETY: the host sized `block_sums` for the grid.
    let mut carry = unsafe { block_sums.add(block_idx_x() as usize).read() };
    while start < end {
        let valid = (end - start).min(TILE);
        // SAFETY: forwarded contract.
        carry = unsafe { scan_tile(input, output, start, valid, carry, warp_totals) };
        start += TILE;
    }
}

macro_rules! scan_kernels {
    ($($partials:ident, $single:ident, $down:ident: $t:ty),*) => {$(
        /// Scan step 1: `block_sums[b]` = sum of block `b`'s range.
        ///
        /// # Safety
        /// `input` holds `n` elements, `block_sums` `gridDim.x`; 256-thread blocks.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $partials(
            input: *const $t, n: usize, tiles_per_block: usize, block_sums: *mut $t,
        ) {
            let s = crate::shared_bytes!(rmm_scan_smem, 64) as *mut $t;
            // SAFETY: forwarded host contract.
            unsafe { partials_impl(input, n, tiles_per_block, block_sums, s) }
        }
        /// Scan step 2 (also a general single-block scan): exclusive sum of
        /// `data[..m]` in place. Launch with one block of 256 threads.
        ///
        /// # Safety
        /// `data` holds `m` elements.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $single(data: *mut $t, m: usize) {
            let s = crate::shared_bytes!(rmm_scan_smem, 64) as *mut $t;
            // SAFETY: forwarded host contract.
            unsafe { single_impl(data, m, s) }
        }
        /// Scan step 3: exclusive sum of `input[..n]` into `output[..n]`,
        /// block `b` starting from `block_sums[b]`.
        ///
        /// # Safety
        /// `input` and `output` hold `n` elements and are the same array or do
        /// not overlap; `block_sums` holds `gridDim.x` scanned sums (same grid
        /// and `tiles_per_block` as step 1).
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $down(
            input: *const $t, output: *mut $t, n: usize, tiles_per_block: usize, block_sums: *const $t,
        ) {
            let s = crate::shared_bytes!(rmm_scan_smem, 64) as *mut $t;
            // SAFETY: forwarded host contract.
            unsafe { down_impl(input, output, n, tiles_per_block, block_sums, s) }
        }
    )*};
}
scan_kernels!(
    rmm_scan_partials_u32, rmm_scan_single_u32, rmm_scan_down_u32: u32,
    rmm_scan_partials_i32, rmm_scan_single_i32, rmm_scan_down_i32: i32,
    rmm_scan_partials_u64, rmm_scan_single_u64, rmm_scan_down_u64: u64,
    rmm_scan_partials_i64, rmm_scan_single_i64, rmm_scan_down_i64: i64,
    rmm_scan_partials_f32, rmm_scan_single_f32, rmm_scan_down_f32: f32,
    rmm_scan_partials_f64, rmm_scan_single_f64, rmm_scan_down_f64: f64
);
