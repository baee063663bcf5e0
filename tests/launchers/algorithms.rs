//! Sequence, reductions and exclusive and inclusive scans on a real GPU against CPU
//! references (rayon), plus CPU-only checks of the PTX and of argument
//! validation.

use crate::algo_util::{size_ok, stream_and_policy, DevVec, Rng};
use approx::assert_relative_eq;
use rayon::prelude::*;
use rmm::exec_policy::ExecPolicy;
use rmm::mr::SimulatedMemoryResource;
use rmm::{CudaStreamView, DevicePtr, DeviceSpan, DeviceSpanMut, Error};
use rmm_suite::numeric::Numeric;
use rmm_suite::{reduce, scan, sequence};

/// Test-side arithmetic for each element type.
trait TestNum: Numeric + Default {
    const FLOAT: bool;
    fn random(r: &mut Rng) -> Self;
    fn small(v: u64) -> Self;
    fn add(a: Self, b: Self) -> Self;
    fn min(a: Self, b: Self) -> Self;
    fn max(a: Self, b: Self) -> Self;
    fn seq(init: Self, step: Self, i: usize) -> Self;
    fn as_f64(self) -> f64;
}

macro_rules! test_int {
    ($($t:ty),*) => {$(
        impl TestNum for $t {
            const FLOAT: bool = false;
            fn random(r: &mut Rng) -> Self { r.next() as $t }
            fn small(v: u64) -> Self { v as $t }
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn min(a: Self, b: Self) -> Self { Ord::min(a, b) }
            fn max(a: Self, b: Self) -> Self { Ord::max(a, b) }
            fn seq(init: Self, step: Self, i: usize) -> Self { init.wrapping_add((i as $t).wrapping_mul(step)) }
            fn as_f64(self) -> f64 { self as f64 }
        }
    )*};
}
macro_rules! test_float {
    ($($t:ty),*) => {$(
        impl TestNum for $t {
            const FLOAT: bool = true;
            fn random(r: &mut Rng) -> Self { (r.unit() * 2.0 - 1.0) as $t }
            fn small(v: u64) -> Self { v as $t }
            fn add(a: Self, b: Self) -> Self { a + b }
            fn min(a: Self, b: Self) -> Self { <$t>::min(a, b) }
            fn max(a: Self, b: Self) -> Self { <$t>::max(a, b) }
            fn seq(init: Self, step: Self, i: usize) -> Self { init + (i as $t) * step }
            fn as_f64(self) -> f64 { self as f64 }
        }
    )*};
}
test_int!(u32, i32, u64, i64);
test_float!(f32, f64);

fn same<T: TestNum>(a: T, b: T) -> bool {
    if T::FLOAT {
        a.as_f64().to_bits() == b.as_f64().to_bits()
    } else {
        a == b
    }
}

// ---------------------------------------------------------------------------
// Sequence
// ---------------------------------------------------------------------------

fn check_sequence<T: TestNum>(n: usize, init: T, step: T) {
    let (s, policy) = stream_and_policy();
    let mut out = DevVec::<T>::zeroed(n, &s);
    sequence::sequence(out.span_mut(), init, step, &policy).unwrap();
    let got = out.download(&s);
    for (i, g) in got.iter().enumerate() {
        let want = T::seq(init, step, i);
        assert!(
            same(*g, want),
            "{}: element {i} of {n}: {g:?} != {want:?}",
            std::any::type_name::<T>()
        );
    }
}

#[test]
fn sequence_every_type() {
    rmm_testing::require_gpu!();
    for n in [0usize, 1, 2, 1000, (1 << 20) + 3]
        .into_iter()
        .filter(|&n| size_ok(n))
    {
        check_sequence::<u32>(n, 7, 3);
        check_sequence::<i32>(n, -50, -2);
        check_sequence::<u64>(n, 1 << 40, 5);
        check_sequence::<i64>(n, -(1 << 40), 9);
        check_sequence::<f32>(n, -1.5, 0.25);
        check_sequence::<f64>(n, 2.0, -0.125);
    }
    // Integer sequences wrap.
    check_sequence::<u32>(100, u32::MAX - 10, 1);
}

