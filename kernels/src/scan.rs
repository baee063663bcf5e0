//! Prefix sums (exclusive and inclusive) in a single pass with decoupled
//! look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with
//! Decoupled Look-back", 2016): every element is read once and written once.
//!
//! One block scans one tile of [`TILE`] elements ([`BLOCK`] threads ×
//! [`ITEMS`] consecutive elements each):
//!
//! 1. thread 0 takes the tile's index from the global tile counter (not
//!    `blockIdx.x`), so tile `t` only starts once tiles `0..t` have started:
//!    they are resident or done, and every wait below ends;
//! 2. the block loads its elements and reduces them (the tile's aggregate):
//!    each warp loads its part of the tile *striped* (lane `l` reads
//!    elements `l, l + 32, …`: every load instruction of the warp reads 32
//!    consecutive elements, so it is coalesced) into shared memory, and each
//!    thread then reads its [`ITEMS`] consecutive elements from there (a
//!    warp transpose, padded by one slot every 32 so that neither direction
//!    has bank conflicts); the outputs go back the same way, so the stores
//!    are coalesced too. Loading and storing each thread's consecutive
//!    elements straight from global memory made every store instruction
//!    touch 32 sectors: 0.75 TB/s on an H200, a quarter of its bandwidth;
//! 3. tile 0 publishes its aggregate as its inclusive prefix; every other
//!    tile publishes it as an aggregate, then warp 0 looks back over the
//!    predecessors' descriptors, a window of [`LOOKBACK_WINDOW`] at a
//!    time (each lane loads one),
//!    adding aggregates up to the nearest inclusive prefix; it publishes its
//!    own inclusive prefix (exclusive prefix + aggregate);
//! 4. the block writes its outputs from the exclusive prefix.
//!
//! The descriptors (layout in `kernel_abi::scan`): for 32-bit elements one
//! 64-bit word per tile holding status and value, stored and loaded as one
//! single-copy atomic access (no fence needed: the reader uses nothing but
//! that word); for 64-bit elements a status word per tile plus separate
//! aggregate and inclusive-prefix slots, each written once, the status
//! stored with release semantics after its slot and loaded with acquire
//! semantics before it. The host zeroes the counter and the statuses before
//! each launch.
//!
//! Integer sums wrap; float sums are grouped differently from a sequential
//! loop (per thread, then a tree per block, then per look-back window), so
//! they may round differently, and they start from `+0.0`.

use crate::device::{
    atomic_add_u32, back_off, ballot, lane_id, load_acquire_u32, load_relaxed_u64, shfl_up,
    store_relaxed_u64, store_release_u32, sync_threads, sync_warp, thread_idx_x, warp_id,
    warp_inclusive_scan, warp_reduce,
};
use crate::num::Num;
use kernel_abi::scan::{HEADER_BYTES, MODE_INCLUSIVE, STATUS_AGGREGATE, STATUS_INVALID, STATUS_PREFIX};

/// Threads per block the host must launch with.
pub const BLOCK: usize = kernel_abi::scan::BLOCK as usize;
pub use kernel_abi::scan::{ITEMS, LOOKBACK_WINDOW, TILE};
const WARPS: usize = BLOCK / kernel_abi::WARP as usize;
const _: () = assert!(LOOKBACK_WINDOW == 32, "one look-back lane per predecessor");

