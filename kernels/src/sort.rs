//! LSD radix sort with 8-bit digits in "onesweep" form (Adinets & Merrill,
//! "Onesweep: A Faster Least Significant Digit Radix Sort for GPUs", 2022):
//! one read of the keys counts the digits of every pass, then each pass is
//! one launch that reads and writes every key once.
//!
//! 1. **histogram** (`rmm_radix_histogram_*`): blocks stride over the keys
//!    and count the digits of every pass at once in shared-memory
//!    histograms (`red.shared.add`, one copy per warp or pair of warps),
//!    then add them to `hist[pass * RADIX + digit]` (global atomics);
//! 2. **offsets** (`rmm_radix_offsets`): block `p` turns pass `p`'s counts
//!    into exclusive sums, the first output position of each digit;
//! 3. **onesweep** (`rmm_radix_onesweep_*`), once per digit: each block
//!    takes the next tile from a counter (so tile `t` starts only after
//!    tiles `0..t` did: every wait below ends), loads it coalesced, ranks
//!    its keys stably with a ballot-based multi-split (8 ballots give the
//!    lanes of a warp that share a digit; the lowest of them bumps a per-warp
//!    counter in shared memory), publishes the tile's count of each digit
//!    (thread `d` owns digit `d`), scatters the keys into shared memory in
//!    digit order, then finds how many keys of its digit the earlier tiles
//!    hold by decoupled look-back over their published counts (a word per
//!    tile and digit: flag bits and a 30-bit count, stored and loaded as
//!    one single-copy atomic access), publishes the inclusive count, and
//!    writes the tile out so that consecutive threads store consecutive
//!    positions of each digit's run.
//!
//! Inputs longer than [`PORTION_KEYS`] take several onesweep launches per
//! pass (the counts must fit 30 bits): the last tile of a portion writes
//! the digits' next output positions for the next portion.
//!
//! Three rankings measured slower on an H200 (2^28 `u32` keys, 3 blocks per
//! multiprocessor, 2026-12-01; this one ran at 34.2 to 34.4 Gkeys/s in two runs):
//! counting each warp's digits first (CUB's "early counts") so that each
//! key could go to shared memory as soon as it is ranked, 30.8, although it
//! spilled no registers; keeping two 16-bit ranks per register with the
//! digits recomputed, 30.9 (same run as 34.2); and finding a digit's peers
//! through a shared-memory mask word per digit (`red.shared.or`, a warp
//! barrier, one load) instead of 8 ballots, 31.8 (more spills; a later
//! run). The look-back's `nanosleep` made no difference (31.6 without, in
//! that run). The hardware's `match.any.sync.b32` in place of the 8
//! ballots: 23.2 against 34.2 in the same run.
//!
//! Stability: inside a tile a key's rank orders equal digits by input
//! position (warp-major, then item, then lane, which is the position order
//! of the loads); tiles are numbered in input order and each one's output
//! starts after the same digit's keys of every earlier tile. So each pass
//! is stable, and the LSD sort is too.
//!
//! Key order: `mode` selects the bit transform applied when extracting
//! digits (keys themselves are moved unchanged):
//! [`MODE_SIGNED`] flips the sign bit (two's complement integers),
//! [`MODE_FLOAT`] flips all bits of negative values and the sign bit of
//! others (IEEE floats: -NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN),
//! [`MODE_DESCENDING`] then inverts every bit (descending, still stable).
//! Plain keys (`mode` 0: unsigned, ascending) run kernels of their own
//! (`rmm_radix_histogram_plain_*`, `rmm_radix_onesweep_plain_*`), built
//! from the same bodies with `mode` fixed at 0, where a digit is a shift
//! and a mask. Measured on an H200 on 2026-12-01 (commit 68b2a16, three
//! alternating rounds) they took `u32` 2^28 from 38.87 to 40.19 Gkeys/s and `u64` 2^28 from
//! 15.20 to 16.11 (the 64-bit one at 3 blocks per multiprocessor).
//!
//! Tiles: 256 threads × `ITEMS` keys: 24 for 32-bit keys alone, 16 for
//! 32-bit keys with values and for 64-bit keys alone, 8 for 64-bit keys
//! with values (all within 48 KiB of static shared memory).

use crate::device::{
    atomic_add_u32, back_off, ballot, block_idx_x, grid_dim_x, lane_id, lanemask_lt, load_relaxed_u32,
    shared_red_add, shfl_idx, store_relaxed_u32, sync_threads, sync_warp, thread_idx_x, unroll, warp_id,
};
use crate::scan::block_exclusive_scan;

