//! LSD radix sort, 8-bit digits, one pass per digit (4 passes for 32-bit
//! keys, 8 for 64-bit keys). Each pass runs three launches:
//!
//! 1. **upsweep** (`rmm_radix_upsweep_*`): block `b` owns the contiguous
//!    range of `keys_per_block` keys starting at `b * keys_per_block` (a
//!    whole number of the downsweep's tiles) and counts the digits of its keys in per-warp shared-memory histograms
//!    (`red.shared.add`); it writes `counts[digit * gridDim.x + b]`
//!    (digit-major, so that an exclusive scan of `counts` gives each block
//!    the first output position of each digit);
//! 2. an exclusive scan of `counts` (the scan kernels of `scan.rs`);
//! 3. **downsweep** (`rmm_radix_downsweep_*`): block `b` walks its tiles in
//!    order. For each tile, every warp ranks its keys stably with a
//!    ballot-based multi-split (8 ballots give the lanes that share a
//!    digit; the lowest of them bumps a per-warp digit counter in shared
//!    memory), the counters are scanned into tile-local digit offsets, the
//!    keys (and values) are scattered into shared memory in digit order, and
//!    the block writes the sorted tile out so that consecutive threads store
//!    consecutive positions of each digit's run (coalesced). The block's
//!    running per-digit output offsets then advance by the tile's counts.
//!
//! Stability: inside a tile a key's rank orders equal digits by input
//! position (warp-major, then item, then lane, which is the position order
//! of the loads); tiles of a block are processed in order, and blocks'
//! offsets come from the digit-major scan in block order. So each pass is
//! stable, and the LSD sort is too.
//!
//! Key order: `mode` selects the bit transform applied when extracting
//! digits (keys themselves are moved unchanged):
//! [`MODE_SIGNED`] flips the sign bit (two's complement integers),
//! [`MODE_FLOAT`] flips all bits of negative values and the sign bit of
//! others (IEEE floats: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN),
//! [`MODE_DESCENDING`] then inverts every bit (descending, still stable).
//!
//! Downsweep tiles: 256 threads × `ITEMS` keys: 24 for 32-bit keys alone,
//! 16 for 32-bit keys with values and for 64-bit keys alone, 8 for 64-bit
//! keys with values (all within 48 KiB of static shared memory).

use crate::device::{
    ballot, block_idx_x, grid_dim_x, lane_id, lanemask_lt, shared_red_add, shfl_idx, sync_threads, sync_warp,
    thread_idx_x, unroll, warp_id,
};
use crate::scan::block_exclusive_scan;

/// Threads per block the host must launch with (also the radix: thread `t`
/// owns digit `t` in the histograms).
pub const BLOCK: usize = kernel_abi::BLOCK as usize;
pub use kernel_abi::sort::{
    ITEMS_32, ITEMS_32_PAIRS, ITEMS_64, ITEMS_64_PAIRS, MODE_DESCENDING, MODE_FLOAT, MODE_SIGNED, RADIX,
    UP_BATCH,
};
const WARPS: usize = BLOCK / kernel_abi::WARP as usize;
const _: () = assert!(BLOCK == RADIX, "the histograms give each thread one digit");

/// A radix-sortable key word (`u32` or `u64` bits).
pub trait SortKey: Copy {
    /// 0.
    const ZERO: Self;
    /// The 8-bit digit at `shift` of the order-preserving transform of `self`.
    fn digit(self, shift: u32, mode: u32) -> u32;
}

macro_rules! sort_key {
    ($($t:ty),*) => {$(
        impl SortKey for $t {
            const ZERO: Self = 0;
            #[inline(always)]
            fn digit(self, shift: u32, mode: u32) -> u32 {
                const SIGN: $t = 1 << (<$t>::BITS - 1);
                let mut k = self;
                if mode & MODE_FLOAT != 0 {
                    k = if k & SIGN != 0 { !k } else { k ^ SIGN };
                } else if mode & MODE_SIGNED != 0 {
                    k ^= SIGN;
                }
                if mode & MODE_DESCENDING != 0 {
                    k = !k;
                }
                ((k >> shift) & 0xff) as u32
            }
        }
    )*};
}
sort_key!(u32, u64);

/// Block `b`'s key range `[start, end)`.
#[inline(always)]
fn block_range(n: usize, tiles_per_block: usize, tile: usize) -> (usize, usize) {
    let span = tiles_per_block * tile;
    let start = (block_idx_x() as usize).saturating_mul(span).min(n);
    (start, (start + span).min(n))
}

