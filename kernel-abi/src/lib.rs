//! The contract between the Rust GPU kernels (`kernels/`, compiled to PTX by
//! `build.rs`) and the host launchers of `rmm-suite` (`src/`): the kernels'
//! entry names, the block sizes they are written for, their tile sizes and
//! the bits of their `mode` parameters.
//!
//! Both sides depend on this crate, so each constant has one definition.
//! The entry names cannot be tied to the kernels' symbols at compile time
//! (`#[no_mangle]` takes the function's own name), so the root package's
//! tests check that the built PTX declares exactly the entries of [`ALL`].
//!
//! `#![no_std]`, no dependencies, no `unsafe`: it builds for
//! `nvptx64-nvidia-cuda` with `-Zbuild-std=core` as well as for the host.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

/// Threads per block of every kernel (1-D blocks). The kernels size their
/// shared memory and warp loops for exactly this many threads, so the host
/// must launch them with it.
pub const BLOCK: u32 = 256;

/// Threads per warp.
pub const WARP: u32 = 32;

/// Entry names of the element-wise kernels (copy, fill).
pub mod elementwise {
    /// `rmm_copy_bytes(dst: *mut u8, src: *const u8, n: usize)`.
    pub const COPY_BYTES: &str = "rmm_copy_bytes";
    /// `rmm_fill_u8(ptr: *mut u8, n: usize, value: u8)`.
    pub const FILL_U8: &str = "rmm_fill_u8";
    /// `rmm_fill_u16(ptr: *mut u16, n: usize, value: u16)`.
    pub const FILL_U16: &str = "rmm_fill_u16";
    /// `rmm_fill_u32(ptr: *mut u32, n: usize, value: u32)`.
    pub const FILL_U32: &str = "rmm_fill_u32";
    /// `rmm_fill_u64(ptr: *mut u64, n: usize, value: u64)`.
    pub const FILL_U64: &str = "rmm_fill_u64";

    /// The fill kernel for elements of `size` bytes (1, 2, 4 or 8).
    pub const fn fill(size: usize) -> Option<&'static str> {
        match size {
            1 => Some(FILL_U8),
            2 => Some(FILL_U16),
            4 => Some(FILL_U32),
            8 => Some(FILL_U64),
            _ => None,
        }
    }
}

/// The numeric kernel families (sequence, reduce, scan) of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumericKernels {
    /// `rmm_sequence_*(out, n, init, step)`.
    pub sequence: &'static str,
    /// `rmm_reduce_sum_*(input, n, out)`.
    pub reduce_sum: &'static str,
    /// `rmm_reduce_min_*(input, n, out)`.
    pub reduce_min: &'static str,
    /// `rmm_reduce_max_*(input, n, out)`.
    pub reduce_max: &'static str,
    /// `rmm_scan_*(input, output, n, state, mode)`: the single-pass scan
    /// (decoupled look-back); `state` is laid out as [`scan`] says, `mode`
    /// holds [`scan::MODE_INCLUSIVE`] or not.
    pub scan: &'static str,
}

impl NumericKernels {
    /// The five names, in field order.
    pub const fn names(&self) -> [&'static str; 5] {
        [
            self.sequence,
            self.reduce_sum,
            self.reduce_min,
            self.reduce_max,
            self.scan,
        ]
    }
}

