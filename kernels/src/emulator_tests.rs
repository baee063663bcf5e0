//! The kernels' logic on the host emulator (one OS thread per GPU thread):
//! radix sort passes, scans and reductions against std, with launch shapes
//! that give several blocks, several tiles per block and partial tiles.
//! Run with `RUSTC_BOOTSTRAP=1 cargo test` in `kernels/`.

use std::vec::Vec;

use crate::emulator::launch;
use crate::num::Num;
use crate::reduce::reduce_impl;
use crate::scan::{down_impl, partials_impl, single_impl, TILE};
use crate::sequence::sequence_impl;
use crate::sort::{
    downsweep, upsweep, DownShared, SortKey, BLOCK, ITEMS_32, ITEMS_32_PAIRS, ITEMS_64, ITEMS_64_PAIRS,
    MODE_DESCENDING, MODE_FLOAT, MODE_SIGNED, RADIX, UP_BATCH,
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

/// The host's scan: partials, single-block scan, downsweep, with at most
/// `blocks` blocks.
fn scan_in_place<T: Num + Send + Sync>(data: &mut [T], blocks: usize) {
    let n = data.len();
    let tiles = n.div_ceil(TILE).max(1);
    let per_block = tiles.div_ceil(blocks);
    let grid = tiles.div_ceil(per_block);
    // Garbage first: every slot must be written before it is read.
    let mut sums: Vec<T> = std::vec![T::MIN_IDENTITY; grid];
    let (d, s) = (P::of(data.as_ptr()), P::of(sums.as_mut_ptr()));
    // SAFETY (three launches): buffers sized as the kernels require.
    launch(grid as u32, BLOCK as u32, || unsafe {
        let w = crate::shared_bytes!(rmm_scan_smem, 64) as *mut T;
        partials_impl::<T>(d.get(), n, per_block, s.get(), w)
    });
    launch(1, BLOCK as u32, || unsafe {
        let w = crate::shared_bytes!(rmm_scan_smem, 64) as *mut T;
        single_impl::<T>(s.get(), grid, w)
    });
    launch(grid as u32, BLOCK as u32, || unsafe {
        let w = crate::shared_bytes!(rmm_scan_smem, 64) as *mut T;
        down_impl::<T>(d.get(), d.get(), n, per_block, s.get(), w)
    });
}

/// The host's radix sort: upsweep, scan, downsweep per pass, at most
/// `resident` blocks.
fn radix_sort<K: SortKey + Send + Sync + Default, const ITEMS: usize>(
    keys: &mut [K],
    mut vals: Option<&mut [u32]>,
    mode: u32,
    resident: usize,
) {
    let n = keys.len();
    if n == 0 {
        return;
    }
    let tile = BLOCK * ITEMS;
    let tiles = n.div_ceil(tile);
    let per_block = tiles.div_ceil(resident);
    let grid = tiles.div_ceil(per_block);
    let mut alt = std::vec![K::default(); n];
    let mut alt_v = std::vec![0u32; n];
    let mut counts = std::vec![0xDEADu32; RADIX * grid];
    let kp = P::of(keys.as_ptr());
    let ap = P::of(alt.as_mut_ptr());
    let vp = P::of(
        vals.as_deref_mut()
            .map(|v| v.as_ptr())
            .unwrap_or(core::ptr::null()),
    );
    let avp = P::of(alt_v.as_mut_ptr());
    let cp = P::of(counts.as_mut_ptr());
    let pairs = vals.is_some();
    let key_bytes = core::mem::size_of::<K>();
    for pass in 0..key_bytes as u32 {
        let (src, dst, vsrc, vdst) = match pass {
            0 => (kp, ap, vp, avp),
            p if p % 2 == 1 => (ap, kp, avp, vp),
            _ => (kp, ap, vp, avp),
        };
        let shift = pass * 8;
        // SAFETY: buffers sized as the kernels require.
        launch(grid as u32, BLOCK as u32, || unsafe {
            let h = crate::shared_bytes!(rmm_radix_hist, 8 * RADIX * 4) as *mut u32;
            upsweep::<K, UP_BATCH>(src.get(), n, shift, mode, per_block * tile, cp.get(), h)
        });
        // SAFETY: `counts` holds RADIX * grid words.
        scan_in_place(
            unsafe { core::slice::from_raw_parts_mut(cp.get::<u32>(), RADIX * grid) },
            3,
        );
        let shared = || DownShared::<K> {
            keys: crate::shared_bytes!(rmm_radix_keys, tile * key_bytes) as *mut K,
            vals: crate::shared_bytes!(rmm_radix_vals, tile * 4) as *mut u32,
            warp_counts: crate::shared_bytes!(rmm_radix_counts, 8 * RADIX * 4) as *mut u32,
            digit_start: crate::shared_bytes!(rmm_radix_start, RADIX * 4) as *mut u32,
            global: crate::shared_bytes!(rmm_radix_global, RADIX * 4) as *mut u32,
            warp_totals: crate::shared_bytes!(rmm_radix_wtot, 64) as *mut u32,
        };
        // SAFETY: as above.
        launch(grid as u32, BLOCK as u32, || unsafe {
            if pairs {
                downsweep::<K, ITEMS, true>(
                    src.get(),
                    dst.get(),
                    vsrc.get(),
                    vdst.get(),
                    n,
                    shift,
                    mode,
                    per_block,
                    cp.get(),
                    shared(),
                )
            } else {
                downsweep::<K, ITEMS, false>(
                    src.get(),
                    dst.get(),
                    core::ptr::null(),
                    core::ptr::null_mut(),
                    n,
                    shift,
                    mode,
                    per_block,
                    cp.get(),
                    shared(),
                )
            }
        });
    }
}

#[test]
fn radix_sort_u32_keys_several_blocks_and_partial_tiles() {
    let mut r = Rng(1);
    // 5 tiles of 6144 over 2 blocks (3 + 2 tiles, the last one partial).
    let mut keys: Vec<u32> = (0..30_001).map(|_| r.next() as u32).collect();
    let mut want = keys.clone();
    want.sort();
    radix_sort::<u32, ITEMS_32>(&mut keys, None, 0, 2);
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
            want.sort_by(|a, b| b.0.cmp(&a.0));
        } else {
            want.sort_by(|a, b| a.0.cmp(&b.0));
        }
        let mode = MODE_SIGNED | if desc { MODE_DESCENDING } else { 0 };
        // SAFETY: i32 and u32 have the same layout.
        let k32 = unsafe { core::slice::from_raw_parts_mut(keys.as_mut_ptr() as *mut u32, keys.len()) };
        radix_sort::<u32, ITEMS_32_PAIRS>(k32, Some(&mut vals), mode, 3);
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
        radix_sort::<u32, ITEMS_32>(&mut bits, None, mode, 2);
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
    radix_sort::<u64, ITEMS_64_PAIRS>(&mut keys, Some(&mut vals), 0, 2);
    let got: Vec<(u64, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
    assert!(got == want, "u64 pairs");

    // 3 tiles of 4096 in one block, the last one partial.
    let mut f: Vec<u64> = (0..9_000).map(|i| ((i % 50) as f64 - 25.0).to_bits()).collect();
    f[7] = (-0.0f64).to_bits();
    f[8] = f64::NAN.to_bits();
    let mut want: Vec<f64> = f.iter().map(|b| f64::from_bits(*b)).collect();
    want.sort_by(|a, b| b.total_cmp(a));
    radix_sort::<u64, ITEMS_64>(&mut f, None, MODE_FLOAT | MODE_DESCENDING, 1);
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
        radix_sort::<u32, ITEMS_32_PAIRS>(&mut keys, Some(&mut vals), 0, 4);
        let got: Vec<(u32, u32)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        assert!(got == want, "n = {n}");
    }
}