// ---------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------

fn check_reductions<T: TestNum>(n: usize, seed: u64) {
    let mut r = Rng(seed);
    let host: Vec<T> = (0..n).map(|_| T::random(&mut r)).collect();
    let (s, policy) = stream_and_policy();
    let dev = DevVec::upload(&host, &s);
    // Spans that start 0, 1 and 3 elements in: the kernels fold 16-byte
    // vectors, so these give every head the vector path can see.
    for off in [0usize, 1, 3].into_iter().filter(|&o| o == 0 || o < n) {
        let span = dev.span().subspan(off..n).unwrap();
        check_reductions_of(&host[off..], span, &s, &policy);
    }
}

/// The host-value and the device-result reductions of `span` (holding
/// `host`) against rayon's.
fn check_reductions_of<T: TestNum>(
    host: &[T],
    span: DeviceSpan<'_, T>,
    s: &rmm::CudaStream,
    policy: &ExecPolicy,
) {
    let n = host.len();
    let sum = reduce::sum(span, policy).unwrap();
    let min = reduce::min(span, policy).unwrap();
    let max = reduce::max(span, policy).unwrap();
    let mut out = DevVec::<T>::zeroed(3, s);
    let mut outs = out.span_mut();
    reduce::sum_into(span, outs.subspan_mut(0..1).unwrap(), policy).unwrap();
    let name = std::any::type_name::<T>();
    if n == 0 {
        assert!(same(sum, T::ZERO));
        assert!(same(out.download(s)[0], T::ZERO), "{name}: sum_into of nothing");
        assert!(min.is_none() && max.is_none());
        return;
    }
    reduce::min_into(span, outs.subspan_mut(1..2).unwrap(), policy).unwrap();
    reduce::max_into(span, outs.subspan_mut(2..3).unwrap(), policy).unwrap();
    let on_device = out.download(s);
    let want_min = host.par_iter().copied().reduce_with(T::min).unwrap();
    let want_max = host.par_iter().copied().reduce_with(T::max).unwrap();
    assert!(
        same(min.unwrap(), want_min) && same(on_device[1], want_min),
        "{name} n={n}: min {min:?} (into: {:?}) != {want_min:?}",
        on_device[1]
    );
    assert!(
        same(max.unwrap(), want_max) && same(on_device[2], want_max),
        "{name} n={n}: max {max:?} (into: {:?}) != {want_max:?}",
        on_device[2]
    );
    assert!(
        same(on_device[0], sum),
        "{name} n={n}: sum_into {:?} != sum {sum:?}",
        on_device[0]
    );
    if T::FLOAT {
        // Exact reference in f64 (plenty for |x| < 1 and n <= 2^26), compared
        // with a tolerance that covers f32 rounding in a tree order.
        let want: f64 = host.par_iter().map(|x| x.as_f64()).sum();
        let tol = if std::mem::size_of::<T>() == 4 { 1e-3 } else { 1e-9 };
        let abs: f64 = host.par_iter().map(|x| x.as_f64().abs()).sum();
        assert!(
            (sum.as_f64() - want).abs() <= tol * abs.max(1.0),
            "{name} n={n}: sum {sum:?} vs {want}"
        );
    } else {
        let want = host.par_iter().copied().reduce(|| T::ZERO, T::add);
        assert_eq!(sum, want, "{name} n={n}: sum");
    }
}

#[test]
fn reductions_every_type_and_size() {
    rmm_testing::require_gpu!();
    for (i, n) in [0usize, 1, 2, 3, 255, 256, 257, 1000, 12_345, (1 << 20) + 7]
        .into_iter()
        .enumerate()
        .filter(|&(_, n)| size_ok(n))
    {
        let seed = 100 + i as u64;
        check_reductions::<u32>(n, seed);
        check_reductions::<i32>(n, seed);
        check_reductions::<u64>(n, seed);
        check_reductions::<i64>(n, seed);
        check_reductions::<f32>(n, seed);
        check_reductions::<f64>(n, seed);
    }
}