/// Threads per block the host must launch with (also the radix: thread `t`
/// owns digit `t` in the histograms).
pub const BLOCK: usize = kernel_abi::BLOCK as usize;
pub use kernel_abi::sort::{
    FLAG_GLOBAL, FLAG_MASK, FLAG_PARTIAL, HIST_BATCH, ITEMS_32, ITEMS_32_PAIRS, ITEMS_64, ITEMS_64_PAIRS,
    MODE_DESCENDING, MODE_FLOAT, MODE_SIGNED, PORTION_KEYS, RADIX, STATE_HEADER_WORDS, VALUE_MASK,
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

/// Shared words of the histogram kernel's counters: `copies` copies of
/// `passes` histograms; 32 KiB for both key widths.
pub const fn histogram_words(passes: usize) -> usize {
    histogram_copies(passes) * passes * RADIX
}

/// Copies of the histograms in the histogram kernel (warps share them
/// round-robin): one per warp for 32-bit keys, one per two warps for 64-bit.
pub const fn histogram_copies(passes: usize) -> usize {
    if passes <= 4 {
        WARPS
    } else {
        WARPS / 2
    }
}

/// Histogram body: adds the digit counts of every pass over `keys[..n]` to
/// `hist[pass * RADIX + digit]`. Blocks stride over the keys in batches of
/// `HIST_BATCH` keys per thread.
///
/// # Safety
/// `keys` holds `n` keys; `hist` holds `PASSES * RADIX` words only accessed
/// atomically while the kernel runs; `s_hist` is shared memory for
/// `histogram_words(PASSES)` words; 256-thread blocks. With `PLAIN` the
/// keys are plain (`mode` is taken as 0, see [`onesweep`]).
#[inline(always)]
pub(crate) unsafe fn histogram<K: SortKey, const PASSES: usize, const PLAIN: bool>(
    keys: *const K,
    n: usize,
    mode: u32,
    hist: *mut u32,
    s_hist: *mut u32,
) {
    let mode = if PLAIN { 0 } else { mode };
    let tid = thread_idx_x() as usize;
    let copies = histogram_copies(PASSES);
    let words = histogram_words(PASSES);
    // SAFETY (whole body): shared indices are below `words` (digits < RADIX,
    // copy < copies); global key indices below `n`, histogram indices below
    // PASSES * RADIX; the barriers order the zeroing before the counting and
    // the counting before the sums.
    unsafe {
        let mut w = tid;
        while w < words {
            s_hist.add(w).write(0);
            w += BLOCK;
        }
        sync_threads();
        let mine = s_hist.add((warp_id() as usize % copies) * PASSES * RADIX);
        let count = #[inline(always)]
        |key: K| {
            unroll::<PASSES>(
                #[inline(always)]
                |p| shared_red_add(mine.add(p * RADIX + key.digit(8 * p as u32, mode) as usize), 1),
            )
        };
        let batch = BLOCK * HIST_BATCH;
        let stride = grid_dim_x() as usize * batch;
        let mut start = block_idx_x() as usize * batch;
        while start < n {
            let i = start + tid;
            if start + batch <= n {
                let mut ks = [K::ZERO; HIST_BATCH];
                unroll::<HIST_BATCH>(
                    #[inline(always)]
                    |k| ks[k] = keys.add(i + k * BLOCK).read(),
                );
                unroll::<HIST_BATCH>(
                    #[inline(always)]
                    |k| count(ks[k]),
                );
            } else {
                let mut k = 0;
                while k < HIST_BATCH {
                    if i + k * BLOCK < n {
                        count(keys.add(i + k * BLOCK).read());
                    }
                    k += 1;
                }
            }
            start += stride;
        }
        sync_threads();
        let mut p = 0;
        while p < PASSES {
            let mut total = 0u32;
            let mut c = 0;
            while c < copies {
                total += s_hist.add((c * PASSES + p) * RADIX + tid).read();
                c += 1;
            }
            if total != 0 {
                atomic_add_u32(hist.add(p * RADIX + tid), total);
            }
            p += 1;
        }
    }
}

/// Offsets body: block `p` writes the exclusive sums of
/// `hist[p * RADIX..][..RADIX]` to `bases[p * stride..][..RADIX]`.
///
/// # Safety
/// `hist` holds `gridDim.x * RADIX` words, `bases` `(gridDim.x - 1) *
/// stride + RADIX`; `warp_totals` is shared memory for `WARPS` words;
/// 256-thread blocks.
#[inline(always)]
pub(crate) unsafe fn offsets(hist: *const u32, bases: *mut u32, stride: usize, warp_totals: *mut u32) {
    let p = block_idx_x() as usize;
    let d = thread_idx_x() as usize;
    // SAFETY: indices within the documented sizes; the whole block calls the scan.
    unsafe {
        let (first, _) = block_exclusive_scan::<u32, WARPS>(hist.add(p * RADIX + d).read(), warp_totals);
        bases.add(p * stride + d).write(first);
    }
}

/// Shared-memory regions of the onesweep kernel.
pub(crate) struct SweepShared<K> {
    /// The tile's keys in digit order (`BLOCK * ITEMS`).
    pub(crate) keys: *mut K,
    /// The tile's values in the same order (pairs only).
    pub(crate) vals: *mut u32,
    /// `WARPS * RADIX` per-warp digit counters.
    pub(crate) warp_counts: *mut u32,
    /// `RADIX`: output position of each digit's run, minus the tile position of its first key.
    pub(crate) global: *mut u32,
    /// `WARPS` words for the block scan.
    pub(crate) warp_totals: *mut u32,
    /// One word: the tile index.
    pub(crate) tile: *mut u32,
}

impl<K> Clone for SweepShared<K> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K> Copy for SweepShared<K> {}

/// The look-back word of `tile` and `digit` in the state.
#[inline(always)]
fn status(state: *mut u32, tile: usize, digit: usize) -> *mut u32 {
    state.wrapping_add(STATE_HEADER_WORDS + tile * RADIX + digit)
}

/// How many keys with digit `d` the tiles `0..tile` of the portion hold:
/// walks back from `tile - 1`, adding partial counts, up to the first tile
/// whose inclusive count is published.
///
/// # Safety
/// `state` as for `onesweep`; `1 <= tile`; tiles `0..tile` were taken
/// from the counter before this one (they run or ran, and publish their
/// counts without waiting on this tile).
#[inline(always)]
pub unsafe fn look_back(state: *mut u32, tile: usize, d: usize) -> u32 {
    let mut sum = 0u32;
    let mut t = tile;
    loop {
        t -= 1;
        let word = loop {
            // SAFETY: `t < tile` is a tile of this launch's state.
            let w = unsafe { load_relaxed_u32(status(state, t, d)) };
            if w & FLAG_MASK != 0 {
                break w;
            }
            back_off(32);
        };
        sum += word & VALUE_MASK;
        if word & FLAG_GLOBAL != 0 {
            return sum;
        }
    }
}

/// Onesweep body: one tile of the pass at `shift` (see the module docs).
///
/// # Safety
/// `keys_in`/`keys_out` (and for pairs `vals_in`/`vals_out`) hold `n < 2^32`
/// elements, inputs and outputs do not overlap; the launch has one block of
/// 256 threads per tile of the portion that starts at tile `first_tile`
/// (at most `portion_tiles` tiles, the last one may be partial);
/// `state` holds `state_words(gridDim.x)` words, zero at launch and used by
/// this launch only; `bases_in` holds the output position of each digit's
/// first key of the portion (the offsets kernel's, or the previous portion's
/// `bases_out`), `bases_out` `RADIX` words to receive the next portion's;
/// shared regions as declared by the kernels below.
///
/// `PLAIN`: the keys are plain (unsigned, ascending) and `mode` is taken as
/// 0, so that a digit is a shift and a mask. Plain keys get kernels of their
/// own rather than a branch on `mode` inside one kernel: the assembler
/// budgets registers per kernel, and a second copy of the body in the same
/// kernel made both copies spill (measured on an H200, 2026-12-01, before
/// commit b09c3ed).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn onesweep<K: SortKey, const ITEMS: usize, const PAIRS: bool, const PLAIN: bool>(
    keys_in: *const K,
    keys_out: *mut K,
    vals_in: *const u32,
    vals_out: *mut u32,
    n: usize,
    first_tile: usize,
    shift: u32,
    mode: u32,
    state: *mut u32,
    bases_in: *const u32,
    bases_out: *mut u32,
    s: SweepShared<K>,
) {
    let mode = if PLAIN { 0 } else { mode };
    let tile_len = BLOCK * ITEMS;
    let tid = thread_idx_x() as usize;
    let lane = lane_id();
    let warp = warp_id() as usize;
    // SAFETY (whole body and the steps it calls): global indices stay below
    // `n` (loads and stores are guarded by `valid`; output positions are a
    // permutation of [0, n) by construction of the bases and the counts);
    // shared indices stay inside their regions (digits < RADIX, tile
    // positions < tile_len); every shared-memory hand-off between threads
    // is separated by `sync_threads` (or `sync_warp` within a warp), see
    // the comments.
    unsafe {
        // Column `tid` of every warp's counters.
        let mut w = 0;
        while w < WARPS {
            s.warp_counts.add(w * RADIX + tid).write(0);
            w += 1;
        }
        if tid == 0 {
            s.tile.write(atomic_add_u32(state, 1));
        }
        sync_threads();
        let tile = s.tile.read() as usize;
        let tile_start = (first_tile + tile) * tile_len;
        let valid = (n - tile_start).min(tile_len);
        let mine = s.warp_counts.add(warp * RADIX);
        let lt = lanemask_lt();
        let wbase = warp * 32 * ITEMS;
        let first = tile_start + wbase + lane as usize;
        let (keys, vals) = load_tile::<K, ITEMS, PAIRS>(keys_in, vals_in, first, wbase, lane, valid);
        let digits = rank_in_warp::<K, ITEMS>(&keys, valid, wbase, lane, lt, shift, mode, mine);
        sync_threads();

        // Thread `tid` owns digit `tid`.
        let d = tid;
        let (count, dstart) = count_digit::<K, ITEMS>(s, state, tile, d, valid);
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

        // Keys of digit `d` in earlier tiles, then this tile's inclusive count.
        let before = if tile == 0 {
            0
        } else {
            let before = look_back(state, tile, d);
            store_relaxed_u32(status(state, tile, d), FLAG_GLOBAL | (before + count));
            before
        };
        let base = bases_in.add(d).read().wrapping_add(before);
        if tile + 1 == grid_dim_x() as usize {
            bases_out.add(d).write(base.wrapping_add(count));
        }
        // Position `i` of the tile (digit `d`) goes to
        // base + (i - dstart), in wrapping u32 arithmetic.
        s.global.add(d).write(base.wrapping_sub(dstart));
        sync_threads();

        // Consecutive threads store consecutive positions of each digit's run.
        let mut k = 0;
        while k < ITEMS {
            let i = k * BLOCK + tid;
            if i < valid {
                let key = s.keys.add(i).read();
                let kd = key.digit(shift, mode) as usize;
                let g = s.global.add(kd).read().wrapping_add(i as u32) as usize;
                keys_out.add(g).write(key);
                if PAIRS {
                    vals_out.add(g).write(s.vals.add(i).read());
                }
            }
            k += 1;
        }
    }
}

