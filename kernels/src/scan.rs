//! Prefix sums (exclusive and inclusive) in a single pass with decoupled
//! look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan with
//! Decoupled Look-back", 2016): every element is read once and written once.
//!
//! One block scans one tile of [`tile`] elements. Its data threads (every
//! thread for 32-bit elements; all but warp 0, the look-back warp, for
//! 64-bit ones: `kernel_abi::scan::lookback_warp`) hold [`items`]
//! consecutive elements each, 128 bytes per thread for every element type:
//!
//! 1. thread 0 takes the tile's index from the global tile counter (not
//!    `blockIdx.x`), so tile `t` only starts once tiles `0..t` have started:
//!    they are resident or done, and every wait below ends;
//! 2. each data warp loads its part of the tile *striped* (lane `l` moves the
//!    16-byte vectors `l, l + 32, …`, so every load instruction of the warp
//!    reads 512 consecutive bytes) into its area of shared memory, swizzled
//!    so that neither this nor the next step has bank conflicts; each
//!    thread then sums its consecutive elements there, and the warps' sums
//!    make the tile's aggregate. The elements stay in shared
//!    memory, not in registers, until the outputs are written: loading and
//!    storing each thread's consecutive elements straight from global
//!    memory made every store instruction touch 32 sectors (0.75 TB/s on an
//!    H200), and keeping them in registers across the look-back made the
//!    assembler spill at the register budget of 6 to 8 blocks per
//!    multiprocessor;
//! 3. tile 0 publishes its aggregate as its inclusive prefix; every other
//!    tile publishes it as an aggregate, and warp 0 waits
//!    [`LOOKBACK_START_NS`] and looks back over the predecessors'
//!    descriptors, a window of [`LOOKBACK_WINDOW`] at a time (each lane
//!    loads one), adding aggregates up to the nearest inclusive prefix; then
//!    the tile's inclusive prefix (exclusive prefix + aggregate) is
//!    published. With 32-bit elements warp 0 looks back once the block has
//!    summed the tile (`block_prefix`); with 64-bit ones the look-back
//!    warp starts with the tile, while the data warps load it
//!    (`look_back_warp`, `data_warps_prefix`);
//! 4. each thread rewrites its elements in shared memory as outputs (from
//!    the exclusive prefix), and the warp stores them striped, as it loaded
//!    them.
//!
//! Tiles that are not whole, and arrays not 16-byte aligned, move element
//! by element instead of in 16-byte vectors (same layout in shared memory).
//!
//! The descriptors (layout in `kernel_abi::scan`): 64-bit words holding a
//! status in their high half and 32 value bits in their low half, one per
//! tile for 32-bit elements and two for 64-bit ones, each stored and
//! loaded as one single-copy atomic access: no fence is needed, since a
//! reader uses nothing but those words. The host zeroes the state before
//! each launch.
//!
//! Integer sums wrap; float sums are grouped differently from a sequential
//! loop (per thread, then a tree per block, then per look-back window), so
//! they may round differently, and they start from `+0.0`.

use crate::device::{
    atomic_add_u32, back_off, ballot, lane_id, load_relaxed_u64, shfl_up, store_relaxed_u64, sync_named,
    sync_threads, sync_threads_divergent, sync_warp, thread_idx_x, warp_id, warp_inclusive_scan, warp_reduce,
};
use crate::num::Num;
use kernel_abi::scan::{HEADER_BYTES, MODE_INCLUSIVE, STATUS_AGGREGATE, STATUS_INVALID, STATUS_PREFIX};

/// Threads per block the host must launch with.
pub const BLOCK: usize = kernel_abi::scan::BLOCK as usize;
pub use kernel_abi::scan::{items, tile, LOOKBACK_WINDOW};
const WARPS: usize = BLOCK / kernel_abi::WARP as usize;