#[test]
fn reductions_large() {
    rmm_testing::require_gpu!();
    check_reductions::<u32>(1 << 26, 7);
    check_reductions::<f32>(1 << 26, 8);
    check_reductions::<i64>((1 << 24) + 1, 9);
    check_reductions::<f64>((1 << 24) + 1, 10);
}

#[test]
fn float_sum_of_small_integers_is_exact() {
    rmm_testing::require_gpu!();
    let host: Vec<f32> = (0..1_000_003u64).map(|i| (i % 5) as f32).collect();
    let want: f64 = host.iter().map(|&x| x as f64).sum();
    let (s, policy) = stream_and_policy();
    let dev = DevVec::upload(&host, &s);
    let got = reduce::sum(dev.span(), &policy).unwrap();
    assert_relative_eq!(got as f64, want, max_relative = 0.0);
}

#[test]
fn float_min_max_ignore_nan() {
    rmm_testing::require_gpu!();
    let (s, policy) = stream_and_policy();
    let mut host = vec![f32::NAN; 5000];
    host[1234] = -3.0;
    host[4321] = 8.5;
    host[4999] = 1.0;
    let dev = DevVec::upload(&host, &s);
    assert_eq!(reduce::min(dev.span(), &policy).unwrap(), Some(-3.0));
    assert_eq!(reduce::max(dev.span(), &policy).unwrap(), Some(8.5));
    let all_nan = DevVec::upload(&[f64::NAN; 300], &s);
    assert!(reduce::min(all_nan.span(), &policy).unwrap().unwrap().is_nan());
    assert!(reduce::max(all_nan.span(), &policy).unwrap().unwrap().is_nan());
    let inf = DevVec::upload(&[f64::INFINITY, f64::NEG_INFINITY, 0.0], &s);
    assert_eq!(reduce::min(inf.span(), &policy).unwrap(), Some(f64::NEG_INFINITY));
    assert_eq!(reduce::max(inf.span(), &policy).unwrap(), Some(f64::INFINITY));
}

#[test]
fn integer_sums_wrap() {
    rmm_testing::require_gpu!();
    let (s, policy) = stream_and_policy();
    let host = vec![u32::MAX; 1001];
    let dev = DevVec::upload(&host, &s);
    let want = host.iter().fold(0u32, |a, &b| a.wrapping_add(b));
    assert_eq!(reduce::sum(dev.span(), &policy).unwrap(), want);
    let neg = DevVec::upload(&[i64::MIN; 3], &s);
    assert_eq!(reduce::min(neg.span(), &policy).unwrap(), Some(i64::MIN));
    assert_eq!(reduce::sum(neg.span(), &policy).unwrap(), i64::MIN);
}

// ---------------------------------------------------------------------------
// Exclusive and inclusive scans (single pass, decoupled look-back)
// ---------------------------------------------------------------------------

fn cpu_scan<T: TestNum>(v: &[T], inclusive: bool) -> Vec<T> {
    let mut acc = T::ZERO;
    v.iter()
        .map(|&x| {
            let before = acc;
            acc = T::add(acc, x);
            if inclusive {
                acc
            } else {
                before
            }
        })
        .collect()
}

fn cpu_exclusive<T: TestNum>(v: &[T]) -> Vec<T> {
    cpu_scan(v, false)
}

fn check_scan<T: TestNum>(n: usize, seed: u64, in_place: bool) {
    check_scan_mode::<T>(n, seed, in_place, false);
    check_scan_mode::<T>(n, seed + 1000, in_place, true);
}