/// The onesweep's loads: this thread's `ITEMS` keys (and for pairs values)
/// of a tile of which `valid` are inputs. Item `j` of lane `lane` of the
/// warp whose items start at tile position `wbase` is tile position
/// `wbase + j * 32 + lane`, input `first + j * 32`; items past `valid` stay
/// zero. All loads come first (several in flight per thread).
///
/// # Safety
/// As [`onesweep`]: `first - wbase - lane` is the tile's first input and
/// `valid` inputs follow it.
#[inline(always)]
unsafe fn load_tile<K: SortKey, const ITEMS: usize, const PAIRS: bool>(
    keys_in: *const K,
    vals_in: *const u32,
    first: usize,
    wbase: usize,
    lane: u32,
    valid: usize,
) -> ([K; ITEMS], [u32; ITEMS]) {
    let mut keys = [K::ZERO; ITEMS];
    let mut vals = [0u32; ITEMS];
    // SAFETY: every position read is an input of the tile (the caller's contract).
    unsafe {
        if valid == BLOCK * ITEMS {
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
    }
    (keys, vals)
}

/// The onesweep's ranking inside a warp: for each of this thread's items,
/// its digit in bits 0..8 and its rank within the warp's run of that digit
/// in bits 8.. (below `32 * ITEMS`), counted in the warp's counters `mine`
/// (8 ballots find the lanes that share a digit; the lowest of them bumps
/// the counter). `wbase` is the warp's first tile position, `lane` the
/// thread's lane and `lt` the mask of the lanes below it.
///
/// # Safety
/// As [`onesweep`]: `mine` is this warp's `RADIX` counters in shared
/// memory, used by this warp only until the next `sync_threads`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn rank_in_warp<K: SortKey, const ITEMS: usize>(
    keys: &[K; ITEMS],
    valid: usize,
    wbase: usize,
    lane: u32,
    lt: u32,
    shift: u32,
    mode: u32,
    mine: *mut u32,
) -> [u32; ITEMS] {
    let mut digits = [0u32; ITEMS];
    unroll::<ITEMS>(
        #[inline(always)]
        |j| {
            digits[j] = if wbase + j * 32 + (lane as usize) < valid {
                keys[j].digit(shift, mode)
            } else {
                // Past the end: the largest digit, so these items rank
                // after every valid item and land at positions >= valid;
                // they are not counted in the published counts below.
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
                // SAFETY: `d < RADIX`, inside the warp's counters (the caller's contract).
                let c = unsafe { mine.add(d as usize) };
                // SAFETY: as above; only this lane touches it in this round.
                unsafe {
                    base = c.read();
                    c.write(base + peers.count_ones());
                }
            }
            base = shfl_idx(base, leader);
            digits[j] = d | ((base + (peers & lt).count_ones()) << 8);
            // The next round's leader may be another lane.
            sync_warp();
        },
    );
    digits
}