/// Upsweep body: digit counts of `keys[b * keys_per_block ..][..keys_per_block]`
/// (clipped to `n`) into `counts[digit * gridDim.x + b]`; each thread loads
/// `ITEMS` keys per batch.
///
/// # Safety
/// `keys` holds `n` keys; `counts` holds `RADIX * gridDim.x` words;
/// `s_hist` is shared memory for `WARPS * RADIX` words; 256-thread blocks.
#[inline(always)]
pub(crate) unsafe fn upsweep<K: SortKey, const ITEMS: usize>(
    keys: *const K,
    n: usize,
    shift: u32,
    mode: u32,
    keys_per_block: usize,
    counts: *mut u32,
    s_hist: *mut u32,
) {
    let tid = thread_idx_x() as usize;
    let (start, end) = block_range(n, keys_per_block, 1);
    // SAFETY (whole body): shared indices are below WARPS * RADIX, global
    // indices below `end <= n` and `RADIX * gridDim.x`; the barriers order
    // the zeroing before the counting and the counting before the sums.
    unsafe {
        let mut w = 0;
        while w < WARPS {
            s_hist.add(w * RADIX + tid).write(0);
            w += 1;
        }
        sync_threads();
        let mine = s_hist.add(warp_id() as usize * RADIX);
        let mut i = start + tid;
        while i + (ITEMS - 1) * BLOCK < end {
            let mut ks = [K::ZERO; ITEMS];
            unroll::<ITEMS>(
                #[inline(always)]
                |k| ks[k] = keys.add(i + k * BLOCK).read(),
            );
            unroll::<ITEMS>(
                #[inline(always)]
                |k| shared_red_add(mine.add(ks[k].digit(shift, mode) as usize), 1),
            );
            i += ITEMS * BLOCK;
        }
        while i < end {
            shared_red_add(mine.add(keys.add(i).read().digit(shift, mode) as usize), 1);
            i += BLOCK;
        }
        sync_threads();
        let mut total = 0u32;
        w = 0;
        while w < WARPS {
            total += s_hist.add(w * RADIX + tid).read();
            w += 1;
        }
        counts
            .add(tid * grid_dim_x() as usize + block_idx_x() as usize)
            .write(total);
    }
}

/// Shared-memory regions of the downsweep.
pub(crate) struct DownShared<K> {
    pub(crate) keys: *mut K,
    pub(crate) vals: *mut u32,
    pub(crate) warp_counts: *mut u32,
    pub(crate) digit_start: *mut u32,
    pub(crate) global: *mut u32,
    pub(crate) warp_totals: *mut u32,
}