fn check_scan_mode<T: TestNum>(n: usize, seed: u64, in_place: bool, inclusive: bool) {
    let mut r = Rng(seed);
    // Floats: small integers, so every partial sum is exact in f32 (sums stay
    // below 2^24 for n <= 2^22 + 5) and the order of additions does not matter.
    let host: Vec<T> = (0..n)
        .map(|_| {
            if T::FLOAT {
                T::small(r.next() % 3)
            } else {
                T::random(&mut r)
            }
        })
        .collect();
    let want = cpu_scan(&host, inclusive);
    let (s, policy) = stream_and_policy();
    let got = if in_place {
        let mut d = DevVec::upload(&host, &s);
        if inclusive {
            scan::inclusive_scan_in_place(d.span_mut(), &policy).unwrap();
        } else {
            scan::exclusive_scan_in_place(d.span_mut(), &policy).unwrap();
        }
        d.download(&s)
    } else {
        let input = DevVec::upload(&host, &s);
        let mut out = DevVec::<T>::zeroed(n, &s);
        if inclusive {
            scan::inclusive_scan(input.span(), out.span_mut(), &policy).unwrap();
        } else {
            scan::exclusive_scan(input.span(), out.span_mut(), &policy).unwrap();
        }
        assert!(
            input.download(&s).iter().zip(&host).all(|(a, b)| same(*a, *b)),
            "input changed"
        );
        out.download(&s)
    };
    let name = std::any::type_name::<T>();
    for i in 0..n {
        assert!(
            same(got[i], want[i]),
            "{name} n={n} in_place={in_place} inclusive={inclusive}: element {i}: {:?} != {:?}",
            got[i],
            want[i]
        );
    }
}

#[test]
fn scans_every_type_and_size() {
    rmm_testing::require_gpu!();
    for (i, n) in [
        0usize,
        1,
        2,
        7,
        2047,
        2048,
        2049,
        4095,
        4096,
        4097,
        3583,
        3584,
        3585,
        8191,
        8192,
        8193,
        (1 << 16) - 1,
        (1 << 16) + 1,
        100_003,
        (1 << 22) + 5,
    ]
    .into_iter()
    .enumerate()
    .filter(|&(_, n)| size_ok(n))
    {
        let seed = 500 + i as u64;
        for in_place in [false, true] {
            check_scan::<u32>(n, seed, in_place);
            check_scan::<i32>(n, seed, in_place);
            check_scan::<u64>(n, seed, in_place);
            check_scan::<i64>(n, seed, in_place);
            check_scan::<f32>(n, seed, in_place);
            check_scan::<f64>(n, seed, in_place);
        }
    }
}

/// Scans `host[skip_in..][..n]` from an upload of all of `host` into a
/// span `skip_out` elements into a fresh allocation, for every `skip_in`
/// in 0..3 and `skip_out` in 0..2, and compares with the CPU scan.
fn check_misaligned_scan<T: TestNum>(host: &[T], n: usize, inclusive: bool) {
    let (s, policy) = stream_and_policy();
    let input = DevVec::upload(host, &s);
    let name = std::any::type_name::<T>();
    for skip_in in 0..3 {
        for skip_out in [0, 1] {
            let want = cpu_scan(&host[skip_in..skip_in + n], inclusive);
            let mut out = DevVec::<T>::zeroed(n + 1, &s);
            let span = input.span().subspan(skip_in..skip_in + n).unwrap();
            let mut whole = out.span_mut();
            let dst = whole.subspan_mut(skip_out..skip_out + n).unwrap();
            if inclusive {
                scan::inclusive_scan(span, dst, &policy).unwrap();
            } else {
                scan::exclusive_scan(span, dst, &policy).unwrap();
            }
            let got = out.download(&s);
            let bad = (0..n).find(|&i| !same(got[skip_out + i], want[i]));
            assert!(
                bad.is_none(),
                "{name} skip_in={skip_in} skip_out={skip_out} inclusive={inclusive}: element {bad:?} differs"
            );
        }
    }
}

#[test]
fn scans_of_misaligned_spans_match_aligned_ones() {
    // Whole tiles of 16-byte aligned arrays move as 16-byte vectors, others
    // element by element: spans that start 1 to 3 elements into an
    // allocation take the second path, for the input, the output or both.
    rmm_testing::require_gpu!();
    let n = 3 * 8192 + 17;
    let mut r = Rng(4242);
    let host: Vec<u32> = (0..n + 3).map(|_| r.next() as u32).collect();
    let host64: Vec<u64> = (0..n + 3).map(|_| r.next()).collect();
    check_misaligned_scan(&host, n, false);
    check_misaligned_scan(&host64, n, true);
}