/// Exclusive scan of one value per thread over the block; returns
/// `(exclusive prefix, block total)`.
///
/// The block's warp count is a constant (the loop over the warps' totals
/// unrolls; the radix sort, then a downsweep with 8-warp blocks, slowed from
/// 27 to 19 Gkeys/s when it was read from `blockDim` instead).
///
/// # Safety
/// Every thread of the block, which has `WARPS` warps, calls it;
/// `warp_totals` is shared memory for `WARPS` elements, not used by
/// anything else meanwhile.
#[inline(always)]
pub unsafe fn block_exclusive_scan<T: Num, const WARPS: usize>(v: T, warp_totals: *mut T) -> (T, T) {
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

/// The tile counter and descriptors in the state buffer of one launch
/// (layout: `kernel_abi::scan`).
#[derive(Clone, Copy)]
pub struct TileState {
    base: *mut u8,
    tiles: usize,
}

impl TileState {
    /// The state of a scan over `tiles` tiles at `base`.
    ///
    /// # Safety
    /// `base` is 8-byte aligned and holds `kernel_abi::scan::state_bytes`
    /// bytes for `T` and `tiles`, zeroed up to `zeroed_bytes` before any
    /// block of the launch ran, and accessed by nothing but this launch.
    #[inline(always)]
    pub unsafe fn new(base: *mut u8, tiles: usize) -> TileState {
        TileState { base, tiles }
    }

    /// Takes the next tile index (called once per block).
    ///
    /// # Safety
    /// As [`TileState::new`].
    #[inline(always)]
    unsafe fn next_tile(self) -> usize {
        // SAFETY: the counter is the first, aligned word of the state.
        unsafe { atomic_add_u32(self.base as *mut u32, 1) as usize }
    }

    /// 32-bit elements: the packed descriptor of `tile`.
    #[inline(always)]
    fn packed(self, tile: usize) -> *mut u64 {
        // Stays in the state (`tile < tiles`, callers' contract).
        (self.base.wrapping_add(HEADER_BYTES) as *mut u64).wrapping_add(tile)
    }

    /// 64-bit elements: the status of `tile`.
    #[inline(always)]
    fn status(self, tile: usize) -> *mut u32 {
        (self.base.wrapping_add(HEADER_BYTES) as *mut u32).wrapping_add(tile)
    }

    /// 64-bit elements: the aggregate (or, `prefix`, inclusive prefix) slot of `tile`.
    #[inline(always)]
    fn slot(self, tile: usize, prefix: bool) -> *mut u64 {
        let values = kernel_abi::scan::values_offset(8, self.tiles);
        let first = if prefix { self.tiles } else { 0 };
        (self.base.wrapping_add(values) as *mut u64).wrapping_add(first + tile)
    }

    /// Publishes `value` for `tile` with `status` (aggregate or prefix).
    ///
    /// # Safety
    /// As [`TileState::new`], `tile < tiles`; each `(tile, status)` is
    /// published once, the aggregate before the prefix.
    #[inline(always)]
    pub unsafe fn publish<T: Num>(self, tile: usize, status: u32, value: T) {
        if !T::WIDE {
            let word = ((status as u64) << 32) | value.lo() as u64;
            // SAFETY: an aligned word of the state, only accessed atomically.
            unsafe { store_relaxed_u64(self.packed(tile), word) }
        } else {
            let bits = value.lo() as u64 | ((value.hi() as u64) << 32);
            // SAFETY: as above; the slot is written once, before the release
            // store of the status that tells readers to read it.
            unsafe {
                store_relaxed_u64(self.slot(tile, status == STATUS_PREFIX), bits);
                store_release_u32(self.status(tile), status);
            }
        }
    }

    /// The status of `tile` and, unless invalid, its value.
    ///
    /// # Safety
    /// As [`TileState::publish`].
    #[inline(always)]
    pub unsafe fn load<T: Num>(self, tile: usize) -> (u32, T) {
        if !T::WIDE {
            // SAFETY: an aligned word of the state, only accessed atomically.
            let word = unsafe { load_relaxed_u64(self.packed(tile)) };
            ((word >> 32) as u32, T::from_words(word as u32, 0))
        } else {
            // SAFETY: as above; the acquire load orders the slot's load after
            // it, and a status other than invalid means the slot was written.
            unsafe {
                let status = load_acquire_u32(self.status(tile));
                if status == STATUS_INVALID {
                    return (status, T::ZERO);
                }
                let bits = load_relaxed_u64(self.slot(tile, status == STATUS_PREFIX));
                (status, T::from_words(bits as u32, (bits >> 32) as u32))
            }
        }
    }
}

/// The exclusive prefix of `tile` (`>= 1`): the sum of every earlier tile,
/// from their descriptors. Every lane of one warp calls it; in each round
/// lane `l` reads the descriptor of tile `end - 1 - l` (one window of
/// [`LOOKBACK_WINDOW`] tiles), waiting until every one read is published;
/// the window is summed up to the nearest inclusive prefix; without one the
/// round moves a window back.
///
/// One window per round, measured: on an H200, 2^28 `u32` scanned at
/// 1.08 TB/s with one window per round, 0.93 TB/s with two and 0.86 TB/s
/// with four, all in flight together (the same run): waiting for every
/// descriptor of a deeper round, and the extra polling traffic, cost more
/// than the round trips they saved.
///
/// # Safety
/// As [`TileState::publish`]; tiles `0..tile` were taken from the counter
/// (so their blocks run or ran and publish without waiting on this one).
#[inline(always)]
pub unsafe fn look_back<T: Num>(state: TileState, tile: usize) -> T {
    let lane = lane_id() as usize;
    let mut prefix = T::ZERO;
    let mut end = tile;
    loop {
        // A lane past tile 0 acts as an inclusive prefix of 0 (tile 0 always
        // publishes a prefix, so no sum reaches past it).
        let (status, value) = loop {
            let read = if lane < end {
                // SAFETY: `end - 1 - lane < tile < tiles`.
                unsafe { state.load::<T>(end - 1 - lane) }
            } else {
                (STATUS_PREFIX, T::ZERO)
            };
            if ballot(read.0 == STATUS_INVALID) == 0 {
                break read;
            }
            back_off(64);
        };
        let prefixes = ballot(status == STATUS_PREFIX);
        // Lanes up to the nearest inclusive prefix (all when there is none).
        let take = if prefixes == 0 {
            LOOKBACK_WINDOW
        } else {
            prefixes.trailing_zeros() as usize + 1
        };
        let part = if lane < take { value } else { T::ZERO };
        prefix = warp_reduce(part, |a: T, b: T| a.add(b)).add(prefix);
        if prefixes != 0 {
            return prefix;
        }
        end -= LOOKBACK_WINDOW;
    }
}

/// Elements of one warp's transpose area: its `32 * ITEMS` elements plus
/// one padding slot every 32.
pub const WARP_EXCHANGE: usize = 32 * ITEMS + ITEMS;

/// Shared bytes of [`Shared::exchange`] for elements of `size` bytes.
pub const fn exchange_bytes(size: usize) -> usize {
    WARPS * WARP_EXCHANGE * size
}

/// Shared bytes of [`Shared::exchange`] for the widest (8-byte) elements.
pub const EXCHANGE_BYTES: usize = exchange_bytes(8);

/// Index `i` of a warp's transpose area, padded.
#[inline(always)]
fn padded(i: usize) -> usize {
    i + i / 32
}

/// Block-shared memory of the scan kernel.
#[derive(Clone, Copy)]
pub struct Shared<T> {
    /// `WARPS` elements for [`block_exclusive_scan`].
    pub warp_totals: *mut T,
    /// `WARPS * WARP_EXCHANGE` elements: the warps' transpose areas.
    pub exchange: *mut T,
    /// The tile index (one `u32`).
    pub tile: *mut u32,
    /// The tile's exclusive prefix (one `T`).
    pub prefix: *mut T,
}

/// Shared bytes of [`Shared::warp_totals`] (8-byte elements at most).
pub const WARP_TOTALS_BYTES: usize = WARPS * 8;

/// The kernel body: scans one tile of `input[..n]` into `output[..n]`,
/// exclusive or (`mode & MODE_INCLUSIVE`) inclusive.
///
/// # Safety
/// `input` and `output` hold `n >= 1` elements and are the same array or do
/// not overlap; the launch has `kernel_abi::scan::tiles(n)` blocks of
/// [`BLOCK`] threads; `state` as in [`TileState::new`] for those tiles;
/// `shared` points to this block's shared memory of the sizes documented on
/// [`Shared`], not used by anything else.
#[inline(always)]
pub unsafe fn scan_impl<T: Num>(
    input: *const T,
    output: *mut T,
    n: usize,
    state: *mut u8,
    mode: u32,
    shared: Shared<T>,
) {
    let tiles = n.div_ceil(TILE);
    // SAFETY: forwarded contract.
    let state = unsafe { TileState::new(state, tiles) };
    let tid = thread_idx_x() as usize;
    // SAFETY: thread 0 writes the shared slot; the barrier orders it before
    // every thread's read (and `block_exclusive_scan`'s barriers come before
    // anything else touches shared memory).
    let tile = unsafe {
        if tid == 0 {
            shared.tile.write(state.next_tile() as u32);
        }
        sync_threads();
        shared.tile.read() as usize
    };
    if tile >= tiles {
        return; // a grid larger than the tiles (block-uniform)
    }
    let start = tile * TILE;
    let valid = (n - start).min(TILE);
    let lane = lane_id() as usize;
    // This warp's elements are tile[warp_base..warp_base + 32 * ITEMS];
    // thread `tid` owns tile[tid * ITEMS..][..ITEMS].
    let warp_base = warp_id() as usize * 32 * ITEMS;
    // SAFETY: the warp's own area of `exchange` (per contract).
    let xs = unsafe { shared.exchange.add(warp_id() as usize * WARP_EXCHANGE) };
    let mut v = [T::ZERO; ITEMS];
    // SAFETY: striped loads below `valid` (elements past it are zero, the
    // sum's identity); each lane writes its own padded slots, and the warp
    // barrier orders those writes before the blocked reads.
    unsafe {
        let mut k = 0;
        while k < ITEMS {
            let i = k * 32 + lane;
            let x = if warp_base + i < valid {
                input.add(start + warp_base + i).read()
            } else {
                T::ZERO
            };
            xs.add(padded(i)).write(x);
            k += 1;
        }
        sync_warp();
        k = 0;
        while k < ITEMS {
            v[k] = xs.add(padded(lane * ITEMS + k)).read();
            k += 1;
        }
    }
    let mut sum = T::ZERO;
    let mut k = 0;
    while k < ITEMS {
        sum = sum.add(v[k]);
        k += 1;
    }
    // SAFETY: the whole block calls it; `warp_totals` per contract.
    let (exclusive, aggregate) = unsafe { block_exclusive_scan::<T, WARPS>(sum, shared.warp_totals) };
    let prefix = if tile == 0 {
        if tid == 0 {
            // SAFETY: tile 0 < tiles; published once.
            unsafe { state.publish(0, STATUS_PREFIX, aggregate) };
        }
        T::ZERO
    } else {
        // SAFETY: tile < tiles; the aggregate is published once before the
        // prefix (both by thread 0, in that order); tiles `0..tile` were taken
        // from the counter before this one; lane 0 writes the shared prefix
        // before the barrier, every thread reads it after.
        unsafe {
            if tid == 0 {
                state.publish(tile, STATUS_AGGREGATE, aggregate);
            }
            if warp_id() == 0 {
                let exclusive_prefix = look_back::<T>(state, tile);
                if tid == 0 {
                    state.publish(tile, STATUS_PREFIX, exclusive_prefix.add(aggregate));
                    shared.prefix.write(exclusive_prefix);
                }
            }
            sync_threads();
            shared.prefix.read()
        }
    };
    let inclusive = mode & MODE_INCLUSIVE != 0;
    let mut acc = prefix.add(exclusive);
    // SAFETY: every lane finished its blocked reads (the barrier inside
    // `block_exclusive_scan` came after them) before any lane writes its
    // blocked outputs into the same area; the warp barrier orders those
    // writes before the striped reads; stores go below `valid` only, to
    // elements this warp read before.
    unsafe {
        k = 0;
        while k < ITEMS {
            let out = if inclusive { acc.add(v[k]) } else { acc };
            xs.add(padded(lane * ITEMS + k)).write(out);
            acc = acc.add(v[k]);
            k += 1;
        }
        sync_warp();
        k = 0;
        while k < ITEMS {
            let i = k * 32 + lane;
            if warp_base + i < valid {
                output.add(start + warp_base + i).write(xs.add(padded(i)).read());
            }
            k += 1;
        }
    }
}

macro_rules! scan_kernels {
    ($($name:ident: $t:ty),*) => {$(
        /// Single-pass scan of `input[..n]` into `output[..n]`: exclusive, or
        /// inclusive when `mode & MODE_INCLUSIVE`. Launch `tiles(n)` blocks
        /// of 256 threads.
        ///
        /// # Safety
        /// `input` and `output` hold `n >= 1` elements and are the same array
        /// or do not overlap; `state` holds `state_bytes(size, tiles(n))`
        /// bytes (8-byte aligned), the first `zeroed_bytes` of them zero
        /// (see `kernel_abi::scan`), used by this launch only.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $name(
            input: *const $t, output: *mut $t, n: usize, state: *mut u8, mode: u32,
        ) {
            let shared = Shared {
                warp_totals: crate::shared_bytes!(rmm_scan_warp_totals, WARP_TOTALS_BYTES) as *mut $t,
                // Sized for `$t`: a 32-bit scan's blocks take half the shared
                // memory of a 64-bit one's, so more of them fit.
                exchange: crate::shared_bytes!(rmm_scan_exchange, exchange_bytes(core::mem::size_of::<$t>()))
                    as *mut $t,
                tile: crate::shared_bytes!(rmm_scan_tile, 4) as *mut u32,
                prefix: crate::shared_bytes!(rmm_scan_prefix, 8) as *mut $t,
            };
            // SAFETY: forwarded host contract; the shared arrays are this
            // kernel's own, of the documented sizes.
            unsafe { scan_impl(input, output, n, state, mode, shared) }
        }
    )*};
}
scan_kernels!(
    rmm_scan_u32: u32,
    rmm_scan_i32: i32,
    rmm_scan_u64: u64,
    rmm_scan_i64: i64,
    rmm_scan_f32: f32,
    rmm_scan_f64: f64
);