/// # Safety
/// `keys_in`/`keys_out` (and for pairs `vals_in`/`vals_out`) hold `n`
/// elements, inputs and outputs do not overlap; `offsets` holds the
/// exclusive scan of the upsweep's `counts` for the same grid, `shift`,
/// `mode` and `tiles_per_block`; `n < 2^32`; shared regions as declared by
/// the kernels below; 256-thread blocks.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn downsweep<K: SortKey, const ITEMS: usize, const PAIRS: bool>(
    keys_in: *const K,
    keys_out: *mut K,
    vals_in: *const u32,
    vals_out: *mut u32,
    n: usize,
    shift: u32,
    mode: u32,
    tiles_per_block: usize,
    offsets: *const u32,
    s: DownShared<K>,
) {
    let tile = BLOCK * ITEMS;
    let tid = thread_idx_x() as usize;
    let lane = lane_id();
    let warp = warp_id() as usize;
    let (start, end) = block_range(n, tiles_per_block, tile);
    if start >= end {
        // Uniform over the block: no barrier is skipped by only some threads.
        return;
    }
    // SAFETY (whole body): global indices stay below `n` (loads and stores
    // are guarded by `valid`; output positions are a permutation of the
    // block's share of [0, n) by construction of `offsets`); shared indices
    // stay inside their regions (digits < RADIX, tile positions < tile);
    // every shared-memory hand-off between threads is separated by
    // `sync_threads` (or `sync_warp` within a warp), see the comments.
    unsafe {
        s.global.add(tid).write(
            offsets
                .add(tid * grid_dim_x() as usize + block_idx_x() as usize)
                .read(),
        );
        let mine = s.warp_counts.add(warp * RADIX);
        let lt = lanemask_lt();
        let mut tile_start = start;
        while tile_start < end {
            let valid = (end - tile_start).min(tile);
            // Column `tid` of every warp's counters. The previous tile's last
            // reads of the counters happened before the barrier that precedes
            // its write-out.
            let mut w = 0;
            while w < WARPS {
                s.warp_counts.add(w * RADIX + tid).write(0);
                w += 1;
            }
            sync_threads();

            let mut keys = [K::ZERO; ITEMS];
            let mut vals = [0u32; ITEMS];
            // Digit in bits 0..8, then (after ranking) the rank within the
            // warp's run of that digit in bits 8.. (below 32 * ITEMS).
            let mut digits = [0u32; ITEMS];
            let wbase = warp * 32 * ITEMS;
            // All loads first (several in flight per thread), digits after.
            let first = tile_start + wbase + lane as usize;
            if valid == tile {
                unroll::<ITEMS>(
                    #[inline(always)]
                    |j| keys[j] = keys_in.add(first + j * 32).read(),
                );
                if PAIRS {
                    unroll::<ITEMS>(
                        #[inline(always)]
                        |j| vals[j] = vals_in.add(first + j * 32).read(),
                    );
                }
            } else {
                unroll::<ITEMS>(
                    #[inline(always)]
                    |j| {
                        if wbase + j * 32 + (lane as usize) < valid {
                            keys[j] = keys_in.add(first + j * 32).read();
                            if PAIRS {
                                vals[j] = vals_in.add(first + j * 32).read();
                            }
                        }
                    },
                );
            }
            unroll::<ITEMS>(
                #[inline(always)]
                |j| {
                    digits[j] = if wbase + j * 32 + (lane as usize) < valid {
                        keys[j].digit(shift, mode)
                    } else {
                        // Past the end: the largest digit, so these items rank
                        // after every valid item and land at positions >= valid.
                        (RADIX - 1) as u32
                    };
                },
            );
            unroll::<ITEMS>(
                #[inline(always)]
                |j| {
                    let d = digits[j];
                    let mut peers = u32::MAX;
                    unroll::<8>(
                        #[inline(always)]
                        |b| {
                            let bit = (d >> b) & 1 != 0;
                            let votes = ballot(bit);
                            peers &= if bit { votes } else { !votes };
                        },
                    );
                    let leader = peers.trailing_zeros();
                    let mut base = 0u32;
                    if lane == leader {
                        // Only the leader of this digit's group touches the
                        // counter in this round.
                        let c = mine.add(d as usize);
                        base = c.read();
                        c.write(base + peers.count_ones());
                    }
                    base = shfl_idx(base, leader);
                    digits[j] = d | ((base + (peers & lt).count_ones()) << 8);
                    // The next round's leader may be another lane.
                    sync_warp();
                },
            );
            sync_threads();

            // Thread `tid` owns digit `tid`: per-warp exclusive offsets, the
            // tile total, and the tile-local start of the digit.
            let d = tid;
            let mut total = 0u32;
            w = 0;
            while w < WARPS {
                let c = s.warp_counts.add(w * RADIX + d);
                let v = c.read();
                c.write(total);
                total += v;
                w += 1;
            }
            let (dstart, _) = block_exclusive_scan::<u32, WARPS>(total, s.warp_totals);
            s.digit_start.add(d).write(dstart);
            w = 0;
            while w < WARPS {
                let c = s.warp_counts.add(w * RADIX + d);
                c.write(c.read() + dstart);
                w += 1;
            }
            sync_threads();

            // Scatter into shared memory in digit order.
            unroll::<ITEMS>(
                #[inline(always)]
                |j| {
                    let pos = mine.add((digits[j] & 0xff) as usize).read() + (digits[j] >> 8);
                    s.keys.add(pos as usize).write(keys[j]);
                    if PAIRS {
                        s.vals.add(pos as usize).write(vals[j]);
                    }
                },
            );
            sync_threads();

            // Write the sorted tile out: position i of digit d goes to
            // global[d] + (i - digit_start[d]).
            let mut k = 0;
            while k < ITEMS {
                let i = k * BLOCK + tid;
                if i < valid {
                    let key = s.keys.add(i).read();
                    let kd = key.digit(shift, mode) as usize;
                    let g = s.global.add(kd).read() as usize + i - s.digit_start.add(kd).read() as usize;
                    keys_out.add(g).write(key);
                    if PAIRS {
                        vals_out.add(g).write(s.vals.add(i).read());
                    }
                }
                k += 1;
            }
            sync_threads();
            // Only thread `tid` touches global[tid] here; the next read of it
            // is after the next tile's barriers.
            s.global.add(tid).write(s.global.add(tid).read() + total);
            tile_start += tile;
        }
    }
}