#[test]
fn scans_of_equal_values_wrap() {
    rmm_testing::require_gpu!();
    let (s, policy) = stream_and_policy();
    let n = (1 << 20) + 1;
    let host = vec![u32::MAX; n];
    let input = DevVec::upload(&host, &s);
    let mut out = DevVec::<u32>::zeroed(n, &s);
    scan::inclusive_scan(input.span(), out.span_mut(), &policy).unwrap();
    let got = out.download(&s);
    assert!(got
        .par_iter()
        .enumerate()
        .all(|(i, &v)| v == (i as u32 + 1).wrapping_neg()));
    let host = vec![i64::MIN; n];
    let mut d = DevVec::upload(&host, &s);
    scan::exclusive_scan_in_place(d.span_mut(), &policy).unwrap();
    let got = d.download(&s);
    assert!(got
        .par_iter()
        .enumerate()
        .all(|(i, &v)| v == if i % 2 == 0 { 0 } else { i64::MIN }));
}

#[test]
fn exclusive_scan_large() {
    rmm_testing::require_gpu!();
    check_scan::<u32>(1 << 26, 1, false);
    check_scan::<u64>((1 << 25) + 3, 2, true);
    check_scan_mode::<f64>((1 << 24) - 1, 3, false, true);
}

#[test]
fn exclusive_scan_random_floats_approximately() {
    rmm_testing::require_gpu!();
    let mut r = Rng(77);
    let host: Vec<f64> = (0..300_001).map(|_| r.unit()).collect();
    let want = cpu_exclusive(&host);
    let (s, policy) = stream_and_policy();
    let input = DevVec::upload(&host, &s);
    let mut out = DevVec::<f64>::zeroed(host.len(), &s);
    scan::exclusive_scan(input.span(), out.span_mut(), &policy).unwrap();
    for (g, w) in out.download(&s).iter().zip(&want) {
        assert_relative_eq!(*g, *w, max_relative = 1e-9, epsilon = 1e-9);
    }
    let want = cpu_scan(&host, true);
    scan::inclusive_scan(input.span(), out.span_mut(), &policy).unwrap();
    for (g, w) in out.download(&s).iter().zip(&want) {
        assert_relative_eq!(*g, *w, max_relative = 1e-9, epsilon = 1e-9);
    }
}

#[test]
fn algorithms_on_policy_scratch_over_a_stream_ordered_pool() {
    rmm_testing::require_gpu!();
    let s = rmm::CudaStream::new().unwrap();
    let mr = rmm::mr::CudaAsyncMemoryResource::new().unwrap();
    let policy = ExecPolicy::new(s.view(), mr);
    for _ in 0..3 {
        let mut a = policy.scratch::<u64>(100_001).unwrap();
        let mut b = policy.scratch::<u64>(100_001).unwrap();
        sequence::sequence(a.as_span_mut(), 5u64, 3, &policy).unwrap();
        scan::exclusive_scan(a.as_span(), b.as_span_mut(), &policy).unwrap();
        let n = 100_001u64;
        // sum of 5 + 3i for i < n
        assert_eq!(
            reduce::sum(a.as_span(), &policy).unwrap(),
            5 * n + 3 * n * (n - 1) / 2
        );
        // b[n-1] = sum of the first n-1 terms
        let m = n - 1;
        assert_eq!(
            reduce::max(b.as_span(), &policy).unwrap(),
            Some(5 * m + 3 * m * (m - 1) / 2)
        );
        assert_eq!(reduce::min(b.as_span(), &policy).unwrap(), Some(0));
        // The scratch frees stream-ordered on drop; the next round reuses the pool.
    }
    s.synchronize().unwrap();
}

// ---------------------------------------------------------------------------
// CPU only: argument checks (fail before any GPU call) and the PTX
// ---------------------------------------------------------------------------