/// The onesweep's counts of digit `d` (the thread's own): turns every
/// warp's counter of `d` into the warp's exclusive offset within the tile,
/// publishes the tile's count of `d` (inputs only) for the look-back, and
/// returns it with `dstart`, the tile position of the digit's first key.
///
/// # Safety
/// As [`onesweep`]: called by every thread of the block, after the ranking
/// and a `sync_threads`.
#[inline(always)]
unsafe fn count_digit<K, const ITEMS: usize>(
    s: SweepShared<K>,
    state: *mut u32,
    tile: usize,
    d: usize,
    valid: usize,
) -> (u32, u32) {
    let tile_len = BLOCK * ITEMS;
    // SAFETY: `d < RADIX` and `w < WARPS` stay inside the counters; the
    // block scan is reached by every thread (the caller's contract).
    unsafe {
        // Per-warp exclusive offsets and the tile's count of the digit (all
        // items, padding included).
        let mut total = 0u32;
        let mut w = 0;
        while w < WARPS {
            let c = s.warp_counts.add(w * RADIX + d);
            let v = c.read();
            c.write(total);
            total += v;
            w += 1;
        }
        // The padding items (digit RADIX - 1, `tile_len - valid` of them)
        // move inside the tile but are not keys of the portion.
        let count = if d == RADIX - 1 {
            total - (tile_len - valid) as u32
        } else {
            total
        };
        // Publish early, so that later tiles' look-backs find it soon.
        let flag = if tile == 0 { FLAG_GLOBAL } else { FLAG_PARTIAL };
        store_relaxed_u32(status(state, tile, d), flag | count);

        let (dstart, _) = block_exclusive_scan::<u32, WARPS>(total, s.warp_totals);
        w = 0;
        while w < WARPS {
            let c = s.warp_counts.add(w * RADIX + d);
            c.write(c.read() + dstart);
            w += 1;
        }
        (count, dstart)
    }
}