#[test]
fn scans_match_sequential_sums() {
    let mut r = Rng(5);
    for n in [1usize, 2, 2047, 2048, 2049, 10_000] {
        let host: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
        let mut d = host.clone();
        scan_in_place(&mut d, 3);
        let mut acc = 0u32;
        for i in 0..n {
            assert_eq!(d[i], acc, "u32 n={n} at {i}");
            acc = acc.wrapping_add(host[i]);
        }
        let hf: Vec<f64> = (0..n).map(|_| (r.next() % 4) as f64).collect();
        let mut df = hf.clone();
        scan_in_place(&mut df, 2);
        let mut accf = 0.0;
        for i in 0..n {
            assert_eq!(df[i], accf, "f64 n={n} at {i}");
            accf += hf[i];
        }
    }
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
            let sum = reduce_on_emulator(v, 0u32, |a, b| Num::add(a, b), 2);
            assert_eq!(sum, v.iter().fold(0u32, |a, &b| a.wrapping_add(b)), "u32 sum +{offset} n={n}");
            let lo = reduce_on_emulator(v, u32::MAX, |a, b| Num::min(a, b), 2);
            assert_eq!(lo, *v.iter().min().unwrap(), "u32 min +{offset} n={n}");
            let f = &floats32[offset..offset + n];
            let hi = reduce_on_emulator(f, f32::NAN, |a, b| Num::max(a, b), 1);
            assert_eq!(hi, f.iter().copied().fold(f32::NAN, f32::max), "f32 max +{offset} n={n}");
        }
    }
    for offset in 0..2 {
        for n in [1usize, 2, 3, 5, 33, 517] {
            let v = &backing64[offset..offset + n];
            let sum = reduce_on_emulator(v, 0u64, |a, b| Num::add(a, b), 2);
            assert_eq!(sum, v.iter().fold(0u64, |a, &b| a.wrapping_add(b)), "u64 sum +{offset} n={n}");
            let f = &floats64[offset..offset + n];
            let lo = reduce_on_emulator(f, f64::NAN, |a, b| Num::min(a, b), 2);
            assert_eq!(lo, f.iter().copied().fold(f64::NAN, f64::min), "f64 min +{offset} n={n}");
        }
    }
}