fn fake_span<T>(addr: u64, len: usize) -> DeviceSpan<'static, T> {
    // SAFETY: never dereferenced: the calls below fail on their arguments first.
    unsafe { DeviceSpan::from_raw_parts(DevicePtr::new(addr), len) }
}
fn fake_span_mut<T>(addr: u64, len: usize) -> DeviceSpanMut<'static, T> {
    // SAFETY: as `fake_span`.
    unsafe { DeviceSpanMut::from_raw_parts(DevicePtr::new(addr), len) }
}

#[test]
fn scan_rejects_bad_arguments_without_a_gpu() {
    let policy = ExecPolicy::new(CudaStreamView::DEFAULT, SimulatedMemoryResource::new(1 << 20));
    let e =
        scan::exclusive_scan(fake_span::<u32>(1 << 40, 10), fake_span_mut(1 << 41, 11), &policy).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = scan::exclusive_scan(
        fake_span::<u64>(1 << 40, 10),
        fake_span_mut((1 << 40) + 8, 10),
        &policy,
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e =
        scan::inclusive_scan(fake_span::<i64>(1 << 40, 3), fake_span_mut(1 << 41, 2), &policy).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    let e = scan::inclusive_scan(
        fake_span::<f64>((1 << 40) + 8, 10),
        fake_span_mut(1 << 40, 10),
        &policy,
    )
    .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    // Empty work returns before touching the device.
    scan::exclusive_scan(fake_span::<f32>(0, 0), fake_span_mut(0, 0), &policy).unwrap();
    scan::exclusive_scan_in_place(fake_span_mut::<i32>(0, 0), &policy).unwrap();
    scan::inclusive_scan(fake_span::<u64>(0, 0), fake_span_mut(0, 0), &policy).unwrap();
    scan::inclusive_scan_in_place(fake_span_mut::<f64>(0, 0), &policy).unwrap();
    sequence::sequence(fake_span_mut::<f64>(0, 0), 1.0, 1.0, &policy).unwrap();
    assert_eq!(reduce::sum(fake_span::<u64>(0, 0), &policy).unwrap(), 0);
    assert_eq!(reduce::min(fake_span::<f32>(0, 0), &policy).unwrap(), None);
    assert_eq!(reduce::max(fake_span::<i32>(0, 0), &policy).unwrap(), None);
    // The device-result reductions: an output of no element, and the
    // extremes of nothing, are refused before touching the device.
    for e in [
        reduce::sum_into(fake_span::<u32>(1 << 40, 4), fake_span_mut(1 << 41, 0), &policy).unwrap_err(),
        reduce::min_into(fake_span::<f32>(0, 0), fake_span_mut(1 << 41, 1), &policy).unwrap_err(),
        reduce::max_into(fake_span::<i64>(0, 0), fake_span_mut(1 << 41, 1), &policy).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    }
}

/// The body of each `.entry` in the PTX, by kernel name.
fn entries(ptx: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = ptx;
    while let Some(at) = rest.find(".entry ") {
        let after = &rest[at + 7..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let end = after.find("\n}").map(|e| e + 2).unwrap_or(after.len());
        out.push((name, after[..end].to_string()));
        rest = &after[end..];
    }
    out
}

/// The launchers name kernels only through `kernel_abi`; the kernels define
/// them by their `#[no_mangle]` function names. The built PTX must declare
/// exactly `kernel_abi::ALL`: a kernel renamed or added on one side only
/// fails here.
#[test]
fn ptx_entries_are_exactly_the_kernel_abi_names() {
    use rmm_suite::kernel_abi;
    let ptx = rmm_suite::kernels::PTX;
    let names: Vec<String> = entries(ptx).into_iter().map(|(n, _)| n).collect();
    for name in kernel_abi::ALL {
        assert!(
            names.iter().any(|n| n == name),
            "kernel_abi names {name}, the PTX has no such .entry"
        );
    }
    for name in &names {
        assert!(
            kernel_abi::ALL.contains(&name.as_str()),
            "the PTX has .entry {name}, which kernel_abi does not list"
        );
    }
    assert_eq!(
        names.len(),
        kernel_abi::ALL.len(),
        "duplicate .entry in {names:?}"
    );
}

/// Each numeric type's launcher table is its own type's kernels.
#[test]
fn numeric_launchers_use_their_own_types_kernels() {
    use rmm_suite::kernel_abi::NumericKernels;
    fn check<T: Numeric>(suffix: &str) {
        let k: NumericKernels = T::KERNELS;
        for name in k.names() {
            assert!(name.ends_with(&format!("_{suffix}")), "{name} for {suffix}");
        }
    }
    check::<u32>("u32");
    check::<i32>("i32");
    check::<u64>("u64");
    check::<i64>("i64");
    check::<f32>("f32");
    check::<f64>("f64");
}

#[test]
fn ptx_kernels_use_no_local_memory_and_declare_shared_once() {
    for (name, body) in entries(rmm_suite::kernels::PTX) {
        assert!(
            !body.contains(".local"),
            "{name} uses local memory (register spill or stack array)"
        );
        let mut declared: Vec<&str> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".shared .align 16 .b8 "))
            .map(|l| l.split('[').next().unwrap_or(""))
            .collect();
        let total = declared.len();
        declared.sort_unstable();
        declared.dedup();
        assert_eq!(total, declared.len(), "{name} declares a shared array twice");
    }
}