macro_rules! numeric_kernels {
    ($($(#[$doc:meta])* $name:ident: $suffix:literal),* $(,)?) => {$(
        $(#[$doc])*
        pub const $name: NumericKernels = NumericKernels {
            sequence: concat!("rmm_sequence_", $suffix),
            reduce_sum: concat!("rmm_reduce_sum_", $suffix),
            reduce_min: concat!("rmm_reduce_min_", $suffix),
            reduce_max: concat!("rmm_reduce_max_", $suffix),
            scan: concat!("rmm_scan_", $suffix),
        };
    )*};
}

/// Entry names of the numeric kernels, one [`NumericKernels`] per element type.
pub mod numeric {
    use super::NumericKernels;
    numeric_kernels!(
        /// `u32` kernels.
        U32: "u32",
        /// `i32` kernels.
        I32: "i32",
        /// `u64` kernels.
        U64: "u64",
        /// `i64` kernels.
        I64: "i64",
        /// `f32` kernels.
        F32: "f32",
        /// `f64` kernels.
        F64: "f64",
    );
    /// Every element type's kernels.
    pub const ALL: [NumericKernels; 6] = [U32, I32, U64, I64, F32, F64];
}

/// The single-pass scan (`kernels/src/scan.rs`): tiling, mode bit, and the
/// layout of its tile state (the tile counter and the tiles' descriptors).
///
/// The state is one 8-byte aligned scratch buffer of [`state_bytes`](scan::state_bytes) bytes
/// (a multiple of 256), all zero when the kernel starts (the host clears
/// it in stream order before each launch):
///
/// | offset | what |
/// |---|---|
/// | 0 | the tile counter: a `u32` each block takes its tile index from |
/// | [`HEADER_BYTES`](scan::HEADER_BYTES) | 32-bit elements: one `u64` descriptor per tile, `status << 32 \| value bits` |
/// | [`HEADER_BYTES`](scan::HEADER_BYTES) | 64-bit elements: two `u64` words per tile, `status << 32 \| low 32 value bits` and `status << 32 \| high 32 value bits` |
///
/// Every word is written and read as one single-copy atomic access, so a
/// reader sees a status together with the value bits it was published
/// with; a 64-bit value counts as published once both of its words carry
/// the same status.
pub mod scan {
    /// Threads per block of the scan kernels: the other kernels'
    /// [`BLOCK`](crate::BLOCK). On an H200 (2^28 `u32`), 512-thread blocks
    /// scanned 1.5% faster for 32-bit elements and 20% slower for 64-bit
    /// ones (spills at their register budget).
    pub const BLOCK: u32 = crate::BLOCK;
    /// Blocks per multiprocessor the 32-bit scan kernels are compiled for:
    /// the build writes `.maxntid BLOCK` and `.minnctapersm` with this value
    /// into their PTX (what CUDA's `__launch_bounds__(BLOCK, N)` writes),
    /// so the assembler keeps their registers low enough for that many (40
    /// registers, no spills). Six 32 KiB tiles also fill the shared memory.
    /// On an H200, 2^28 `u32`: 3.0 TB/s; 8 blocks (32 registers, spills):
    /// 2.65 TB/s (2026-12-01).
    pub const MIN_BLOCKS_PER_SM_32: u32 = 6;
    /// The same for the 64-bit scan kernels: 2^27 `u64` ran at 2.66 TB/s
    /// with 6 blocks (40 registers, 24 bytes spilled), 2.49 with 5 (48
    /// registers) and 2.13 with 4 (same run).
    pub const MIN_BLOCKS_PER_SM_64: u32 = 6;
    /// Consecutive 32-bit elements per data thread in a tile (128 bytes). On an
    /// H200, 2^28 `u32`: 2.25 TB/s with 16 (64 bytes per thread), 2.78 with
    /// 32, before the look-back delays (2026-12-01).
    pub const ITEMS_32: usize = 32;
    /// Consecutive 64-bit elements per data thread in a tile (128 bytes; 32
    /// elements, 256 bytes at 3 blocks per multiprocessor: 2.59 against
    /// 2.69 TB/s).
    pub const ITEMS_64: usize = 16;
    /// Consecutive elements per thread in a tile of `element_bytes` (4 or 8)
    /// elements.
    pub const fn items(element_bytes: usize) -> usize {
        if element_bytes == 4 {
            ITEMS_32
        } else {
            ITEMS_64
        }
    }
    /// Whether the scan of `element_bytes`-byte elements gives warp 0 to the
    /// look-back alone, so that it overlaps the other warps' loads (64-bit
    /// elements), or has every warp load and warp 0 look back after the
    /// block's sum (32-bit elements). On an H200 with shared memory
    /// addressed as such (2026-12-01, 6a5b5ae, medians of three alternating
    /// rounds): u64 2^27 3.39 TB/s with the look-back warp against 2.89
    /// without; u32 2^28 3.25 against 3.35.
    pub const fn lookback_warp(element_bytes: usize) -> bool {
        element_bytes == 8
    }
    /// Threads of a scan block that load, scan and store elements: all of
    /// them, or all but warp 0 when it is the look-back warp.
    pub const fn data_threads(element_bytes: usize) -> u32 {
        if lookback_warp(element_bytes) {
            BLOCK - crate::WARP
        } else {
            BLOCK
        }
    }
    /// Elements per tile: [`data_threads`] × [`items`].
    pub const fn tile(element_bytes: usize) -> usize {
        data_threads(element_bytes) as usize * items(element_bytes)
    }
    /// Mode bit: inclusive scan (`out[i]` includes `in[i]`); exclusive without it.
    pub const MODE_INCLUSIVE: u32 = 1;

    /// Descriptor status: nothing published yet (the zeroed state).
    pub const STATUS_INVALID: u32 = 0;
    /// Descriptor status: the tile's own sum (aggregate) is published.
    pub const STATUS_AGGREGATE: u32 = 1;
    /// Descriptor status: the tile's inclusive prefix (the sum of every
    /// element up to the tile's end) is published.
    pub const STATUS_PREFIX: u32 = 2;
    /// Predecessor descriptors one look-back step reads (one per lane of a warp).
    pub const LOOKBACK_WINDOW: usize = crate::WARP as usize;

    /// Bytes before the descriptors: the tile counter, padded.
    pub const HEADER_BYTES: usize = 256;

    /// Tiles (and blocks) of a scan over `n` elements of `element_bytes`.
    pub const fn tiles(element_bytes: usize, n: usize) -> usize {
        n.div_ceil(tile(element_bytes))
    }

    const fn round_up(x: usize, to: usize) -> usize {
        x.div_ceil(to) * to
    }

    /// Bytes of the state (counter and descriptors) for `tiles` tiles of
    /// `element_bytes` (4 or 8) elements, all of which must be zero at
    /// launch; a multiple of 256.
    pub const fn state_bytes(element_bytes: usize, tiles: usize) -> usize {
        round_up(HEADER_BYTES + 2 * element_bytes * tiles, 256)
    }
}

/// The radix sort kernels (`kernels/src/sort.rs`): names, tiling, mode bits,
/// and the layout of the onesweep passes' look-back state.
///
/// One sort is a histogram launch (the digit counts of every pass in one
/// read of the keys), an offsets launch (their exclusive sums: where each
/// digit's keys start in each pass's output), then one onesweep launch per
/// digit (per [`PORTION_KEYS`](sort::PORTION_KEYS) keys of it): every tile ranks its keys,
/// publishes its digit counts, finds the counts of the tiles before it by
/// decoupled look-back and scatters its keys to their final places.
pub mod sort {
    /// Bits per digit (one pass per digit).
    pub const DIGIT_BITS: u32 = 8;
    /// Number of digit values.
    pub const RADIX: usize = 1 << DIGIT_BITS;
    /// Keys per thread per onesweep tile: 32-bit keys alone.
    pub const ITEMS_32: usize = 24;
    /// Keys per thread per onesweep tile: 32-bit keys with values.
    pub const ITEMS_32_PAIRS: usize = 16;
    /// Keys per thread per onesweep tile: 64-bit keys alone.
    pub const ITEMS_64: usize = 16;
    /// Keys per thread per onesweep tile: 64-bit keys with values.
    pub const ITEMS_64_PAIRS: usize = 8;
    /// Keys each histogram thread loads per batch.
    pub const HIST_BATCH: usize = 16;
    /// Blocks per multiprocessor the onesweep kernels are compiled for
    /// (`.minnctapersm`, see [`crate::launch_bounds`]): 32-bit keys alone.
    ///
    /// Measured on an H200, 2^28 `u32` keys (one run per line):
    /// without bounds the kernel took 168 registers, one block per
    /// multiprocessor: 19.6 Gkeys/s; 2 blocks (128 registers): 29.1;
    /// 3 blocks (80 registers, 220 bytes spilled): 34.2; 16 keys per thread
    /// with 4 blocks: 34.0; 12 with 4: 30.4.
    pub const MIN_BLOCKS_PER_SM_32: u32 = 3;
    /// The same for 32-bit keys with values.
    pub const MIN_BLOCKS_PER_SM_32_PAIRS: u32 = 3;
    /// The same for 64-bit keys alone: 4 blocks (64 registers).
    ///
    /// Measured on an H200 against 3 blocks (80 registers), three
    /// alternating rounds (2026-12-01, 468cc53): `u64` 2^20 6.20 against 6.11
    /// Gkeys/s, 2^24 13.25 against 12.96, 2^28 15.04 against 15.10, `f64`
    /// 2^26 15.09 against 14.79.
    pub const MIN_BLOCKS_PER_SM_64: u32 = 4;
    /// The same for plain 64-bit keys alone ([`ONESWEEP_PLAIN_64`]): 3
    /// blocks (80 registers). At 4 blocks the plain kernel spilled 176
    /// bytes on sm_90 (the general one 116), at 3 blocks 4 bytes.
    ///
    /// Measured on an H200, medians of three alternating rounds (2026-12-01,
    /// a4f6a88), 3 against 4 blocks: `u64` 2^20 6.44 against 6.25
    /// Gkeys/s, 2^24 13.86 against 13.77, 2^28 16.11 against 15.73.
    pub const MIN_BLOCKS_PER_SM_64_PLAIN: u32 = 3;
    /// The same for 64-bit keys with values.
    pub const MIN_BLOCKS_PER_SM_64_PAIRS: u32 = 4;

    /// Mode bit: keys are two's complement integers.
    pub const MODE_SIGNED: u32 = 1;
    /// Mode bit: keys are IEEE floats.
    pub const MODE_FLOAT: u32 = 2;
    /// Mode bit: sort descending.
    pub const MODE_DESCENDING: u32 = 4;

    /// Look-back status: the tile's own count of the digit is published.
    pub const FLAG_PARTIAL: u32 = 1 << 30;
    /// Look-back status: the count of the digit in this tile and every
    /// earlier tile of the portion is published.
    pub const FLAG_GLOBAL: u32 = 2 << 30;
    /// The status bits of a look-back word (zero: nothing published yet).
    pub const FLAG_MASK: u32 = 3 << 30;
    /// The count bits of a look-back word.
    pub const VALUE_MASK: u32 = (1 << 30) - 1;
    /// Keys of one onesweep launch at most (a portion), so that every count
    /// fits the [`VALUE_MASK`] bits; longer inputs take several launches per
    /// pass, each portion's last tile handing the digits' next output
    /// positions to the next portion.
    pub const PORTION_KEYS: usize = 1 << 28;
    /// Words before the look-back statuses in the state: the tile counter, padded.
    pub const STATE_HEADER_WORDS: usize = 64;

    /// Keys per onesweep tile for `items` keys per thread.
    pub const fn tile(items: usize) -> usize {
        crate::BLOCK as usize * items
    }

    /// Tiles of one portion for `items` keys per thread (whole tiles).
    pub const fn portion_tiles(items: usize) -> usize {
        PORTION_KEYS / tile(items)
    }

    /// `u32` words of the onesweep state for `tiles` tiles: the counter
    /// header, then one look-back word per tile and digit
    /// (`STATE_HEADER_WORDS + tile * RADIX + digit`); all of it zero at launch.
    pub const fn state_words(tiles: usize) -> usize {
        STATE_HEADER_WORDS + tiles * RADIX
    }

    /// `rmm_radix_histogram_32(keys, n, mode, hist)`: adds the digit counts
    /// of every pass to `hist[pass * RADIX + digit]`.
    pub const HISTOGRAM_32: &str = "rmm_radix_histogram_32";
    /// As [`HISTOGRAM_32`] for 64-bit keys.
    pub const HISTOGRAM_64: &str = "rmm_radix_histogram_64";
    /// `rmm_radix_offsets(hist, bases, stride)`: block `p` writes the
    /// exclusive sums of `hist[p * RADIX..][..RADIX]` to `bases[p * stride..]`.
    pub const OFFSETS: &str = "rmm_radix_offsets";
    /// `rmm_radix_onesweep_32(keys_in, keys_out, n, first_tile, shift, mode, state, bases_in, bases_out)`.
    pub const ONESWEEP_32: &str = "rmm_radix_onesweep_32";
    /// `rmm_radix_onesweep_pairs_32(keys_in, keys_out, vals_in, vals_out, n, first_tile, shift, mode, state, bases_in, bases_out)`.
    pub const ONESWEEP_PAIRS_32: &str = "rmm_radix_onesweep_pairs_32";
    /// As [`ONESWEEP_32`] for 64-bit keys.
    pub const ONESWEEP_64: &str = "rmm_radix_onesweep_64";
    /// As [`ONESWEEP_PAIRS_32`] for 64-bit keys.
    pub const ONESWEEP_PAIRS_64: &str = "rmm_radix_onesweep_pairs_64";
    /// [`HISTOGRAM_32`] for plain keys (`mode` 0: unsigned, ascending), which
    /// ignores its `mode` argument: a digit is a shift and a mask.
    pub const HISTOGRAM_PLAIN_32: &str = "rmm_radix_histogram_plain_32";
    /// [`HISTOGRAM_64`] for plain keys.
    pub const HISTOGRAM_PLAIN_64: &str = "rmm_radix_histogram_plain_64";
    /// [`ONESWEEP_32`] for plain keys (same parameters, `mode` ignored).
    pub const ONESWEEP_PLAIN_32: &str = "rmm_radix_onesweep_plain_32";
    /// [`ONESWEEP_64`] for plain keys.
    pub const ONESWEEP_PLAIN_64: &str = "rmm_radix_onesweep_plain_64";

    /// The kernels of one sort: `(items per thread, histogram, onesweep)`
    /// for 64-bit keys if `wide`, with `u32` values if `pairs`, and for
    /// plain keys (`mode` 0) if `plain`. Plain keys alone run kernels whose
    /// digit is a shift and a mask; with values they share the general
    /// onesweep (only their histogram is plain).
    pub const fn kernels(wide: bool, pairs: bool, plain: bool) -> (usize, &'static str, &'static str) {
        match (wide, pairs, plain) {
            (false, false, false) => (ITEMS_32, HISTOGRAM_32, ONESWEEP_32),
            (false, false, true) => (ITEMS_32, HISTOGRAM_PLAIN_32, ONESWEEP_PLAIN_32),
            (false, true, false) => (ITEMS_32_PAIRS, HISTOGRAM_32, ONESWEEP_PAIRS_32),
            (false, true, true) => (ITEMS_32_PAIRS, HISTOGRAM_PLAIN_32, ONESWEEP_PAIRS_32),
            (true, false, false) => (ITEMS_64, HISTOGRAM_64, ONESWEEP_64),
            (true, false, true) => (ITEMS_64, HISTOGRAM_PLAIN_64, ONESWEEP_PLAIN_64),
            (true, true, false) => (ITEMS_64_PAIRS, HISTOGRAM_64, ONESWEEP_PAIRS_64),
            (true, true, true) => (ITEMS_64_PAIRS, HISTOGRAM_PLAIN_64, ONESWEEP_PAIRS_64),
        }
    }

    /// Every sort kernel name.
    pub const ALL: [&str; 11] = [
        HISTOGRAM_32,
        HISTOGRAM_64,
        HISTOGRAM_PLAIN_32,
        HISTOGRAM_PLAIN_64,
        OFFSETS,
        ONESWEEP_32,
        ONESWEEP_PLAIN_32,
        ONESWEEP_PAIRS_32,
        ONESWEEP_64,
        ONESWEEP_PLAIN_64,
        ONESWEEP_PAIRS_64,
    ];
}

/// The launch bounds of kernel entry `name`: `(threads per block, minimum
/// blocks per multiprocessor)`, which the build writes into the PTX as
/// `.maxntid` and `.minnctapersm` (what CUDA's `__launch_bounds__` writes;
/// Rust has no attribute for them), so that the assembler keeps the
/// kernel's registers low enough for that many blocks. `None`: no bounds.
pub const fn launch_bounds(name: &str) -> Option<(u32, u32)> {
    const fn eq(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    let (narrow, wide) = (scan::MIN_BLOCKS_PER_SM_32, scan::MIN_BLOCKS_PER_SM_64);
    let scans = [
        (numeric::U32.scan, narrow),
        (numeric::I32.scan, narrow),
        (numeric::F32.scan, narrow),
        (numeric::U64.scan, wide),
        (numeric::I64.scan, wide),
        (numeric::F64.scan, wide),
    ];
    let mut t = 0;
    while t < scans.len() {
        if eq(name, scans[t].0) {
            return Some((scan::BLOCK, scans[t].1));
        }
        t += 1;
    }
    let sweeps = [
        (sort::ONESWEEP_32, sort::MIN_BLOCKS_PER_SM_32),
        (sort::ONESWEEP_PLAIN_32, sort::MIN_BLOCKS_PER_SM_32),
        (sort::ONESWEEP_PAIRS_32, sort::MIN_BLOCKS_PER_SM_32_PAIRS),
        (sort::ONESWEEP_64, sort::MIN_BLOCKS_PER_SM_64),
        (sort::ONESWEEP_PLAIN_64, sort::MIN_BLOCKS_PER_SM_64_PLAIN),
        (sort::ONESWEEP_PAIRS_64, sort::MIN_BLOCKS_PER_SM_64_PAIRS),
    ];
    let mut s = 0;
    while s < sweeps.len() {
        if eq(name, sweeps[s].0) {
            return Some((BLOCK, sweeps[s].1));
        }
        s += 1;
    }
    None
}

/// Number of kernel entries in the PTX.
pub const KERNEL_COUNT: usize = 5 + 5 * numeric::ALL.len() + sort::ALL.len();

/// Every kernel entry name the PTX must declare (and the only ones it may).
pub const ALL: [&str; KERNEL_COUNT] = {
    let mut all = [""; KERNEL_COUNT];
    let fixed = [
        elementwise::COPY_BYTES,
        elementwise::FILL_U8,
        elementwise::FILL_U16,
        elementwise::FILL_U32,
        elementwise::FILL_U64,
    ];
    let mut i = 0;
    while i < fixed.len() {
        all[i] = fixed[i];
        i += 1;
    }
    let mut t = 0;
    while t < numeric::ALL.len() {
        let names = numeric::ALL[t].names();
        let mut j = 0;
        while j < names.len() {
            all[i] = names[j];
            i += 1;
            j += 1;
        }
        t += 1;
    }
    let mut s = 0;
    while s < sort::ALL.len() {
        all[i] = sort::ALL[s];
        i += 1;
        s += 1;
    }
    all
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_complete() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(a.starts_with("rmm_"), "{a}");
            for b in &ALL[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }

    #[test]
    fn tiles_fit_the_block() {
        assert_eq!(BLOCK % WARP, 0);
        assert_eq!(scan::tile(4), 8192);
        assert_eq!(scan::tile(8), 3584);
        assert_eq!(scan::state_bytes(4, 1), 512);
        assert_eq!(scan::state_bytes(8, 64), 256 + 16 * 64);
        assert_eq!(scan::state_bytes(4, 32), 512);
        assert_eq!(scan::tiles(8, 3585), 2);
        assert_eq!(scan::tiles(8, 3584), 1);
        assert_eq!(scan::tiles(4, 8193), 2);
        assert_eq!(sort::RADIX, 256);
        assert_eq!(elementwise::fill(3), None);
        assert_eq!(sort::kernels(true, true, false).0, sort::ITEMS_64_PAIRS);
        assert_eq!(
            sort::kernels(false, false, true),
            (sort::ITEMS_32, sort::HISTOGRAM_PLAIN_32, sort::ONESWEEP_PLAIN_32)
        );
        assert_eq!(
            sort::kernels(true, true, true),
            (
                sort::ITEMS_64_PAIRS,
                sort::HISTOGRAM_PLAIN_64,
                sort::ONESWEEP_PAIRS_64
            )
        );
        // Every count of a portion fits the look-back word's value bits.
        for items in [
            sort::ITEMS_32,
            sort::ITEMS_32_PAIRS,
            sort::ITEMS_64,
            sort::ITEMS_64_PAIRS,
        ] {
            assert!(sort::portion_tiles(items) * sort::tile(items) <= sort::VALUE_MASK as usize);
            assert!(sort::portion_tiles(items) >= 1);
        }
        assert_eq!(sort::FLAG_MASK & sort::VALUE_MASK, 0);
        assert_eq!(sort::FLAG_MASK, sort::FLAG_PARTIAL | sort::FLAG_GLOBAL);
        assert_eq!(
            launch_bounds("rmm_scan_f64"),
            Some((BLOCK, scan::MIN_BLOCKS_PER_SM_64))
        );
        assert_eq!(
            launch_bounds("rmm_scan_f32"),
            Some((BLOCK, scan::MIN_BLOCKS_PER_SM_32))
        );
        assert_eq!(
            launch_bounds(sort::ONESWEEP_PAIRS_64),
            Some((BLOCK, sort::MIN_BLOCKS_PER_SM_64_PAIRS))
        );
        assert_eq!(
            launch_bounds(sort::ONESWEEP_PLAIN_64),
            Some((BLOCK, sort::MIN_BLOCKS_PER_SM_64_PLAIN))
        );
        assert_eq!(launch_bounds(sort::HISTOGRAM_32), None);
        assert_eq!(launch_bounds(sort::HISTOGRAM_PLAIN_32), None);
        assert_eq!(ALL.iter().filter(|n| launch_bounds(n).is_some()).count(), 12);
    }
}