/// Nanoseconds warp 0 waits before its first read of the predecessors'
/// descriptors: by then most of them are published, and fewer reads poll
/// the same lines. It waits after its tile's aggregate is published when
/// every warp holds elements, from the tile's start when it is the
/// look-back warp. On an H200 (2^28 `u32`, 32 elements per thread): 2.78
/// TB/s without the waits, 2.90 with 600/300 ns, 3.0 with 1200/650 and
/// 2000/1000 (measured 2026-12-01; CUB's tuning for sm_90 waits similarly);
/// with the look-back warp, 600, 1200 and 2000 ns ran within the runs'
/// spread (measured 2026-12-01, commit dd7f3ce).
pub const LOOKBACK_START_NS: u32 = 1200;
/// Nanoseconds between two reads of a window in which some descriptor was
/// not yet published.
pub const LOOKBACK_POLL_NS: u32 = 650;
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
}

impl TileState {
    /// The state of a scan at `base`.
    ///
    /// # Safety
    /// `base` is 8-byte aligned and holds `kernel_abi::scan::state_bytes`
    /// bytes for `T` and the launch's tiles, zeroed before any block of the
    /// launch ran, and accessed by nothing but this launch.
    #[inline(always)]
    pub unsafe fn new(base: *mut u8) -> TileState {
        TileState { base }
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

    /// Descriptor word `k` of `tile` (32-bit elements: one word per tile;
    /// 64-bit elements: two).
    #[inline(always)]
    fn word<T: Num>(self, tile: usize, k: usize) -> *mut u64 {
        let words = if T::WIDE { 2 } else { 1 };
        // Stays in the state (`tile < tiles`, callers' contract).
        (self.base.wrapping_add(HEADER_BYTES) as *mut u64).wrapping_add(words * tile + k)
    }

    /// Publishes `value` for `tile` with `status` (aggregate or prefix).
    ///
    /// # Safety
    /// As [`TileState::new`], `tile < tiles`; each `(tile, status)` is
    /// published once, the aggregate before the prefix.
    #[inline(always)]
    pub unsafe fn publish<T: Num>(self, tile: usize, status: u32, value: T) {
        let tag = (status as u64) << 32;
        // SAFETY: aligned words of the state, only accessed atomically.
        unsafe {
            store_relaxed_u64(self.word::<T>(tile, 0), tag | value.lo() as u64);
            if T::WIDE {
                store_relaxed_u64(self.word::<T>(tile, 1), tag | value.hi() as u64);
            }
        }
    }

    /// The status of `tile` and, unless invalid, its value. A 64-bit value
    /// whose two words carry different statuses (read between the stores
    /// of one publication) reads as invalid: not published yet.
    ///
    /// # Safety
    /// As [`TileState::publish`].
    #[inline(always)]
    pub unsafe fn load<T: Num>(self, tile: usize) -> (u32, T) {
        // SAFETY: aligned words of the state, only accessed atomically; both
        // loads are issued before either is used, so they cost one round
        // trip.
        unsafe {
            let lo = load_relaxed_u64(self.word::<T>(tile, 0));
            if !T::WIDE {
                return ((lo >> 32) as u32, T::from_words(lo as u32, 0));
            }
            let hi = load_relaxed_u64(self.word::<T>(tile, 1));
            let status = (lo >> 32) as u32;
            if status != (hi >> 32) as u32 {
                return (STATUS_INVALID, T::ZERO);
            }
            (status, T::from_words(lo as u32, hi as u32))
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
    if LOOKBACK_START_NS > 0 {
        back_off(LOOKBACK_START_NS);
    }
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
            back_off(LOOKBACK_POLL_NS);
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

/// 16-byte vectors each thread owns in a tile of `size`-byte elements.
const fn thread_vectors(size: usize) -> usize {
    items(size) * size / 16
}
const _: () = assert!(
    thread_vectors(4).is_power_of_two()
        && thread_vectors(8).is_power_of_two()
        && thread_vectors(4) * 16 == items(4) * 4
        && thread_vectors(8) * 16 == items(8) * 8,
    "a thread's elements are whole 16-byte vectors, a power of two of them"
);

/// Shared bytes of [`Shared::exchange`] for elements of `size` bytes: the
/// tile.
pub const fn exchange_bytes(size: usize) -> usize {
    tile(size) * size
}

/// Shared bytes of [`Shared::exchange`] for the largest tile.
pub const EXCHANGE_BYTES: usize = if exchange_bytes(4) > exchange_bytes(8) {
    exchange_bytes(4)
} else {
    exchange_bytes(8)
};

/// Where byte `b` of a warp's elements lies in its exchange area, for
/// `size`-byte elements: its 16-byte vector `j = b / 16` moves inside its
/// aligned group of 8 vectors (128 bytes, the 32 banks), to `j ^ (t % 8)`
/// where `t = j / thread_vectors` is the thread that owns it. A quarter
/// warp's 16-byte accesses then never share a bank: 8 consecutive aligned
/// vectors (the coalesced side) keep one owner or two neighbours and stay a
/// permutation of their group; the same vector of 8 threads (the scanning
/// side) lands on 8 different positions of the group.
#[inline(always)]
fn swizzled(b: usize, size: usize) -> usize {
    let j = b / 16;
    let owner = j / thread_vectors(size);
    16 * (j ^ (owner & 7)) + b % 16
}

/// Element `k` (of `16 / size`) of the 16-byte vector `v`.
#[inline(always)]
fn element<T: Num>(v: u128, k: usize) -> T {
    if T::WIDE {
        let x = (v >> (64 * k)) as u64;
        T::from_words(x as u32, (x >> 32) as u32)
    } else {
        T::from_words((v >> (32 * k)) as u32, 0)
    }
}

/// `x` as element `k` of a 16-byte vector (the other bits zero).
#[inline(always)]
fn vector_bits<T: Num>(x: T, k: usize) -> u128 {
    if T::WIDE {
        ((x.lo() as u64 | ((x.hi() as u64) << 32)) as u128) << (64 * k)
    } else {
        (x.lo() as u128) << (32 * k)
    }
}

/// Block-shared memory of the scan kernel.
#[derive(Clone, Copy)]
pub struct Shared<T> {
    /// `WARPS` elements: the (data) warps' totals.
    pub warp_totals: *mut T,
    /// [`exchange_bytes`]`(size_of::<T>())` bytes, 16-byte aligned: the
    /// tile, a swizzled area per data warp.
    pub exchange: *mut u8,
    /// The tile index (one `u32`).
    pub tile: *mut u32,
    /// The tile's exclusive prefix (one `T`).
    pub prefix: *mut T,
}

/// Shared bytes of [`Shared::warp_totals`] (8-byte elements at most).
pub const WARP_TOTALS_BYTES: usize = WARPS * 8;

/// Warps of a block that move elements when warp 0 is the look-back warp.
const DATA_WARPS: usize = WARPS - 1;

/// The look-back warp's part of a tile (64-bit elements): it looks back for
/// the tile's exclusive prefix while the data warps load, hands it to them
/// in shared memory and meets them at barrier 0.
///
/// # Safety
/// Called by warp 0 alone, whose block runs `data_warps_prefix` in its
/// other warps; `tile < tiles`, taken from the counter; `state` and
/// `shared` as in [`scan_impl`].
#[inline(always)]
unsafe fn look_back_warp<T: Num>(state: TileState, tile: usize, shared: Shared<T>) {
    let prefix = if tile == 0 {
        T::ZERO
    } else {
        // SAFETY: tiles `0..tile` were taken from the counter before this
        // one; tile < tiles (caller).
        unsafe { look_back::<T>(state, tile) }
    };
    // SAFETY: lane 0 writes the shared prefix before barrier 0, every data
    // thread reads it after.
    unsafe {
        if lane_id() == 0 {
            shared.prefix.write(prefix);
        }
        sync_threads_divergent();
    }
}

/// The data warps' side of `look_back_warp`: the start of this thread's
/// exclusive prefix (the tile's exclusive prefix plus everything before
/// this thread's elements), given `sum`, the sum of its elements.
///
/// The data warps publish the tile's aggregate without waiting for the
/// look-back: they meet at a barrier of their own (barrier 1), and data
/// thread 0 sums their totals and publishes them. Barrier 0 then hands the
/// look-back warp's prefix to the data warps, and data thread 0 publishes
/// the inclusive prefix.
///
/// # Safety
/// Called by every data thread of the block (warps `1..`) while warp 0 runs
/// `look_back_warp`; `tile < tiles`; `state` and `shared` as in
/// [`scan_impl`].
#[inline(always)]
unsafe fn data_warps_prefix<T: Num>(
    sum: T,
    state: TileState,
    tile: usize,
    shared: Shared<T>,
    data_warp: usize,
) -> T {
    let lane = lane_id() as usize;
    let inclusive_sum = warp_inclusive_scan(sum, |a: T, b: T| a.add(b));
    let mut before_me = shfl_up(inclusive_sum, 1);
    if lane == 0 {
        before_me = T::ZERO;
    }
    // SAFETY: each data warp's lane 31 writes its own slot before barrier
    // 1, data thread 0 reads them after it; the tile's aggregate (or, for
    // tile 0, its inclusive prefix) is published once, by that thread.
    let published = unsafe {
        if lane == 31 {
            shared.warp_totals.add(data_warp).write(inclusive_sum);
        }
        sync_named(1, kernel_abi::scan::data_threads(core::mem::size_of::<T>()));
        if data_warp == 0 && lane == 0 {
            let mut aggregate = T::ZERO;
            let mut w = 0;
            while w < DATA_WARPS {
                aggregate = aggregate.add(shared.warp_totals.add(w).read());
                w += 1;
            }
            let status = if tile == 0 {
                STATUS_PREFIX
            } else {
                STATUS_AGGREGATE
            };
            state.publish(tile, status, aggregate);
            Some(aggregate)
        } else {
            None
        }
    };
    // Barrier 0, with warp 0 (not `.aligned`: a lane may reach a copy of it
    // in its branch).
    sync_threads_divergent();
    // SAFETY: written before the barrier (warp 0's prefix, every data
    // warp's total), read after it; the publishing thread published the
    // aggregate before this prefix, in program order.
    unsafe {
        let prefix = shared.prefix.read();
        if let Some(aggregate) = published {
            if tile != 0 {
                state.publish(tile, STATUS_PREFIX, prefix.add(aggregate));
            }
        }
        let mut acc = prefix;
        let mut w = 0;
        while w < data_warp {
            acc = acc.add(shared.warp_totals.add(w).read());
            w += 1;
        }
        acc.add(before_me)
    }
}

/// The start of this thread's exclusive prefix when every warp holds
/// elements (32-bit elements), given `sum`, the sum of its elements: a
/// block scan of the sums gives the tile's aggregate, thread 0 publishes
/// it, and warp 0 then looks back for the tile's exclusive prefix, publishes
/// the inclusive one and hands the prefix to the block.
///
/// # Safety
/// Called by every thread of the block; `tile < tiles`, taken from the
/// counter; `state` and `shared` as in [`scan_impl`].
#[inline(always)]
unsafe fn block_prefix<T: Num>(sum: T, state: TileState, tile: usize, shared: Shared<T>) -> T {
    let tid = thread_idx_x();
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
    prefix.add(exclusive)
}

/// The kernel body: scans one tile of `input[..n]` into `output[..n]`,
/// exclusive or (`mode & MODE_INCLUSIVE`) inclusive.
///
/// For 64-bit elements warp 0 only looks back (`look_back_warp`): it
/// starts as soon as the block has its tile, while the other warps (the
/// data warps) load and sum the tile (`data_warps_prefix`), so the
/// look-back's latency overlaps the loads instead of following them. For
/// 32-bit elements every warp loads, and warp 0 looks back after the
/// block's sum (`block_prefix`).
///
/// Each data warp moves its `32 * items` elements through its exchange
/// area in shared memory, so that global loads and stores are coalesced
/// while each thread scans [`items`] consecutive elements: 16-byte vectors
/// when the tile is whole and both arrays are 16-byte aligned (lane `l`
/// moves vectors `l, l + 32, …`), element by element otherwise (elements
/// past `n` read as zero, the sum's identity). A thread's own elements stay
/// in shared memory, not in registers: it reads them once to sum them and
/// once more, after the barrier, to write its outputs over them. Keeping
/// them in registers across the look-back cost spills at the register
/// budget of 6 to 8 blocks per multiprocessor.
///
/// # Safety
/// `input` and `output` hold `n >= 1` elements and are the same array or do
/// not overlap; the launch has `kernel_abi::scan::tiles(size, n)` blocks of
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
    let size = core::mem::size_of::<T>();
    let items = items(size);
    let thread_vectors = thread_vectors(size);
    let tile_elements = tile(size);
    let tiles = n.div_ceil(tile_elements);
    // SAFETY: forwarded contract.
    let state = unsafe { TileState::new(state) };
    let tid = thread_idx_x() as usize;
    // SAFETY: forwarded contract; the whole block calls it.
    let tile = unsafe { take_tile::<T>(state, tid, shared) };
    if tile >= tiles {
        return; // a grid larger than the tiles (block-uniform)
    }
    let lane = lane_id() as usize;
    let warp = warp_id() as usize;
    let lookback_warp = kernel_abi::scan::lookback_warp(size);
    if lookback_warp && warp == 0 {
        // SAFETY: forwarded contract; tile < tiles.
        unsafe { look_back_warp::<T>(state, tile, shared) };
        return;
    }
    // The warps that hold elements, numbered from 0.
    let data_warp = if lookback_warp { warp - 1 } else { warp };
    let start = tile * tile_elements;
    let valid = (n - start).min(tile_elements);
    // Block-uniform: whole 16-byte vectors in and out.
    let vectors = valid == tile_elements && (input as usize | output as usize).is_multiple_of(16);
    // This warp's elements are tile[warp_base..warp_base + 32 * items];
    // its lane `l` owns tile[warp_base + l * items..][..items].
    let warp_base = data_warp * 32 * items;
    let first = start + warp_base;
    // SAFETY: the warp's own area of `exchange` (per contract).
    let xs = unsafe { shared.exchange.add(warp_base * size) };
    let mine = lane * thread_vectors * 16;
    // SAFETY: global loads stay below `valid` (whole vectors only when the
    // tile is whole); each lane writes its own swizzled slots, and the warp
    // barrier orders those writes before any lane reads them.
    unsafe {
        if vectors {
            let src = input.add(first) as *const u128;
            let mut r = 0;
            while r < thread_vectors {
                let j = r * 32 + lane;
                (xs.add(swizzled(16 * j, size)) as *mut u128).write(src.add(j).read());
                r += 1;
            }
        } else {
            let mut k = 0;
            while k < items {
                let i = k * 32 + lane;
                let x = if warp_base + i < valid {
                    input.add(first + i).read()
                } else {
                    T::ZERO
                };
                (xs.add(swizzled(size * i, size)) as *mut T).write(x);
                k += 1;
            }
        }
        sync_warp();
    }
    // SAFETY: this thread's own vectors, written before the warp barrier.
    let sum = unsafe { thread_sum::<T>(xs, mine) };
    // SAFETY: every data thread calls one of them (the whole block for
    // `block_prefix`; the look-back warp meets the data warps at barrier 0);
    // forwarded contract; tile < tiles.
    let acc = unsafe {
        if lookback_warp {
            data_warps_prefix::<T>(sum, state, tile, shared, data_warp)
        } else {
            block_prefix::<T>(sum, state, tile, shared)
        }
    };
    let inclusive = mode & MODE_INCLUSIVE != 0;
    // SAFETY: each thread rewrites its own vectors in place; the warp
    // barrier orders those writes before the other lanes read them; global
    // stores go below `valid` only (whole vectors only when the tile is
    // whole), to elements this warp read before.
    unsafe {
        rewrite_thread_vectors::<T>(xs, mine, acc, inclusive);
        sync_warp();
        if vectors {
            let dst = output.add(first) as *mut u128;
            let mut r = 0;
            while r < thread_vectors {
                let j = r * 32 + lane;
                dst.add(j)
                    .write((xs.add(swizzled(16 * j, size)) as *const u128).read());
                r += 1;
            }
        } else {
            let mut k = 0;
            while k < items {
                let i = k * 32 + lane;
                if warp_base + i < valid {
                    output
                        .add(first + i)
                        .write((xs.add(swizzled(size * i, size)) as *const T).read());
                }
                k += 1;
            }
        }
    }
}

/// The block's tile: thread `tid` 0 takes the next one from the state's
/// counter and hands it to the others through shared memory.
///
/// # Safety
/// Called by every thread of the block; `shared.tile` is this block's.
#[inline(always)]
unsafe fn take_tile<T: Num>(state: TileState, tid: usize, shared: Shared<T>) -> usize {
    // SAFETY: thread 0 writes the shared slots; the barrier orders those
    // writes before every thread's read and atomic.
    unsafe {
        if tid == 0 {
            shared.tile.write(state.next_tile() as u32);
        }
        sync_threads();
        shared.tile.read() as usize
    }
}

/// The sum of this thread's elements: its vectors in the warp's exchange
/// area `xs`, from byte `mine` (swizzled).
///
/// # Safety
/// The thread's vectors are in `xs` and a warp barrier separates their
/// writes from this.
#[inline(always)]
unsafe fn thread_sum<T: Num>(xs: *mut u8, mine: usize) -> T {
    let size = core::mem::size_of::<T>();
    let per_vector = 16 / size;
    let mut sum = T::ZERO;
    let mut r = 0;
    while r < thread_vectors(size) {
        // SAFETY: this thread's own vectors (the caller's contract).
        let v = unsafe { (xs.add(swizzled(mine + 16 * r, size)) as *const u128).read() };
        let mut k = 0;
        while k < per_vector {
            sum = sum.add(element::<T>(v, k));
            k += 1;
        }
        r += 1;
    }
    sum
}

/// Rewrites this thread's elements in the warp's exchange area `xs` (its
/// vectors from byte `mine`, swizzled) with their scan, starting from `acc`
/// (the sum of everything before them): exclusive, or inclusive when
/// `inclusive`.
///
/// # Safety
/// As [`thread_sum`].
#[inline(always)]
unsafe fn rewrite_thread_vectors<T: Num>(xs: *mut u8, mine: usize, mut acc: T, inclusive: bool) {
    let size = core::mem::size_of::<T>();
    let per_vector = 16 / size;
    let mut r = 0;
    while r < thread_vectors(size) {
        // SAFETY: this thread's own vectors (the caller's contract).
        unsafe {
            let slot = xs.add(swizzled(mine + 16 * r, size)) as *mut u128;
            let v = slot.read();
            let mut out = 0u128;
            let mut k = 0;
            while k < per_vector {
                let x = element::<T>(v, k);
                let next = acc.add(x);
                out |= vector_bits(if inclusive { next } else { acc }, k);
                acc = next;
                k += 1;
            }
            slot.write(out);
        }
        r += 1;
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
        /// bytes (8-byte aligned), all of them zero (see
        /// `kernel_abi::scan`), used by this launch only.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $name(
            input: *const $t, output: *mut $t, n: usize, state: *mut u8, mode: u32,
        ) {
            let shared = Shared {
                warp_totals: crate::shared_bytes!(rmm_scan_warp_totals, WARP_TOTALS_BYTES) as *mut $t,
                // Sized for `$t`: a 32-bit scan's blocks take half the shared
                // memory of a 64-bit one's, so more of them fit.
                exchange: crate::shared_bytes!(rmm_scan_exchange, exchange_bytes(core::mem::size_of::<$t>())),
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

#[cfg(test)]
mod tests {
    use super::{swizzled, thread_vectors};

    /// The 16-byte positions (within a group of 8, the banks' width) that
    /// a quarter warp's accesses to `vectors` land on are all different.
    fn conflict_free(size: usize, vectors: impl Iterator<Item = usize>) -> bool {
        let mut seen = 0u8;
        for j in vectors {
            seen |= 1 << ((swizzled(16 * j, size) / 16) % 8);
        }
        seen == 0xFF
    }

    #[test]
    fn exchange_accesses_never_share_a_bank() {
        for size in [4, 8] {
            let v = thread_vectors(size);
            let warp_vectors = 32 * v;
            for j in 0..warp_vectors {
                // A vector stays in its aligned group of 8, and in the warp.
                assert_eq!(swizzled(16 * j, size) / 128, j / 8, "size {size} vector {j}");
            }
            // Coalesced side: lanes 8q..8q+8 move vectors 32r + 8q + (0..8).
            for first in (0..warp_vectors).step_by(8) {
                assert!(
                    conflict_free(size, first..first + 8),
                    "size {size} striped {first}"
                );
            }
            // Scanning side: threads 8q..8q+8 read their vector r.
            for q in 0..4 {
                for r in 0..v {
                    let js = (8 * q..8 * q + 8).map(|t| t * v + r);
                    assert!(conflict_free(size, js), "size {size} threads {q} vector {r}");
                }
            }
        }
    }
}