/// Shared memory is addressed as such (`ld.shared`/`st.shared`), not
/// through generic loads and stores: `shared_bytes!` assumes its address is
/// shared, and `build.rs`'s LLVM pipeline infers the address space before
/// the standard pipeline drops that assumption (docs/toolchain.md). Every
/// entry that declares a shared array writes it, and the onesweep and scan
/// entries read it, with shared instructions.
#[test]
fn ptx_shared_arrays_are_addressed_as_shared() {
    for (name, body) in entries(rmm_suite::kernels::PTX) {
        if !body.contains(".shared .align 16 .b8 ") {
            continue;
        }
        assert!(
            body.contains("st.shared."),
            "{name} writes shared memory only generically"
        );
        if name.contains("onesweep") || name.starts_with("rmm_scan_") {
            assert!(
                body.contains("ld.shared."),
                "{name} reads shared memory only generically"
            );
        }
    }
}

/// Every entry carries exactly the launch bounds `kernel_abi::launch_bounds`
/// gives it (`.maxntid` and `.minnctapersm` between its parameters and its
/// body), and no other entry has any: the register budgets the scan and
/// the sort were measured with.
#[test]
fn ptx_launch_bounds_match_kernel_abi() {
    use rmm_suite::kernel_abi;
    for (name, body) in entries(rmm_suite::kernels::PTX) {
        let head = &body[..body.find('{').expect("entry body")];
        let value = |directive: &str| -> Option<u32> {
            let at = head.find(directive)?;
            let digits: String = head[at + directive.len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            Some(digits.parse().expect("a number after the directive"))
        };
        let got = match (value(".maxntid"), value(".minnctapersm")) {
            (None, None) => None,
            (Some(t), Some(b)) => Some((t, b)),
            other => panic!("{name}: partial launch bounds {other:?}"),
        };
        assert_eq!(got, kernel_abi::launch_bounds(&name), "launch bounds of {name}");
    }
}

#[test]
fn ptx_radix_kernels_use_warp_votes_and_shared_memory() {
    let all = entries(rmm_suite::kernels::PTX);
    let body = |n: &str| all.iter().find(|(k, _)| k == n).map(|(_, b)| b.clone()).unwrap();
    for k in [
        "rmm_radix_onesweep_32",
        "rmm_radix_onesweep_plain_32",
        "rmm_radix_onesweep_pairs_64",
    ] {
        let b = body(k);
        assert!(b.contains("vote.sync.ballot.b32"), "{k}");
        assert!(b.contains("bar.warp.sync"), "{k}");
        assert!(b.contains(".shared .align 16 .b8 rmm_radix_keys["), "{k}");
    }
    for k in [
        "rmm_radix_onesweep_32",
        "rmm_radix_onesweep_64",
        "rmm_radix_onesweep_plain_32",
        "rmm_radix_onesweep_plain_64",
    ] {
        // The look-back words are read and written as single-copy atomics.
        let b = body(k);
        assert!(b.contains("ld.relaxed.gpu.global.u32"), "{k}");
        assert!(b.contains("st.relaxed.gpu.global.u32"), "{k}");
        assert!(b.contains("atom.relaxed.gpu.global.add.u32"), "{k}");
    }
    for k in [
        "rmm_radix_histogram_32",
        "rmm_radix_histogram_64",
        "rmm_radix_histogram_plain_32",
        "rmm_radix_histogram_plain_64",
    ] {
        assert!(body(k).contains("red.shared.add.u32"), "{k}");
    }
    // The plain kernels' digit is a shift and a mask: they never read their
    // `mode` parameter (the 6th of a onesweep, the 3rd of a histogram),
    // while the general ones do.
    for (k, mode) in [("onesweep", 5), ("histogram", 2)] {
        for w in ["32", "64"] {
            let general = format!("rmm_radix_{k}_{w}");
            let plain = format!("rmm_radix_{k}_plain_{w}");
            assert!(
                body(&general).contains(&format!("[{general}_param_{mode}]")),
                "{general}"
            );
            assert!(
                !body(&plain).contains(&format!("[{plain}_param_{mode}]")),
                "{plain}"
            );
        }
    }
    assert!(body("rmm_reduce_sum_f64").contains("shfl.sync.bfly.b32"));
}

/// The parameter list of `.entry name` as `p` (pointer), `8` or `4` (bytes).
fn entry_params(ptx: &str, name: &str) -> Vec<String> {
    let head = ptx
        .split(&format!(".entry {name}("))
        .nth(1)
        .unwrap_or_else(|| panic!("no .entry {name}"));
    let list = &head[..head.find(')').unwrap()];
    list.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(".param"))
        .map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            if words.get(2) == Some(&".ptr") {
                "p".to_string()
            } else if words[1].ends_with("64") {
                "8".to_string()
            } else {
                "4".to_string()
            }
        })
        .collect()
}

