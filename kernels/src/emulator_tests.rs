//! The kernels' logic on the host emulator (one OS thread per GPU thread):
//! radix sort passes, scans and reductions against std, with launch shapes
//! that give several blocks, several tiles per block and partial tiles.
//! Run with `RUSTC_BOOTSTRAP=1 cargo test` in `kernels/`.

use std::vec::Vec;

use approx::assert_relative_eq;
use kernel_abi::scan::{state_bytes, tiles, MODE_INCLUSIVE, STATUS_AGGREGATE, STATUS_PREFIX};

use crate::emulator::{launch, launch_concurrent};
use crate::num::Num;
use crate::reduce::reduce_impl;
use crate::scan::{look_back, scan_impl, tile, Shared, TileState, EXCHANGE_BYTES, WARP_TOTALS_BYTES};
use crate::sequence::sequence_impl;
use crate::sort::{
    histogram, histogram_words, offsets, onesweep, SortKey, SweepShared, BLOCK, ITEMS_32, ITEMS_32_PAIRS,
    ITEMS_64, ITEMS_64_PAIRS, MODE_DESCENDING, MODE_FLOAT, MODE_SIGNED, RADIX,
};

/// A raw pointer that may cross into the emulated threads.
#[derive(Clone, Copy)]
struct P(usize);
impl P {
    fn of<T>(p: *const T) -> P {
        P(p as usize)
    }
    fn get<T>(self) -> *mut T {
        self.0 as *mut T
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A zeroed tile state for `n` elements of `T`, as the host clears it.
/// `u64` words, so 8-byte aligned like the kernel needs.
fn scan_state<T>(n: usize) -> Vec<u64> {
    let size = core::mem::size_of::<T>();
    std::vec![0u64; state_bytes(size, tiles(size, n)) / 8]
}

/// The host's single-pass scan of `n` elements from `input` to `output`
/// (the same or disjoint arrays): `tiles(n)` blocks, one after the other
/// (`resident == 0`) or up to `resident` at once.
fn run_scan<T: Num + Send + Sync>(input: P, output: P, n: usize, mode: u32, resident: u32) {
    let mut state = scan_state::<T>(n);
    let st = P::of(state.as_mut_ptr());
    // SAFETY: `input`/`output` hold `n` elements (callers), `state` is sized
    // and zeroed for the launch; the shared arrays are the block's own.
    let body = || unsafe {
        let shared = Shared::<T> {
            warp_totals: crate::shared_bytes!(rmm_scan_warp_totals, WARP_TOTALS_BYTES) as *mut T,
            exchange: crate::shared_bytes!(rmm_scan_exchange, EXCHANGE_BYTES),
            tile: crate::shared_bytes!(rmm_scan_tile, 4) as *mut u32,
            prefix: crate::shared_bytes!(rmm_scan_prefix, 8) as *mut T,
        };
        scan_impl::<T>(input.get(), output.get(), n, st.get(), mode, shared)
    };
    let grid = tiles(core::mem::size_of::<T>(), n) as u32;
    if resident == 0 {
        launch(grid, crate::scan::BLOCK as u32, body);
    } else {
        launch_concurrent(grid, crate::scan::BLOCK as u32, resident, body);
    }
}

/// Single-pass scan in place.
fn scan_in_place<T: Num + Send + Sync>(data: &mut [T], mode: u32, resident: u32) {
    if !data.is_empty() {
        let d = P::of(data.as_mut_ptr());
        run_scan::<T>(d, d, data.len(), mode, resident);
    }
}

/// Single-pass scan into a new vector (the input stays as it is).
fn scan_copy<T: Num + Send + Sync>(data: &[T], mode: u32, resident: u32) -> Vec<T> {
    let mut out = std::vec![T::MIN_IDENTITY; data.len()];
    if !data.is_empty() {
        run_scan::<T>(
            P::of(data.as_ptr()),
            P::of(out.as_mut_ptr()),
            data.len(),
            mode,
            resident,
        );
    }
    out
}

/// The sequential reference: exclusive or inclusive, from zero.
fn reference<T: Num>(data: &[T], mode: u32) -> Vec<T> {
    let mut acc = T::ZERO;
    data.iter()
        .map(|&x| {
            let before = acc;
            acc = acc.add(x);
            if mode & MODE_INCLUSIVE != 0 {
                acc
            } else {
                before
            }
        })
        .collect()
}

/// The host's onesweep radix sort: the histogram (3 blocks), the offsets,
/// then per pass one onesweep launch per portion of `portion_tiles` tiles
/// with up to `resident` blocks running at once (blocks really wait on each
/// other's look-back words).
fn radix_sort<K: SortKey + Send + Sync + Default, const ITEMS: usize>(
    keys: &mut [K],
    mut vals: Option<&mut [u32]>,
    mode: u32,
    resident: u32,
    portion_tiles: usize,
) {
    let n = keys.len();
    if n == 0 {
        return;
    }
    let tile = BLOCK * ITEMS;
    let tiles = n.div_ceil(tile);
    let portions = tiles.div_ceil(portion_tiles);
    let passes = core::mem::size_of::<K>();
    let mut alt = std::vec![K::default(); n];
    let mut alt_v = std::vec![0u32; n];
    let mut hist = std::vec![0u32; passes * RADIX];
    let stride = (portions + 1) * RADIX;
    let mut bases = std::vec![0xDEADu32; passes * stride];
    let kp = P::of(keys.as_ptr());
    let ap = P::of(alt.as_mut_ptr());
    let vp = P::of(
        vals.as_deref_mut()
            .map(|v| v.as_ptr())
            .unwrap_or(core::ptr::null()),
    );
    let avp = P::of(alt_v.as_mut_ptr());
    let hp = P::of(hist.as_mut_ptr());
    let bp = P::of(bases.as_mut_ptr());
    let pairs = vals.is_some();
    // Plain keys run the plain kernels, as on the GPU.
    let plain = mode == 0;
    // SAFETY: buffers sized as the kernels require.
    launch(3, BLOCK as u32, || unsafe {
        let h = crate::shared_bytes!(rmm_radix_hist, histogram_words(passes) * 4) as *mut u32;
        if passes == 4 {
            if plain {
                histogram::<K, 4, true>(kp.get(), n, mode, hp.get(), h)
            } else {
                histogram::<K, 4, false>(kp.get(), n, mode, hp.get(), h)
            }
        } else if plain {
            histogram::<K, 8, true>(kp.get(), n, mode, hp.get(), h)
        } else {
            histogram::<K, 8, false>(kp.get(), n, mode, hp.get(), h)
        }
    });
    // SAFETY: `hist` holds passes * RADIX words, `bases` passes * stride.
    launch(passes as u32, BLOCK as u32, || unsafe {
        let wt = crate::shared_bytes!(rmm_radix_wtot, 64) as *mut u32;
        offsets(hp.get(), bp.get(), stride, wt)
    });
    for pass in 0..passes {
        let (src, dst, vsrc, vdst) = match pass {
            0 => (kp, ap, vp, avp),
            p if p % 2 == 1 => (ap, kp, avp, vp),
            _ => (kp, ap, vp, avp),
        };
        let shift = pass as u32 * 8;
        for q in 0..portions {
            let first = q * portion_tiles;
            let count = portion_tiles.min(tiles - first);
            let mut state = std::vec![0u32; kernel_abi::sort::state_words(count)];
            let sp = P::of(state.as_mut_ptr());
            let b_in = P::of(bases[pass * stride + q * RADIX..].as_ptr());
            let b_out = P::of(bases[pass * stride + (q + 1) * RADIX..].as_ptr());
            let shared = || SweepShared::<K> {
                keys: crate::shared_bytes!(rmm_radix_keys, tile * passes) as *mut K,
                vals: crate::shared_bytes!(rmm_radix_vals, tile * 4) as *mut u32,
                warp_counts: crate::shared_bytes!(rmm_radix_counts, 8 * RADIX * 4) as *mut u32,
                global: crate::shared_bytes!(rmm_radix_global, RADIX * 4) as *mut u32,
                warp_totals: crate::shared_bytes!(rmm_radix_wtot, 64) as *mut u32,
                tile: crate::shared_bytes!(rmm_radix_tile, 4) as *mut u32,
            };
            // The kernel the host picks (`kernel_abi::sort::kernels`); keys
            // alone pass no value buffers.
            let sweep = match (pairs, plain) {
                (true, _) => onesweep::<K, ITEMS, true, false>,
                (false, true) => onesweep::<K, ITEMS, false, true>,
                (false, false) => onesweep::<K, ITEMS, false, false>,
            };
            let (vin, vout) = if pairs { (vsrc, vdst) } else { (P(0), P(0)) };
            // SAFETY: as above; `state` is zero and this launch's own.
            launch_concurrent(count as u32, BLOCK as u32, resident, || unsafe {
                sweep(
                    src.get(),
                    dst.get(),
                    vin.get(),
                    vout.get(),
                    n,
                    first,
                    shift,
                    mode,
                    sp.get(),
                    b_in.get(),
                    b_out.get(),
                    shared(),
                )
            });
        }
    }
}

/// Portion size (in tiles) larger than any test input: one onesweep launch per pass.
const ONE_PORTION: usize = 1 << 20;

#[test]
fn radix_sort_u32_keys_several_blocks_and_partial_tiles() {
    let mut r = Rng(1);
    // 5 tiles of 6144 over 2 blocks (3 + 2 tiles, the last one partial).
    let mut keys: Vec<u32> = (0..30_001).map(|_| r.next() as u32).collect();
    let mut want = keys.clone();
    want.sort();
    radix_sort::<u32, ITEMS_32>(&mut keys, None, 0, 2, ONE_PORTION);
    assert!(keys == want, "u32 keys not sorted");
}

#[test]
fn radix_sort_pairs_are_stable_both_orders() {
    let mut r = Rng(2);
    let base: Vec<i32> = (0..9_000).map(|_| (r.next() % 7) as i32 - 3).collect();
    for desc in [false, true] {
        let mut keys = base.clone();
        let mut vals: Vec<u32> = (0..keys.len() as u32).collect();
        let mut want: Vec<(i32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        if desc {
            want.sort_by_key(|p| core::cmp::Reverse(p.0));
        } else {
            want.sort_by_key(|p| p.0);
        }
        let mode = MODE_SIGNED | if desc { MODE_DESCENDING } else { 0 };
        // SAFETY: i32 and u32 have the same layout.
        let k32 = unsafe { core::slice::from_raw_parts_mut(keys.as_mut_ptr() as *mut u32, keys.len()) };
        radix_sort::<u32, ITEMS_32_PAIRS>(k32, Some(&mut vals), mode, 3, ONE_PORTION);
        let got: Vec<(i32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        assert!(got == want, "pairs (descending = {desc}) differ");
    }
}

#[test]
fn radix_sort_float_total_order() {
    let mut r = Rng(3);
    let specials = [
        f32::NAN,
        -f32::NAN,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MAX,
        f32::MIN,
    ];
    let floats: Vec<f32> = (0..6_000)
        .map(|i| {
            if i % 10 == 0 {
                specials[(i / 10) % specials.len()]
            } else {
                (r.next() as i64 as f64 / 1e15) as f32
            }
        })
        .collect();
    for desc in [false, true] {
        let mut bits: Vec<u32> = floats.iter().map(|f| f.to_bits()).collect();
        let mut want = floats.clone();
        if desc {
            want.sort_by(|a, b| b.total_cmp(a));
        } else {
            want.sort_by(|a, b| a.total_cmp(b));
        }
        let mode = MODE_FLOAT | if desc { MODE_DESCENDING } else { 0 };
        radix_sort::<u32, ITEMS_32>(&mut bits, None, mode, 2, ONE_PORTION);
        let want_bits: Vec<u32> = want.iter().map(|f| f.to_bits()).collect();
        assert!(bits == want_bits, "float order (descending = {desc})");
    }
}

#[test]
fn radix_sort_64_bit_keys_and_pairs() {
    let mut r = Rng(4);
    let mut keys: Vec<u64> = (0..5_000).map(|_| r.next() >> (r.next() % 64)).collect();
    let mut vals: Vec<u32> = (0..keys.len() as u32).collect();
    let mut want: Vec<(u64, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
    want.sort_by_key(|p| p.0);
    radix_sort::<u64, ITEMS_64_PAIRS>(&mut keys, Some(&mut vals), 0, 2, ONE_PORTION);
    let got: Vec<(u64, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
    assert!(got == want, "u64 pairs");

    // Plain u64 keys alone (the plain kernels): 3 tiles of 4096 over 2
    // blocks, the last one partial, with few distinct high digits.
    let mut keys: Vec<u64> = (0..9_000)
        .map(|_| (r.next() % 5) << 61 | r.next() >> 40)
        .collect();
    let mut want = keys.clone();
    want.sort();
    radix_sort::<u64, ITEMS_64>(&mut keys, None, 0, 2, ONE_PORTION);
    assert!(keys == want, "plain u64 keys");

    // 3 tiles of 4096 in one block, the last one partial.
    let mut f: Vec<u64> = (0..9_000).map(|i| ((i % 50) as f64 - 25.0).to_bits()).collect();
    f[7] = (-0.0f64).to_bits();
    f[8] = f64::NAN.to_bits();
    let mut want: Vec<f64> = f.iter().map(|b| f64::from_bits(*b)).collect();
    want.sort_by(|a, b| b.total_cmp(a));
    radix_sort::<u64, ITEMS_64>(&mut f, None, MODE_FLOAT | MODE_DESCENDING, 1, ONE_PORTION);
    let want_bits: Vec<u64> = want.iter().map(|x| x.to_bits()).collect();
    assert!(f == want_bits, "f64 descending");
}

#[test]
fn radix_sort_tiny_inputs() {
    for n in [1usize, 2, 3, 33, 255, 257] {
        let mut r = Rng(n as u64);
        let mut keys: Vec<u32> = (0..n).map(|_| (r.next() % 5) as u32).collect();
        let mut vals: Vec<u32> = (0..n as u32).collect();
        let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        want.sort_by_key(|p| p.0);
        radix_sort::<u32, ITEMS_32_PAIRS>(&mut keys, Some(&mut vals), 0, 4, ONE_PORTION);
        let got: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        assert!(got == want, "n = {n}");
    }
}

#[test]
fn radix_sort_portions_hand_digit_offsets_on() {
    // 5 tiles of 6144 (the last partial) in portions of 2, 1 and 4 tiles:
    // each portion's last tile hands the next portion its digits' starts.
    let mut r = Rng(11);
    let base: Vec<u32> = (0..30_001).map(|_| r.next() as u32).collect();
    let mut want = base.clone();
    want.sort();
    for portion in [2usize, 1, 4] {
        let mut keys = base.clone();
        radix_sort::<u32, ITEMS_32>(&mut keys, None, 0, 3, portion);
        assert!(keys == want, "portions of {portion} tiles");
    }
    // 64-bit pairs, 3 tiles of 2048 in portions of one tile, stable.
    let mut keys: Vec<u64> = (0..5_000).map(|_| r.next() % 97).collect();
    let mut vals: Vec<u32> = (0..keys.len() as u32).collect();
    let mut want: Vec<(u64, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
    want.sort_by_key(|p| p.0);
    radix_sort::<u64, ITEMS_64_PAIRS>(&mut keys, Some(&mut vals), 0, 2, 1);
    let got: Vec<(u64, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
    assert!(got == want, "u64 pairs in portions of one tile");
}

#[test]
fn radix_sort_adversarial_inputs_stay_stable() {
    // All keys equal, already sorted, reverse sorted, few distinct digits
    // (every byte 0 or 0xff), with values to check stability, 4 tiles of
    // 4096 running 4 at a time so that the look-backs really wait.
    let n = 4 * 4096 - 7;
    let mut r = Rng(12);
    let inputs: [(&str, Vec<u32>); 4] = [
        ("equal", std::vec![0x8000_0001; n]),
        ("sorted", (0..n as u32).map(|i| i * 3).collect()),
        ("reverse", (0..n as u32).rev().collect()),
        (
            "few digits",
            (0..n)
                .map(|_| {
                    let b = r.next() as u32;
                    (b & 0x0101_0101) * 0xff
                })
                .collect(),
        ),
    ];
    for (what, input) in inputs {
        for desc in [false, true] {
            let mut keys = input.clone();
            let mut vals: Vec<u32> = (0..n as u32).collect();
            let mut want: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
            if desc {
                want.sort_by_key(|p| core::cmp::Reverse(p.0));
            } else {
                want.sort_by_key(|p| p.0);
            }
            let mode = if desc { MODE_DESCENDING } else { 0 };
            radix_sort::<u32, ITEMS_32_PAIRS>(&mut keys, Some(&mut vals), mode, 4, ONE_PORTION);
            let got: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
            assert!(got == want, "{what} (descending = {desc})");
        }
    }
}

/// Sizes for the scans over every type and both modes: 1, partial tiles,
/// whole tiles, several tiles, 2^k - 1, 2^k, 2^k + 1 up to 2^15 + 1 (9
/// tiles). Larger sizes (65 tiles: more than two look-back windows) run for
/// fewer types: the emulator spends about a millisecond per block.
/// The larger of the 32- and 64-bit scans' tiles (elements).
const TILE: usize = if tile(4) > tile(8) { tile(4) } else { tile(8) };
/// The smaller one.
const SMALL_TILE: usize = if tile(4) > tile(8) { tile(8) } else { tile(4) };

const SCAN_SIZES: [usize; 16] = [
    1,
    2,
    7,
    255,
    SMALL_TILE - 1,
    SMALL_TILE,
    SMALL_TILE + 1,
    TILE - 1,
    TILE,
    TILE + 1,
    2 * TILE + 5,
    (1 << 13) - 1,
    1 << 13,
    (1 << 13) + 1,
    (1 << 15) - 1,
    (1 << 15) + 1,
];

/// Scans `data` (in place or into another array) and compares with the
/// sequential reference.
fn check_scan<T: Num + Send + Sync + PartialEq + core::fmt::Debug>(
    data: &[T],
    mode: u32,
    in_place: bool,
    resident: u32,
    what: &str,
) {
    let want = reference(data, mode);
    let n = data.len();
    let got = if in_place {
        let mut d = data.to_vec();
        scan_in_place(&mut d, mode, resident);
        d
    } else {
        scan_copy(data, mode, resident)
    };
    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
        panic!(
            "{what} n={n} mode={mode} in_place={in_place}: element {i}: {:?} != {:?}",
            got[i], want[i]
        );
    }
}

#[test]
fn single_pass_scan_integers_wrap_like_sequential_sums() {
    let mut r = Rng(5);
    for n in SCAN_SIZES {
        for mode in [0, MODE_INCLUSIVE] {
            let in_place = mode == MODE_INCLUSIVE;
            let a: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
            check_scan(&a, mode, in_place, 0, "u32");
            let b: Vec<i32> = (0..n).map(|_| r.next() as i32).collect();
            check_scan(&b, mode, !in_place, 0, "i32");
            let c: Vec<u64> = (0..n).map(|_| r.next()).collect();
            check_scan(&c, mode, in_place, 0, "u64");
            let d: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
            check_scan(&d, mode, !in_place, 0, "i64");
        }
    }
    for n in [(1 << 16) - 1, (1 << 18) + 1] {
        let a: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
        check_scan(&a, 0, false, 0, "u32 large");
        let c: Vec<u64> = (0..n).map(|_| r.next()).collect();
        check_scan(&c, MODE_INCLUSIVE, true, 0, "u64 large");
    }
}

#[test]
fn single_pass_scan_vector_and_element_paths() {
    // Whole tiles of 16-byte aligned arrays move as 16-byte vectors; an
    // input or output that is not 16-byte aligned moves element by element.
    // Both must give the sequential result, in every combination.
    let mut r = Rng(9);
    let n = 3 * TILE + 2;
    for skip in 0..4 {
        for mode in [0, MODE_INCLUSIVE] {
            // Backed by 16-byte aligned storage, so `skip` decides the
            // input's alignment; the output is a fresh (aligned) vector.
            let mut a = std::vec![0u128; (n + 4) / 4 + 1];
            // SAFETY: `a` holds at least `n + 4` u32.
            let a32 = unsafe { core::slice::from_raw_parts_mut(a.as_mut_ptr() as *mut u32, n + 4) };
            a32.iter_mut().for_each(|x| *x = r.next() as u32);
            let input = &a32[skip..skip + n];
            assert_eq!(
                scan_copy(input, mode, 0),
                reference(input, mode),
                "u32 skip {skip}"
            );
            let mut b = std::vec![0u128; (n + 4) / 2 + 1];
            // SAFETY: `b` holds at least `n + 4` u64.
            let b64 = unsafe { core::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut u64, n + 4) };
            b64.iter_mut().for_each(|x| *x = r.next());
            let input = &b64[skip..skip + n];
            assert_eq!(
                scan_copy(input, mode, 0),
                reference(input, mode),
                "u64 skip {skip}"
            );
            // In place at the same offsets: input and output share their
            // alignment.
            let want = reference(&b64[skip..skip + n], mode);
            scan_in_place(&mut b64[skip..skip + n], mode, 0);
            assert_eq!(&b64[skip..skip + n], &want[..], "u64 in place skip {skip}");
        }
    }
}

#[test]
fn single_pass_scan_all_equal_values() {
    for n in [1usize, TILE + 1, (1 << 15) + 1] {
        for mode in [0, MODE_INCLUSIVE] {
            let in_place = mode == 0;
            check_scan(&std::vec![u32::MAX; n], mode, in_place, 0, "u32::MAX");
            check_scan(&std::vec![i32::MIN; n], mode, in_place, 0, "i32::MIN");
            check_scan(&std::vec![u64::MAX; n], mode, in_place, 0, "u64::MAX");
            check_scan(&std::vec![i64::MIN; n], mode, in_place, 0, "i64::MIN");
            check_scan(&std::vec![7u32; n], mode, !in_place, 0, "7u32");
            check_scan(&std::vec![0i64; n], mode, !in_place, 0, "0i64");
            // Exact in any order: integers below 2^24.
            check_scan(&std::vec![1.0f32; n], mode, in_place, 0, "1.0f32");
            check_scan(&std::vec![-3.0f64; n], mode, !in_place, 0, "-3.0f64");
        }
    }
}

#[test]
fn single_pass_scan_floats() {
    let mut r = Rng(6);
    for n in SCAN_SIZES {
        for mode in [0, MODE_INCLUSIVE] {
            // Small integers: every partial sum is exact, so any order of
            // additions gives the sequential result.
            let a: Vec<f32> = (0..n).map(|_| (r.next() % 4) as f32).collect();
            check_scan(&a, mode, mode == 0, 0, "f32");
            let b: Vec<f64> = (0..n).map(|_| (r.next() % 9) as f64 - 4.0).collect();
            check_scan(&b, mode, mode != 0, 0, "f64");
        }
    }
    // Fractions round: compare with a tolerance against a sequential f64
    // reference.
    for n in [TILE + 3, (1 << 15) + 1] {
        for mode in [0, MODE_INCLUSIVE] {
            let x: Vec<f64> = (0..n)
                .map(|_| (r.next() >> 11) as f64 / (1u64 << 53) as f64)
                .collect();
            let want = reference(&x, mode);
            for (g, w) in scan_copy(&x, mode, 0).iter().zip(&want) {
                assert_relative_eq!(*g, *w, max_relative = 1e-12, epsilon = 1e-12);
            }
            let y: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let want: Vec<f64> = reference(&y.iter().map(|&v| v as f64).collect::<Vec<_>>(), mode);
            for (g, w) in scan_copy(&y, mode, 0).iter().zip(&want) {
                assert_relative_eq!(*g as f64, *w, max_relative = 1e-5, epsilon = 1e-5);
            }
        }
    }
}

#[test]
fn single_pass_scan_with_blocks_running_at_once() {
    // Up to 4 blocks in flight: tiles take their index from the counter in
    // whatever order the blocks get there, and look-backs meet aggregates
    // and descriptors not yet published (the spin backs off by yielding).
    let mut r = Rng(7);
    for (n, resident) in [(3 * TILE + 1, 4), ((1 << 16) + 1, 4)] {
        for mode in [0, MODE_INCLUSIVE] {
            let a: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
            check_scan(&a, mode, mode == 0, resident, "u32 concurrent");
            let b: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
            check_scan(&b, mode, mode != 0, resident, "i64 concurrent");
        }
    }
}

/// Look-back over hand-made descriptors of `T` before tile `tile`: `status`
/// says which tiles hold an aggregate (`STATUS_AGGREGATE`) or an inclusive
/// prefix; descriptors are published `delay` apart by another thread while
/// the warp spins (zero: all published before it starts).
fn check_look_back<T: Num + Send + Sync + PartialEq + core::fmt::Debug>(
    values: &[T],
    status: &[u32],
    delay_us: u64,
) {
    let tile = values.len();
    let n = (tile + 1) * crate::scan::tile(core::mem::size_of::<T>());
    let mut state = scan_state::<T>(n);
    let st = P::of(state.as_mut_ptr());
    // SAFETY: `state` is sized and zeroed for `tile + 1` tiles.
    let ts = move || unsafe { TileState::new(st.get()) };
    // The expected prefix: the sum of the values of tiles after the last
    // inclusive prefix, plus that prefix (a prefix's value is the sum up to
    // and including its tile).
    let last_prefix = (0..tile).rev().find(|&t| status[t] == STATUS_PREFIX);
    let want = (last_prefix.unwrap_or(0)..tile).fold(T::ZERO, |a, t| a.add(values[t]));
    let mut got = std::vec![T::MIN_IDENTITY; 1];
    let g = P::of(got.as_mut_ptr());
    let publish = |t: usize| {
        // SAFETY: each tile published once with its status.
        unsafe { ts().publish(t, status[t], values[t]) }
    };
    std::thread::scope(|s| {
        if delay_us == 0 {
            (0..tile).for_each(publish);
        } else {
            s.spawn(move || {
                // Nearest first: the warp sees windows partly published.
                for t in (0..tile).rev() {
                    std::thread::sleep(std::time::Duration::from_micros(delay_us));
                    publish(t);
                }
            });
        }
        // SAFETY: one warp; tiles `0..tile` are published (now or soon).
        launch(1, 32, || unsafe {
            let p = look_back::<T>(ts(), tile);
            if crate::device::lane_id() == 0 {
                g.get::<T>().write(p);
            }
        });
    });
    assert_eq!(got[0], want, "look-back before tile {tile} (delay {delay_us} us)");
}

#[test]
fn look_back_sums_aggregates_up_to_the_nearest_prefix() {
    let mut r = Rng(8);
    // Tile 0 always holds a prefix. A round reads four windows of 32: 100
    // predecessors are three full windows and a partial one; 300 need three
    // rounds when only tile 0 holds a prefix, and a prefix at 150 or 171
    // ends the second round in its first or second window.
    for (len, prefix_at) in [
        (1usize, None),
        (31, None),
        (32, None),
        (33, Some(1)),
        (100, None),
        (100, Some(40)),
        (100, Some(99)),
        (70, Some(5)),
        (128, None),
        (129, None),
        (300, None),
        (300, Some(150)),
        (300, Some(171)),
        (300, Some(299)),
    ] {
        let mut status = std::vec![STATUS_AGGREGATE; len];
        status[0] = STATUS_PREFIX;
        if let Some(p) = prefix_at {
            status[p] = STATUS_PREFIX;
        }
        let v32: Vec<u32> = (0..len).map(|_| r.next() as u32).collect();
        check_look_back(&v32, &status, 0);
        let v64: Vec<u64> = (0..len).map(|_| r.next()).collect();
        check_look_back(&v64, &status, 0);
        let f: Vec<f64> = (0..len).map(|_| (r.next() % 100) as f64).collect();
        check_look_back(&f, &status, 0);
    }
    // Published while the warp waits.
    let mut status = std::vec![STATUS_AGGREGATE; 70];
    status[0] = STATUS_PREFIX;
    let v: Vec<i32> = (0..70).map(|_| r.next() as i32).collect();
    check_look_back(&v, &status, 200);
    let w: Vec<i64> = (0..70).map(|_| r.next() as i64).collect();
    check_look_back(&w, &status, 200);
}

#[test]
fn reductions_and_sequence() {
    let mut r = Rng(6);
    let n = 5_003;
    let host: Vec<i64> = (0..n).map(|_| r.next() as i64).collect();
    let grid = 3u32;
    for (which, want) in [
        (0, host.iter().fold(0i64, |a, &b| a.wrapping_add(b))),
        (1, *host.iter().min().unwrap()),
        (2, *host.iter().max().unwrap()),
    ] {
        let mut partials = std::vec![0x5555i64; grid as usize + 1];
        let (i, o) = (P::of(host.as_ptr()), P::of(partials.as_mut_ptr()));
        let run = |src: P, len: usize, dst: P, blocks: u32| {
            // SAFETY: `src` holds `len`, `dst` `blocks` elements.
            launch(blocks, 256, || unsafe {
                let s = crate::shared_bytes!(rmm_reduce_smem, 256) as *mut i64;
                match which {
                    0 => reduce_impl(
                        src.get::<i64>(),
                        len,
                        dst.get(),
                        0,
                        |a: i64, b: i64| Num::add(a, b),
                        s,
                    ),
                    1 => reduce_impl(
                        src.get::<i64>(),
                        len,
                        dst.get(),
                        i64::MAX,
                        |a: i64, b: i64| Num::min(a, b),
                        s,
                    ),
                    _ => reduce_impl(
                        src.get::<i64>(),
                        len,
                        dst.get(),
                        i64::MIN,
                        |a: i64, b: i64| Num::max(a, b),
                        s,
                    ),
                }
            });
        };
        run(i, n, o, grid);
        run(o, grid as usize, P(o.0 + grid as usize * 8), 1);
        assert_eq!(partials[grid as usize], want, "reduction {which}");
    }
    let mut out = std::vec![0f32; 1000];
    let op = P::of(out.as_mut_ptr());
    // SAFETY: `out` holds 1000 elements.
    launch(2, 256, || unsafe {
        sequence_impl::<f32>(op.get(), 1000, 1.5, 0.25)
    });
    for (i, v) in out.iter().enumerate() {
        assert_eq!(*v, 1.5 + i as f32 * 0.25);
    }
}

/// Reduces `data[offset..offset + n]` with the kernel (grid of `grid`
/// blocks, then one block) and returns the result.
fn reduce_on_emulator<T: Num + Send + Sync + core::fmt::Debug>(
    data: &[T],
    identity: T,
    op: fn(T, T) -> T,
    grid: u32,
) -> T {
    let mut partials: Vec<T> = std::vec![identity; grid as usize + 1];
    let (i, o) = (P::of(data.as_ptr()), P::of(partials.as_mut_ptr()));
    let size = core::mem::size_of::<T>();
    let run = |src: P, len: usize, dst: P, blocks: u32| {
        // SAFETY: `src` holds `len`, `dst` `blocks` elements.
        launch(blocks, 256, || unsafe {
            let s = crate::shared_bytes!(rmm_reduce_smem, 256) as *mut T;
            reduce_impl(src.get::<T>(), len, dst.get(), identity, op, s)
        });
    };
    run(i, data.len(), o, grid);
    run(o, grid as usize, P(o.0 + grid as usize * size), 1);
    partials[grid as usize]
}

#[test]
fn reductions_fold_vectors_heads_and_tails_at_every_alignment() {
    let mut r = Rng(11);
    let backing32: Vec<u32> = (0..1100).map(|_| r.next() as u32).collect();
    let backing64: Vec<u64> = (0..600).map(|_| r.next()).collect();
    let floats32: Vec<f32> = backing32.iter().map(|&x| (x % 1000) as f32 - 500.0).collect();
    let floats64: Vec<f64> = backing64.iter().map(|&x| (x % 977) as f64).collect();
    // Offsets move the start off a 16-byte boundary by every possible
    // amount; lengths cover a lone head, a partial vector, a few vectors
    // and more vectors than the grid has threads.
    for offset in 0..4 {
        for n in [1usize, 2, 3, 4, 5, 7, 9, 17, 64, 1029] {
            let v = &backing32[offset..offset + n];
            let sum = reduce_on_emulator(v, 0u32, Num::add, 2);
            assert_eq!(
                sum,
                v.iter().fold(0u32, |a, &b| a.wrapping_add(b)),
                "u32 sum +{offset} n={n}"
            );
            let lo = reduce_on_emulator(v, u32::MAX, Num::min, 2);
            assert_eq!(lo, *v.iter().min().unwrap(), "u32 min +{offset} n={n}");
            let f = &floats32[offset..offset + n];
            let hi = reduce_on_emulator(f, f32::NAN, Num::max, 1);
            assert_eq!(
                hi,
                f.iter().copied().fold(f32::NAN, f32::max),
                "f32 max +{offset} n={n}"
            );
        }
    }
    for offset in 0..2 {
        for n in [1usize, 2, 3, 5, 33, 517] {
            let v = &backing64[offset..offset + n];
            let sum = reduce_on_emulator(v, 0u64, Num::add, 2);
            assert_eq!(
                sum,
                v.iter().fold(0u64, |a, &b| a.wrapping_add(b)),
                "u64 sum +{offset} n={n}"
            );
            let f = &floats64[offset..offset + n];
            let lo = reduce_on_emulator(f, f64::NAN, Num::min, 2);
            assert_eq!(
                lo,
                f.iter().copied().fold(f64::NAN, f64::min),
                "f64 min +{offset} n={n}"
            );
        }
    }
}
