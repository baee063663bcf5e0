//! The radix sort on a real GPU against stable CPU sorts (rayon), for every
//! key type, both orders, keys alone and key-value pairs; plus the
//! documented float order, out-of-memory behaviour and argument checks.

use std::cmp::Ordering;

use crate::algo_util::{size_ok, stream_and_policy, DevVec, Rng};
use rayon::prelude::*;
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{CudaMemoryResource, LimitingAdaptor, SimulatedMemoryResource};
use rmm::{CudaStreamView, DevicePtr, DeviceSpan, DeviceSpanMut, Error};
use rmm_suite::sort::{sort_keys, sort_keys_copy, sort_pairs, sort_pairs_copy, Order, RadixKey};

/// Test-side view of a key type: generation, the documented order, bits.
trait TestKey: RadixKey + PartialEq + std::fmt::Debug + Default {
    fn random(r: &mut Rng) -> Self;
    fn few(r: &mut Rng, distinct: u64) -> Self;
    fn cmp_key(a: &Self, b: &Self) -> Ordering;
    fn bits(self) -> u64;
}

macro_rules! test_int_key {
    ($($t:ty),*) => {$(
        impl TestKey for $t {
            fn random(r: &mut Rng) -> Self { r.next() as $t }
            fn few(r: &mut Rng, distinct: u64) -> Self {
                // Spread the few values over the whole range (sign included).
                ((r.next() % distinct).wrapping_mul(0x9E37_79B9_7F4A_7C15)) as $t
            }
            fn cmp_key(a: &Self, b: &Self) -> Ordering { a.cmp(b) }
            fn bits(self) -> u64 { self as u64 }
        }
    )*};
}
test_int_key!(u32, i32, u64, i64);