/// Shared bytes of the onesweep's per-warp digit counters.
const WARP_COUNTS_BYTES: usize = WARPS * RADIX * 4;

macro_rules! sweep_shared {
    ($k:ty, $key_bytes:expr, $val_bytes:expr) => {
        SweepShared::<$k> {
            keys: crate::shared_bytes!(rmm_radix_keys, $key_bytes) as *mut $k,
            vals: crate::shared_bytes!(rmm_radix_vals, $val_bytes) as *mut u32,
            warp_counts: crate::shared_bytes!(rmm_radix_counts, WARP_COUNTS_BYTES) as *mut u32,
            global: crate::shared_bytes!(rmm_radix_global, RADIX * 4) as *mut u32,
            warp_totals: crate::shared_bytes!(rmm_radix_wtot, 64) as *mut u32,
            tile: crate::shared_bytes!(rmm_radix_tile, 4) as *mut u32,
        }
    };
}

/// Exclusive sums of each pass's digit counts (see [`offsets`]). Launch one
/// block of 256 threads per pass.
///
/// # Safety
/// `hist` holds `gridDim.x * 256` words, `bases` `(gridDim.x - 1) * stride
/// + 256`.
#[no_mangle]
#[cfg(target_arch = "nvptx64")]
pub unsafe extern "ptx-kernel" fn rmm_radix_offsets(hist: *const u32, bases: *mut u32, stride: usize) {
    let warp_totals = crate::shared_bytes!(rmm_radix_wtot, 64) as *mut u32;
    // SAFETY: forwarded host contract; `warp_totals` holds WARPS words.
    unsafe { offsets(hist, bases, stride, warp_totals) }
}