#[test]
fn ptx_kernel_parameters_match_the_host_launchers() {
    let ptx = rmm_suite::kernels::PTX;
    let check = |name: &str, want: &str| {
        let got = entry_params(ptx, name).join(" ");
        assert_eq!(got, want, "parameters of {name}");
    };
    for w in ["32", "64"] {
        // (keys, n, mode: u32, hist)
        check(&format!("rmm_radix_histogram_{w}"), "p 8 4 p");
        check(&format!("rmm_radix_histogram_plain_{w}"), "p 8 4 p");
        // (keys_in, keys_out, n, first_tile, shift: u32, mode: u32, state, bases_in, bases_out)
        check(&format!("rmm_radix_onesweep_{w}"), "p p 8 8 4 4 p p p");
        check(&format!("rmm_radix_onesweep_plain_{w}"), "p p 8 8 4 4 p p p");
        // (keys_in, keys_out, vals_in, vals_out, n, first_tile, shift, mode, state, bases_in, bases_out)
        check(&format!("rmm_radix_onesweep_pairs_{w}"), "p p p p 8 8 4 4 p p p");
    }
    // (hist, bases, stride)
    check("rmm_radix_offsets", "p p 8");
    for (t, w) in [
        ("u32", "4"),
        ("i32", "4"),
        ("f32", "4"),
        ("u64", "8"),
        ("i64", "8"),
        ("f64", "8"),
    ] {
        check(&format!("rmm_sequence_{t}"), &format!("p 8 {w} {w}"));
        for op in ["sum", "min", "max"] {
            check(&format!("rmm_reduce_{op}_{t}"), "p 8 p");
        }
        // (input, output, n, state, mode)
        check(&format!("rmm_scan_{t}"), "p p 8 p 4");
    }
}