impl TestKey for f32 {
    fn random(r: &mut Rng) -> Self {
        r.normal() as f32
    }
    fn few(r: &mut Rng, distinct: u64) -> Self {
        (r.next() % distinct) as f32 - (distinct / 2) as f32
    }
    fn cmp_key(a: &Self, b: &Self) -> Ordering {
        a.total_cmp(b)
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
}
impl TestKey for f64 {
    fn random(r: &mut Rng) -> Self {
        r.normal()
    }
    fn few(r: &mut Rng, distinct: u64) -> Self {
        ((r.next() % distinct) as f64 - (distinct / 2) as f64) * 0.5
    }
    fn cmp_key(a: &Self, b: &Self) -> Ordering {
        a.total_cmp(b)
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
}

fn ordering<K: TestKey>(order: Order) -> impl Fn(&K, &K) -> Ordering + Sync {
    move |a: &K, b: &K| match order {
        Order::Ascending => K::cmp_key(a, b),
        Order::Descending => K::cmp_key(b, a),
    }
}

fn assert_same_keys<K: TestKey>(got: &[K], want: &[K], what: &str) {
    assert_eq!(got.len(), want.len());
    if let Some(i) = (0..got.len()).find(|&i| got[i].bits() != want[i].bits()) {
        panic!(
            "{what} ({}): first difference at {i} of {}: got {:?}, want {:?}",
            std::any::type_name::<K>(),
            got.len(),
            got[i],
            want[i]
        );
    }
}

fn check_keys<K: TestKey>(host: &[K], order: Order) {
    let mut want = host.to_vec();
    want.par_sort_by(ordering::<K>(order));
    let (s, policy) = stream_and_policy();
    // In place.
    let mut d = DevVec::upload(host, &s);
    sort_keys(d.span_mut(), order, &policy).unwrap();
    assert_same_keys(
        &d.download(&s),
        &want,
        &format!("sort_keys {order:?} n={}", host.len()),
    );
    // Out of place: the input stays as it was.
    let input = DevVec::upload(host, &s);
    let mut out = DevVec::<K>::zeroed(host.len(), &s);
    sort_keys_copy(input.span(), out.span_mut(), order, &policy).unwrap();
    assert_same_keys(
        &out.download(&s),
        &want,
        &format!("sort_keys_copy {order:?} n={}", host.len()),
    );
    assert_same_keys(&input.download(&s), host, "sort_keys_copy input");
}

fn check_pairs<K: TestKey>(keys: &[K], order: Order) {
    let n = keys.len();
    let values: Vec<u32> = (0..n as u32).collect();
    let mut want: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    let cmp = ordering::<K>(order);
    // Stable: equal keys keep the input order of their values.
    want.par_sort_by(|a, b| cmp(&a.0, &b.0));
    let want_k: Vec<K> = want.iter().map(|p| p.0).collect();
    let want_v: Vec<u32> = want.iter().map(|p| p.1).collect();
    let (s, policy) = stream_and_policy();
    let mut dk = DevVec::upload(keys, &s);
    let mut dv = DevVec::upload(&values, &s);
    sort_pairs(dk.span_mut(), dv.span_mut(), order, &policy).unwrap();
    let what = format!("sort_pairs {order:?} n={n}");
    assert_same_keys(&dk.download(&s), &want_k, &what);
    let got_v = dv.download(&s);
    if let Some(i) = (0..n).find(|&i| got_v[i] != want_v[i]) {
        panic!(
            "{what}: value {i}: got {}, want {} (stability)",
            got_v[i], want_v[i]
        );
    }
    // Out of place.
    let ki = DevVec::upload(keys, &s);
    let vi = DevVec::upload(&values, &s);
    let mut ko = DevVec::<K>::zeroed(n, &s);
    let mut vo = DevVec::<u32>::zeroed(n, &s);
    sort_pairs_copy(ki.span(), vi.span(), ko.span_mut(), vo.span_mut(), order, &policy).unwrap();
    assert_same_keys(&ko.download(&s), &want_k, "sort_pairs_copy keys");
    assert_eq!(vo.download(&s), want_v, "sort_pairs_copy values");
    assert_same_keys(&ki.download(&s), keys, "sort_pairs_copy input keys");
    assert_eq!(vi.download(&s), values, "sort_pairs_copy input values");
}

/// Around every tile size (2048, 4096, 6144 keys) and block boundary.
const SIZES: [usize; 20] = [
    0,
    1,
    2,
    3,
    31,
    255,
    2047,
    2048,
    2049,
    4095,
    4096,
    4097,
    6143,
    6144,
    6145,
    8193,
    12_289,
    100_003,
    (1 << 20) + 17,
    (1 << 22) + 1,
];

fn every_size<K: TestKey>(seed: u64) {
    for (i, &n) in SIZES.iter().enumerate().filter(|(_, &n)| size_ok(n)) {
        let mut r = Rng(seed + i as u64);
        let random: Vec<K> = (0..n).map(|_| K::random(&mut r)).collect();
        let dups: Vec<K> = (0..n).map(|_| K::few(&mut r, 37)).collect();
        for order in [Order::Ascending, Order::Descending] {
            check_keys(&random, order);
            check_keys(&dups, order);
            check_pairs(&dups, order);
            if n <= 5000 {
                check_pairs(&random, order);
            }
        }
    }
}

/// Every sort kernel (32/64-bit keys, with and without values, both
/// orders) once over 13 000 keys: several tiles of each kernel, the last one
/// partial. Unsigned keys cover both kernel sets of their width: ascending
/// runs the plain kernels, descending the general ones. Few launches, so
/// racecheck runs them in minutes (`sort each_kernel_once`;
/// scripts/gpu-verify.sh racecheck).
fn each_kernel_once<K: TestKey>(seed: u64, pairs: bool) {
    let mut r = Rng(seed);
    let keys: Vec<K> = (0..13_000).map(|_| K::random(&mut r)).collect();
    for order in [Order::Ascending, Order::Descending] {
        if pairs {
            check_pairs(&keys, order);
        } else {
            check_keys(&keys, order);
        }
    }
}

macro_rules! each_kernel_once {
    ($($keys:ident, $pairs:ident: $t:ty, $seed:expr;)*) => {$(
        #[test]
        fn $keys() {
            rmm_testing::require_gpu!();
            each_kernel_once::<$t>($seed, false);
        }
        #[test]
        fn $pairs() {
            rmm_testing::require_gpu!();
            each_kernel_once::<$t>($seed, true);
        }
    )*};
}

each_kernel_once! {
    each_kernel_once_keys_u32, each_kernel_once_pairs_u32: u32, 11;
    each_kernel_once_keys_i32, each_kernel_once_pairs_i32: i32, 12;
    each_kernel_once_keys_f32, each_kernel_once_pairs_f32: f32, 13;
    each_kernel_once_keys_u64, each_kernel_once_pairs_u64: u64, 14;
    each_kernel_once_keys_i64, each_kernel_once_pairs_i64: i64, 15;
    each_kernel_once_keys_f64, each_kernel_once_pairs_f64: f64, 16;
}

#[test]
fn sort_u32() {
    rmm_testing::require_gpu!();
    every_size::<u32>(1);
}
#[test]
fn sort_i32() {
    rmm_testing::require_gpu!();
    every_size::<i32>(2);
}
#[test]
fn sort_f32() {
    rmm_testing::require_gpu!();
    every_size::<f32>(3);
}
#[test]
fn sort_u64() {
    rmm_testing::require_gpu!();
    every_size::<u64>(4);
}
#[test]
fn sort_i64() {
    rmm_testing::require_gpu!();
    every_size::<i64>(5);
}
#[test]
fn sort_f64() {
    rmm_testing::require_gpu!();
    every_size::<f64>(6);
}

#[test]
fn sort_large() {
    rmm_testing::require_gpu!();
    let n = 1 << 26;
    let mut r = Rng(99);
    let k32: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
    check_keys(&k32, Order::Ascending);
    let f: Vec<f32> = (0..n).map(|_| r.normal() as f32).collect();
    check_keys(&f, Order::Descending);
    let k64: Vec<u64> = (0..n).map(|_| r.next()).collect();
    check_keys(&k64, Order::Ascending);
    let dup: Vec<i32> = (0..n).map(|_| (r.next() % 1000) as i32 - 500).collect();
    check_pairs(&dup, Order::Ascending);
}

/// More keys than one onesweep launch takes (`PORTION_KEYS`): each pass runs
/// in two portions, the first handing the digits' next output positions to
/// the second; stability across the boundary with few distinct keys.
#[test]
fn sort_large_crosses_a_portion() {
    rmm_testing::require_gpu!();
    let n = kernel_abi::sort::PORTION_KEYS + 4099;
    let mut r = Rng(98);
    let k32: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
    check_keys(&k32, Order::Descending);
    let few: Vec<i32> = (0..n).map(|_| (r.next() % 3) as i32 - 1).collect();
    check_pairs(&few, Order::Ascending);
}

#[test]
fn sorted_and_constant_inputs() {
    rmm_testing::require_gpu!();
    let n = 300_001;
    let asc: Vec<u32> = (0..n as u32).collect();
    let desc: Vec<u32> = (0..n as u32).rev().collect();
    let same = vec![42u64; n];
    for order in [Order::Ascending, Order::Descending] {
        check_keys(&asc, order);
        check_keys(&desc, order);
        check_keys(&same, order);
        check_pairs(&same, order);
    }
}

#[test]
fn float_order_nan_and_signed_zero() {
    rmm_testing::require_gpu!();
    let neg_nan = f32::from_bits(0xFFC0_0000);
    let pos_nan = f32::from_bits(0x7FC0_0000);
    let tiny = f32::from_bits(1); // smallest subnormal
    let base = [
        pos_nan,
        1.0,
        -0.0,
        f32::INFINITY,
        neg_nan,
        0.0,
        -tiny,
        f32::NEG_INFINITY,
        tiny,
        -1.0,
        f32::MAX,
        f32::MIN,
    ];
    let want_asc = [
        neg_nan,
        f32::NEG_INFINITY,
        f32::MIN,
        -1.0,
        -tiny,
        -0.0,
        0.0,
        tiny,
        1.0,
        f32::MAX,
        f32::INFINITY,
        pos_nan,
    ];
    let (s, policy) = stream_and_policy();
    let mut d = DevVec::upload(&base, &s);
    sort_keys(d.span_mut(), Order::Ascending, &policy).unwrap();
    assert_same_keys(&d.download(&s), &want_asc, "float order");
    let mut want_desc = want_asc;
    want_desc.reverse();
    sort_keys(d.span_mut(), Order::Descending, &policy).unwrap();
    assert_same_keys(&d.download(&s), &want_desc, "float order descending");
    // The same with f64 and many copies (several tiles).
    let b64: Vec<f64> = (0..50_000)
        .map(|i| match i % 6 {
            0 => f64::from_bits(0xFFF8_0000_0000_0000),
            1 => -0.0,
            2 => 0.0,
            3 => f64::NAN,
            4 => f64::NEG_INFINITY,
            _ => i as f64,
        })
        .collect();
    check_keys(&b64, Order::Ascending);
    check_keys(&b64, Order::Descending);
    check_pairs(&b64, Order::Ascending);
}

/// A `LimitingAdaptor` over `CudaMemoryResource`: out-of-memory above
/// `limit` live bytes.
fn limited_resource(limit: usize) -> LimitingAdaptor<CudaMemoryResource> {
    LimitingAdaptor::new(CudaMemoryResource::new(), limit)
}

#[test]
fn sort_out_of_memory_leaves_input_intact() {
    rmm_testing::require_gpu!();
    let n = 1 << 20;
    let mut r = Rng(5);
    let host: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
    let s = rmm::CudaStream::new().unwrap();
    // Room for less than the scratch key buffer (4 MiB).
    let policy = ExecPolicy::new(s.view(), limited_resource(2 << 20));
    let mut d = DevVec::upload(&host, &s);
    let e = sort_keys(d.span_mut(), Order::Ascending, &policy).unwrap_err();
    assert!(e.is_out_of_memory(), "{e:?}");
    assert_eq!(d.download(&s), host, "input changed by a failed sort");
    // Pairs need a second buffer: room for the keys' scratch but not the values'.
    let policy = ExecPolicy::new(s.view(), limited_resource((4 << 20) + (1 << 20)));
    let vals: Vec<u32> = (0..n as u32).collect();
    let mut dv = DevVec::upload(&vals, &s);
    let e = sort_pairs(d.span_mut(), dv.span_mut(), Order::Descending, &policy).unwrap_err();
    assert!(e.is_out_of_memory(), "{e:?}");
    assert_eq!(d.download(&s), host);
    assert_eq!(dv.download(&s), vals);
    // With enough room the same sort succeeds.
    let policy = ExecPolicy::new(s.view(), limited_resource(64 << 20));
    sort_keys(d.span_mut(), Order::Ascending, &policy).unwrap();
    let mut want = host.clone();
    want.par_sort();
    assert_eq!(d.download(&s), want);
}

fn fake<T>(addr: u64, len: usize) -> DeviceSpanMut<'static, T> {
    // SAFETY: never dereferenced: the calls fail on their arguments first.
    unsafe { DeviceSpanMut::from_raw_parts(DevicePtr::new(addr), len) }
}
fn fake_ro<T>(addr: u64, len: usize) -> DeviceSpan<'static, T> {
    // SAFETY: as `fake`.
    unsafe { DeviceSpan::from_raw_parts(DevicePtr::new(addr), len) }
}