macro_rules! radix_keys_kernels {
    ($hist:ident, $sweep:ident: $k:ty, $passes:expr, $items:expr, $plain:expr) => {
        /// Digit counts of every pass: adds them to `hist[pass * 256 + digit]`
        /// (the `_plain_` kernels: plain keys, `mode` ignored).
        ///
        /// # Safety
        /// `keys` holds `n` keys; `hist` holds `passes * 256` words (zeroed
        /// by the host before the launch); 256-thread blocks, any grid.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $hist(keys: *const $k, n: usize, mode: u32, hist: *mut u32) {
            let s = crate::shared_bytes!(rmm_radix_hist, histogram_words($passes) * 4) as *mut u32;
            // SAFETY: forwarded host contract; `s` holds histogram_words words.
            unsafe { histogram::<$k, { $passes }, { $plain }>(keys, n, mode, hist, s) }
        }

        /// One onesweep pass (keys only) over one portion: stable scatter
        /// by the digit at `shift` (the `_plain_` kernels: plain keys,
        /// `mode` ignored).
        ///
        /// # Safety
        /// As [`onesweep`], with null value pointers.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $sweep(
            keys_in: *const $k,
            keys_out: *mut $k,
            n: usize,
            first_tile: usize,
            shift: u32,
            mode: u32,
            state: *mut u32,
            bases_in: *const u32,
            bases_out: *mut u32,
        ) {
            let s = sweep_shared!($k, BLOCK * $items * core::mem::size_of::<$k>(), 16);
            // SAFETY: forwarded host contract; the value pointers are unused.
            unsafe {
                onesweep::<$k, { $items }, false, { $plain }>(
                    keys_in,
                    keys_out,
                    core::ptr::null(),
                    core::ptr::null_mut(),
                    n,
                    first_tile,
                    shift,
                    mode,
                    state,
                    bases_in,
                    bases_out,
                    s,
                )
            }
        }
    };
}

macro_rules! radix_kernels {
    ($hist:ident, $sweep:ident, $pairs:ident, $hist_plain:ident, $sweep_plain:ident: $k:ty, $passes:expr, $items:expr, $pair_items:expr) => {
        radix_keys_kernels!($hist, $sweep: $k, $passes, $items, false);
        radix_keys_kernels!($hist_plain, $sweep_plain: $k, $passes, $items, true);

        /// One onesweep pass over one portion for key-value pairs (`u32`
        /// values move with their keys).
        ///
        /// # Safety
        /// As [`onesweep`].
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $pairs(
            keys_in: *const $k,
            keys_out: *mut $k,
            vals_in: *const u32,
            vals_out: *mut u32,
            n: usize,
            first_tile: usize,
            shift: u32,
            mode: u32,
            state: *mut u32,
            bases_in: *const u32,
            bases_out: *mut u32,
        ) {
            let s = sweep_shared!(
                $k,
                BLOCK * $pair_items * core::mem::size_of::<$k>(),
                BLOCK * $pair_items * 4
            );
            // SAFETY: forwarded host contract.
            unsafe {
                onesweep::<$k, { $pair_items }, true, false>(
                    keys_in, keys_out, vals_in, vals_out, n, first_tile, shift, mode, state, bases_in,
                    bases_out, s,
                )
            }
        }
    };
}

radix_kernels!(
    rmm_radix_histogram_32,
    rmm_radix_onesweep_32,
    rmm_radix_onesweep_pairs_32,
    rmm_radix_histogram_plain_32,
    rmm_radix_onesweep_plain_32: u32,
    4,
    ITEMS_32,
    ITEMS_32_PAIRS
);
radix_kernels!(
    rmm_radix_histogram_64,
    rmm_radix_onesweep_64,
    rmm_radix_onesweep_pairs_64,
    rmm_radix_histogram_plain_64,
    rmm_radix_onesweep_plain_64: u64,
    8,
    ITEMS_64,
    ITEMS_64_PAIRS
);