const HIST_BYTES: usize = WARPS * RADIX * 4;

macro_rules! down_shared {
    ($k:ty, $key_bytes:expr, $val_bytes:expr) => {
        DownShared::<$k> {
            keys: crate::shared_bytes!(rmm_radix_keys, $key_bytes) as *mut $k,
            vals: crate::shared_bytes!(rmm_radix_vals, $val_bytes) as *mut u32,
            warp_counts: crate::shared_bytes!(rmm_radix_counts, HIST_BYTES) as *mut u32,
            digit_start: crate::shared_bytes!(rmm_radix_start, RADIX * 4) as *mut u32,
            global: crate::shared_bytes!(rmm_radix_global, RADIX * 4) as *mut u32,
            warp_totals: crate::shared_bytes!(rmm_radix_wtot, 64) as *mut u32,
        }
    };
}

macro_rules! radix_kernels {
    ($up:ident, $down:ident, $pairs:ident: $k:ty, $items:expr, $pair_items:expr) => {
        /// Radix upsweep: digit counts of each block's range into
        /// `counts[digit * gridDim.x + block]`.
        ///
        /// # Safety
        /// `keys` holds `n` keys; `counts` holds `256 * gridDim.x` words;
        /// 256-thread blocks; `shift` is a multiple of 8 below the key width;
        /// `keys_per_block` is the downsweep's `tiles_per_block` times its tile.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $up(
            keys: *const $k,
            n: usize,
            shift: u32,
            mode: u32,
            keys_per_block: usize,
            counts: *mut u32,
        ) {
            let hist = crate::shared_bytes!(rmm_radix_hist, HIST_BYTES) as *mut u32;
            // SAFETY: forwarded host contract; `hist` holds WARPS * RADIX words.
            unsafe { upsweep::<$k, UP_BATCH>(keys, n, shift, mode, keys_per_block, counts, hist) }
        }

        /// Radix downsweep (keys only): stable scatter of each block's range
        /// by the digit at `shift`.
        ///
        /// # Safety
        /// `keys_in` and `keys_out` hold `n < 2^32` keys and do not overlap;
        /// `offsets` is the exclusive scan of the upsweep's counts for the same
        /// grid, `shift`, `mode` and `tiles_per_block`; 256-thread blocks.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $down(
            keys_in: *const $k,
            keys_out: *mut $k,
            n: usize,
            shift: u32,
            mode: u32,
            tiles_per_block: usize,
            offsets: *const u32,
        ) {
            let s = down_shared!($k, BLOCK * $items * core::mem::size_of::<$k>(), 16);
            // SAFETY: forwarded host contract; the value pointers are unused.
            unsafe {
                downsweep::<$k, { $items }, false>(
                    keys_in,
                    keys_out,
                    core::ptr::null(),
                    core::ptr::null_mut(),
                    n,
                    shift,
                    mode,
                    tiles_per_block,
                    offsets,
                    s,
                )
            }
        }

        /// Radix downsweep for key-value pairs (`u32` values move with their keys).
        ///
        /// # Safety
        /// As the keys-only downsweep; `vals_in` and `vals_out` hold `n`
        /// values and overlap nothing else.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $pairs(
            keys_in: *const $k,
            keys_out: *mut $k,
            vals_in: *const u32,
            vals_out: *mut u32,
            n: usize,
            shift: u32,
            mode: u32,
            tiles_per_block: usize,
            offsets: *const u32,
        ) {
            let s = down_shared!(
                $k,
                BLOCK * $pair_items * core::mem::size_of::<$k>(),
                BLOCK * $pair_items * 4
            );
            // SAFETY: forwarded host contract.
            unsafe {
                downsweep::<$k, { $pair_items }, true>(
                    keys_in,
                    keys_out,
                    vals_in,
                    vals_out,
                    n,
                    shift,
                    mode,
                    tiles_per_block,
                    offsets,
                    s,
                )
            }
        }
    };
}

radix_kernels!(
    rmm_radix_upsweep_32,
    rmm_radix_downsweep_32,
    rmm_radix_downsweep_pairs_32: u32,
    ITEMS_32,
    ITEMS_32_PAIRS
);
radix_kernels!(
    rmm_radix_upsweep_64,
    rmm_radix_downsweep_64,
    rmm_radix_downsweep_pairs_64: u64,
    ITEMS_64,
    ITEMS_64_PAIRS
);