#[test]
fn sort_rejects_bad_arguments_without_a_gpu() {
    let sim = SimulatedMemoryResource::new(1 << 30);
    let policy = ExecPolicy::new(CudaStreamView::DEFAULT, sim.clone());
    let bad = |e: Error| assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    bad(sort_pairs(
        fake::<u32>(1 << 40, 10),
        fake(1 << 41, 9),
        Order::Ascending,
        &policy,
    )
    .unwrap_err());
    bad(sort_pairs(
        fake::<u64>(1 << 40, 10),
        fake(1 << 40, 10),
        Order::Ascending,
        &policy,
    )
    .unwrap_err());
    bad(sort_keys_copy(
        fake_ro::<f32>(1 << 40, 10),
        fake(1 << 41, 11),
        Order::Ascending,
        &policy,
    )
    .unwrap_err());
    bad(sort_keys_copy(
        fake_ro::<i64>(1 << 40, 10),
        fake((1 << 40) + 40, 10),
        Order::Descending,
        &policy,
    )
    .unwrap_err());
    bad(sort_pairs_copy(
        fake_ro::<f64>(1 << 40, 10),
        fake_ro(1 << 41, 10),
        fake(1 << 42, 10),
        fake((1 << 41) + 4, 10),
        Order::Ascending,
        &policy,
    )
    .unwrap_err());
    bad(sort_pairs_copy(
        fake_ro::<u32>(1 << 40, 10),
        fake_ro(1 << 41, 10),
        fake(1 << 42, 9),
        fake(1 << 43, 10),
        Order::Ascending,
        &policy,
    )
    .unwrap_err());
    // Empty sorts succeed without touching the device or the resource.
    sort_keys(fake::<i32>(0, 0), Order::Ascending, &policy).unwrap();
    sort_pairs(fake::<f64>(0, 0), fake(0, 0), Order::Descending, &policy).unwrap();
    assert_eq!(sim.peak_bytes(), 0);
}
