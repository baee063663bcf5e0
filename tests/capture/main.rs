//! The kernels under stream capture, on a real GPU: every launcher (fill,
//! copy, sequence, scan, reductions into device memory, sort of keys and of
//! pairs) captured with its policy scratch and replayed on changing input,
//! over `cuda_async` (the driver's graph memory nodes) and over a pool (a
//! graph-private pool); a sort + scan pipeline captured once and replayed
//! 1000 times, every replay checked against the CPU (rayon); memory taken
//! eagerly after a capture is never overwritten by a replay; the host-value
//! reductions refuse a capturing stream without invalidating the capture;
//! spans owned by other streams are ordered or refused.
//!
//! A binary of its own, and no `cuMemFree` or context synchronisation in
//! it: both wait for the whole context, which the CUDA programming guide
//! forbids while any stream of it captures, so one in any thread of the
//! process invalidates the captures in progress. On the H200 (2026-12-02),
//! with test buffers and pools from `cuMemAlloc`, 6 of these 21 tests saw
//! their thread-local capture invalidated part way, both beside the other
//! launcher tests (which free with `cuMemFree` and synchronise the device)
//! and among themselves. So every buffer and the pool's upstream come from
//! one `cuda_async` resource (stream-ordered frees), and the kernels module
//! is loaded before any capture. Captures use thread-local
//! mode on non-blocking streams, so the legacy default stream and the
//! other tests' own calls stay legal. `RMM_TEST_MAX_LOG2` (the sanitizer
//! runs) shrinks the sizes and the pipeline's replays.

use std::sync::OnceLock;

use rayon::prelude::*;
use rmm::exec_policy::ExecPolicy;
use rmm::graph::{begin_capture, CaptureMode, CaptureStatus, GraphExec};
use rmm::mr::{CudaAsyncMemoryResource, PoolMemoryResource, PoolOptions, SharedResource};
use rmm::{CudaStream, DevicePod, DeviceScalar, DeviceUvector, Error, Result};
use rmm_suite::kernels::Kernels;
use rmm_suite::sort::{sort_keys, sort_keys_copy, sort_pairs_copy, Order};
use rmm_suite::{containers, copy, fill, reduce, scan, sequence};

/// SplitMix64 (with `unit` and `normal`).
use rmm_testing::SplitMix64 as Rng;

/// The one `cuda_async` resource of the binary (never dropped): every
/// buffer, the `cuda_async` scratch and the pool's upstream.
fn data_resource() -> SharedResource {
    static RESOURCE: OnceLock<SharedResource> = OnceLock::new();
    RESOURCE
        .get_or_init(|| SharedResource::new(CudaAsyncMemoryResource::new().unwrap()))
        .clone()
}

/// Where the policy's scratch comes from.
#[derive(Clone, Copy, Debug)]
enum Scratch {
    /// `CudaAsyncMemoryResource` (the binary's one): allocations in a
    /// capture are graph nodes.
    CudaAsync,
    /// A fresh `PoolMemoryResource` (over the binary's `cuda_async`): a
    /// graph-private pool.
    Pool,
}

impl Scratch {
    fn resource(self) -> SharedResource {
        match self {
            Scratch::CudaAsync => data_resource(),
            Scratch::Pool => SharedResource::new(
                PoolMemoryResource::new(
                    data_resource(),
                    PoolOptions::default().initial_pool_size(16 << 20),
                )
                .unwrap(),
            ),
        }
    }
}

/// A non-blocking stream and a policy on it over `scratch`'s resource; the
/// kernels module loaded (before any capture of the process: the first
/// caller loads it, the others wait for it).
fn setup(scratch: Scratch) -> (CudaStream, ExecPolicy) {
    Kernels::current().unwrap();
    let s = CudaStream::non_blocking().unwrap();
    let policy = ExecPolicy::new(s.view(), scratch.resource());
    (s, policy)
}

/// `n`, halved until `RMM_TEST_MAX_LOG2` allows it.
fn size(n: usize) -> usize {
    match rmm_testing::env::test_max_log2() {
        Some(k) => {
            let mut n = n;
            while n > 1usize << k.min(63) {
                n /= 2;
            }
            n
        }
        None => n,
    }
}

/// Captures `work` on `s` (thread-local mode) and instantiates the graph.
fn capture(s: &CudaStream, work: impl FnOnce() -> Result<()>) -> GraphExec {
    let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    work().unwrap();
    let graph = capture.end().unwrap();
    assert!(graph.node_count().unwrap() > 0);
    graph.instantiate().unwrap()
}

/// A vector of `data` on `s` (outside any capture).
fn upload<T: DevicePod>(data: &[T], s: &CudaStream) -> DeviceUvector<T> {
    DeviceUvector::from_slice_with_resource(data, s.view(), data_resource()).unwrap()
}

fn random_u32(r: &mut Rng, n: usize, below: u64) -> Vec<u32> {
    (0..n).map(|_| (r.next() % below) as u32).collect()
}

/// Launches `graph` on `s` and waits for it.
fn launch(graph: &GraphExec, s: &CudaStream) {
    // SAFETY: every test keeps the memory its graph was captured over
    // allocated (declared before the graph, so dropped after it) and uses
    // it only between launches, after this synchronisation.
    unsafe { graph.launch(s.view()).unwrap() };
    s.synchronize().unwrap();
}

// ---------------------------------------------------------------------------
// Each kernel, captured and replayed
// ---------------------------------------------------------------------------

fn fill_replays(scratch: Scratch) {
    let (s, _policy) = setup(scratch);
    let n = size(70_001);
    let mut r = Rng(1);
    let mut a = upload(&random_u32(&mut r, n, u64::MAX), &s);
    let mut z = upload(&random_u32(&mut r, n, u64::MAX), &s);
    let wide = upload(&vec![0u64; n], &s);
    let graph = capture(&s, || {
        containers::fill(&mut a, 0x5a5a_5a5a_u32, s.view())?; // the fill kernel
        containers::fill(&mut z, 0u32, s.view())?; // a memset
                                                   // SAFETY: `wide` holds `n` u64 and outlives the graph's launches.
        unsafe { fill::fill_raw::<u64>(wide.data(), n, u64::MAX - 3, s.view()) }
    });
    for rep in 0..3 {
        a.copy_from_host(&random_u32(&mut r, n, u64::MAX), s.view())
            .unwrap();
        z.copy_from_host(&random_u32(&mut r, n, u64::MAX), s.view())
            .unwrap();

        launch(&graph, &s);
        assert!(
            a.copy_to_host(s.view())
                .unwrap()
                .iter()
                .all(|&x| x == 0x5a5a_5a5a),
            "{rep}"
        );
        assert!(z.copy_to_host(s.view()).unwrap().iter().all(|&x| x == 0), "{rep}");
        assert!(wide
            .copy_to_host(s.view())
            .unwrap()
            .iter()
            .all(|&x| x == u64::MAX - 3));
    }
}

fn copy_replays(scratch: Scratch) {
    let (s, _policy) = setup(scratch);
    let n = size(50_000);
    let mut r = Rng(2);
    let mut src = upload(&random_u32(&mut r, n, u64::MAX), &s);
    let mut dst = upload(&vec![0u32; n], &s);
    let dst2 = upload(&vec![0u32; n], &s);
    let graph = capture(&s, || {
        containers::copy(&mut dst, &src, s.view())?; // the driver's copy
                                                     // SAFETY: both hold `n` u32, are disjoint and outlive the launches.
        unsafe { copy::copy_bytes_kernel(dst2.data(), src.data(), n * 4, s.view()) }
    });
    for rep in 0..3 {
        let want = random_u32(&mut r, n, u64::MAX);
        src.copy_from_host(&want, s.view()).unwrap();

        launch(&graph, &s);
        assert_eq!(dst.copy_to_host(s.view()).unwrap(), want, "copy, replay {rep}");
        assert_eq!(
            dst2.copy_to_host(s.view()).unwrap(),
            want,
            "copy kernel, replay {rep}"
        );
    }
}

fn sequence_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(40_000);
    let mut out = upload(&vec![0i64; n], &s);
    let graph = capture(&s, || sequence::sequence(out.as_span_mut(), -5i64, 3, &policy));
    let want: Vec<i64> = (0..n as i64).map(|i| -5 + 3 * i).collect();
    for rep in 0..2 {
        out.copy_from_host(&vec![77i64; n], s.view()).unwrap();
        launch(&graph, &s);
        assert_eq!(out.copy_to_host(s.view()).unwrap(), want, "{rep}");
    }
}

fn scan_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(300_000);
    let mut r = Rng(3);
    let mut input = upload(&vec![0u32; n], &s);
    let mut out = upload(&vec![0u32; n], &s);
    let mut in_place = upload(&vec![0i64; n], &s);
    let graph = capture(&s, || {
        scan::inclusive_scan(input.as_span(), out.as_span_mut(), &policy)?;
        scan::exclusive_scan_in_place(in_place.as_span_mut(), &policy)
    });
    for rep in 0..3 {
        let host = random_u32(&mut r, n, u64::MAX);
        let host64: Vec<i64> = (0..n).map(|_| r.next() as i64 >> 3).collect();
        input.copy_from_host(&host, s.view()).unwrap();
        in_place.copy_from_host(&host64, s.view()).unwrap();

        launch(&graph, &s);
        let mut acc = 0u32;
        let want: Vec<u32> = host
            .iter()
            .map(|&x| {
                acc = acc.wrapping_add(x);
                acc
            })
            .collect();
        assert_eq!(
            out.copy_to_host(s.view()).unwrap(),
            want,
            "inclusive, replay {rep}"
        );
        let mut acc = 0i64;
        let want: Vec<i64> = host64
            .iter()
            .map(|&x| {
                let before = acc;
                acc = acc.wrapping_add(x);
                before
            })
            .collect();
        assert_eq!(
            in_place.copy_to_host(s.view()).unwrap(),
            want,
            "exclusive, replay {rep}"
        );
    }
}

fn reduce_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(200_000);
    let mut r = Rng(4);
    let mut input = upload(&vec![0u32; n], &s);
    let mut total = DeviceScalar::<u32>::with_resource(s.view(), data_resource()).unwrap();
    let mut extremes = upload(&[0u32; 2], &s);
    let graph = capture(&s, || {
        reduce::sum_into(input.as_span(), total.as_span_mut(), &policy)?;
        let mut ext = extremes.as_span_mut();
        reduce::min_into(input.as_span(), ext.subspan_mut(0..1).unwrap(), &policy)?;
        reduce::max_into(input.as_span(), ext.subspan_mut(1..2).unwrap(), &policy)
    });
    for rep in 0..3 {
        let host = random_u32(&mut r, n, u64::MAX);
        input.copy_from_host(&host, s.view()).unwrap();

        launch(&graph, &s);
        let sum = host.par_iter().fold(|| 0u32, |a, &b| a.wrapping_add(b));
        let sum = sum.reduce(|| 0, u32::wrapping_add);
        assert_eq!(total.value(s.view()).unwrap(), sum, "sum, replay {rep}");
        let (lo, hi) = (*host.iter().min().unwrap(), *host.iter().max().unwrap());
        assert_eq!(
            extremes.copy_to_host(s.view()).unwrap(),
            [lo, hi],
            "min, max, replay {rep}"
        );
    }
}

fn sort_keys_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(100_000);
    let mut r = Rng(5);
    let mut keys = upload(&vec![0u64; n], &s);
    let mut floats = upload(&vec![0f32; n], &s);
    let graph = capture(&s, || {
        sort_keys(keys.as_span_mut(), Order::Ascending, &policy)?;
        sort_keys(floats.as_span_mut(), Order::Descending, &policy)
    });
    for rep in 0..3 {
        let mut host = (0..n).map(|_| r.next()).collect::<Vec<u64>>();
        let mut host_f = (0..n).map(|_| r.normal() as f32).collect::<Vec<f32>>();
        keys.copy_from_host(&host, s.view()).unwrap();
        floats.copy_from_host(&host_f, s.view()).unwrap();

        launch(&graph, &s);
        host.par_sort_unstable();
        assert_eq!(
            keys.copy_to_host(s.view()).unwrap(),
            host,
            "u64 keys, replay {rep}"
        );
        host_f.par_sort_by(|a, b| b.total_cmp(a));
        let got = floats.copy_to_host(s.view()).unwrap();
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&host_f), "f32 keys descending, replay {rep}");
    }
}

fn sort_pairs_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(90_000);
    let mut r = Rng(6);
    let mut keys = upload(&vec![0i32; n], &s);
    let values = upload(&(0..n as u32).collect::<Vec<_>>(), &s);
    let mut keys_out = upload(&vec![0i32; n], &s);
    let mut values_out = upload(&vec![0u32; n], &s);
    let graph = capture(&s, || {
        sort_pairs_copy(
            keys.as_span(),
            values.as_span(),
            keys_out.as_span_mut(),
            values_out.as_span_mut(),
            Order::Descending,
            &policy,
        )
    });
    for rep in 0..3 {
        // Few distinct keys: stability shows in the values.
        let host = (0..n)
            .map(|_| (r.next() % 1000) as i32 - 500)
            .collect::<Vec<i32>>();
        keys.copy_from_host(&host, s.view()).unwrap();

        launch(&graph, &s);
        let mut want: Vec<(i32, u32)> = host.iter().copied().zip(0..n as u32).collect();
        want.par_sort_by(|a, b| b.0.cmp(&a.0));
        let (wk, wv): (Vec<i32>, Vec<u32>) = want.into_iter().unzip();
        assert_eq!(keys_out.copy_to_host(s.view()).unwrap(), wk, "keys, replay {rep}");
        assert_eq!(
            values_out.copy_to_host(s.view()).unwrap(),
            wv,
            "values, replay {rep}"
        );
    }
}

macro_rules! each_kernel {
    ($($name:ident: $body:ident($scratch:expr);)*) => {$(
        #[test]
        fn $name() {
            rmm_testing::require_gpu!();
            $body($scratch);
        }
    )*};
}

each_kernel! {
    fill_cuda_async: fill_replays(Scratch::CudaAsync);
    fill_pool: fill_replays(Scratch::Pool);
    copy_cuda_async: copy_replays(Scratch::CudaAsync);
    copy_pool: copy_replays(Scratch::Pool);
    sequence_cuda_async: sequence_replays(Scratch::CudaAsync);
    sequence_pool: sequence_replays(Scratch::Pool);
    scan_cuda_async: scan_replays(Scratch::CudaAsync);
    scan_pool: scan_replays(Scratch::Pool);
    reduce_into_cuda_async: reduce_replays(Scratch::CudaAsync);
    reduce_into_pool: reduce_replays(Scratch::Pool);
    sort_keys_cuda_async: sort_keys_replays(Scratch::CudaAsync);
    sort_keys_pool: sort_keys_replays(Scratch::Pool);
    sort_pairs_cuda_async: sort_pairs_replays(Scratch::CudaAsync);
    sort_pairs_pool: sort_pairs_replays(Scratch::Pool);
}

// ---------------------------------------------------------------------------
// The pipeline: captured once, replayed on changing input
// ---------------------------------------------------------------------------

/// What the CPU says the pipeline gives for `keys`: sorted keys, the stable
/// permutation, the exclusive scan of the sorted keys and their sum.
fn pipeline_on_cpu(keys: &[u32]) -> (Vec<u32>, Vec<u32>, Vec<u32>, u32) {
    let mut pairs: Vec<(u32, u32)> = keys.iter().copied().zip(0..keys.len() as u32).collect();
    pairs.par_sort_by_key(|p| p.0);
    let (sorted, perm): (Vec<u32>, Vec<u32>) = pairs.into_iter().unzip();
    let mut acc = 0u32;
    let prefix = sorted
        .iter()
        .map(|&k| {
            let before = acc;
            acc = acc.wrapping_add(k);
            before
        })
        .collect();
    (sorted, perm, prefix, acc)
}

/// Captures sequence (the values 0..n) + sort of pairs + a copy and an
/// in-place sort of keys + exclusive scan + sum into a scalar, all with
/// policy scratch, once; replays it on new keys written into the captured
/// input buffer before every launch, each replay checked against the CPU.
fn pipeline_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(1 << 16);
    let replays = if rmm_testing::env::test_max_log2().is_some() {
        20
    } else {
        1000
    };
    let mut r = Rng(7 + scratch as u64);
    let mut keys = upload(&vec![0u32; n], &s);
    let mut values = upload(&vec![0u32; n], &s);
    let mut sorted = upload(&vec![0u32; n], &s);
    let mut perm = upload(&vec![0u32; n], &s);
    let mut copied = upload(&vec![0u32; n], &s);
    let mut prefix = upload(&vec![0u32; n], &s);
    let mut total = DeviceScalar::<u32>::with_resource(s.view(), data_resource()).unwrap();
    let graph = capture(&s, || {
        sequence::sequence(values.as_span_mut(), 0u32, 1, &policy)?;
        sort_pairs_copy(
            keys.as_span(),
            values.as_span(),
            sorted.as_span_mut(),
            perm.as_span_mut(),
            Order::Ascending,
            &policy,
        )?;
        containers::copy(&mut copied, &keys, s.view())?;
        sort_keys(copied.as_span_mut(), Order::Ascending, &policy)?;
        scan::exclusive_scan(sorted.as_span(), prefix.as_span_mut(), &policy)?;
        reduce::sum_into(keys.as_span(), total.as_span_mut(), &policy)
    });
    for rep in 0..replays {
        // Some replays with many equal keys (stability), some without.
        let below = if rep % 2 == 0 {
            n as u64 / 8
        } else {
            u64::from(u32::MAX) + 1
        };
        let host = random_u32(&mut r, n, below);
        keys.copy_from_host(&host, s.view()).unwrap();
        // The values are rewritten by the graph's sequence.
        values.copy_from_host(&vec![u32::MAX; n], s.view()).unwrap();

        launch(&graph, &s);
        let (want_sorted, want_perm, want_prefix, want_sum) = pipeline_on_cpu(&host);
        let what = format!("{scratch:?}, replay {rep} of {replays}");
        assert_eq!(
            sorted.copy_to_host(s.view()).unwrap(),
            want_sorted,
            "sorted keys, {what}"
        );
        assert_eq!(
            perm.copy_to_host(s.view()).unwrap(),
            want_perm,
            "permutation, {what}"
        );
        assert_eq!(
            copied.copy_to_host(s.view()).unwrap(),
            want_sorted,
            "sort_keys, {what}"
        );
        assert_eq!(
            prefix.copy_to_host(s.view()).unwrap(),
            want_prefix,
            "scan, {what}"
        );
        assert_eq!(total.value(s.view()).unwrap(), want_sum, "sum, {what}");
        assert_eq!(keys.copy_to_host(s.view()).unwrap(), host, "input kept, {what}");
    }
}

#[test]
fn pipeline_1000_replays_cuda_async() {
    rmm_testing::require_gpu!();
    pipeline_replays(Scratch::CudaAsync);
}

#[test]
fn pipeline_1000_replays_pool() {
    rmm_testing::require_gpu!();
    pipeline_replays(Scratch::Pool);
}

/// Memory taken from the scratch resource after the capture (where a
/// shared free list would hand out the graph's scratch again) is never
/// written by a replay.
fn eager_memory_survives_replays(scratch: Scratch) {
    let (s, policy) = setup(scratch);
    let n = size(1 << 16);
    let mut r = Rng(9);
    let host = random_u32(&mut r, n, u64::MAX);
    let keys = upload(&host, &s);
    let mut out = upload(&vec![0u32; n], &s);
    let graph = capture(&s, || {
        sort_keys_copy(keys.as_span(), out.as_span_mut(), Order::Ascending, &policy)
    });
    // As much as the sort's scratch (a key buffer of `n` and small tables),
    // several times over, from the policy's resource, outside any capture.
    let pattern: Vec<u32> = (0..n as u32).map(|i| i ^ 0xdead_beef).collect();
    let eager: Vec<DeviceUvector<u32>> = (0..4)
        .map(|_| {
            DeviceUvector::from_slice_with_resource(&pattern, s.view(), policy.resource().clone()).unwrap()
        })
        .collect();
    let mut want = host.clone();
    want.par_sort_unstable();
    for rep in 0..3 {
        launch(&graph, &s);
        assert_eq!(
            out.copy_to_host(s.view()).unwrap(),
            want,
            "{scratch:?}, replay {rep}"
        );
        for (i, v) in eager.iter().enumerate() {
            assert!(
                v.copy_to_host(s.view()).unwrap() == pattern,
                "{scratch:?}: eager vector {i} overwritten by replay {rep}"
            );
        }
    }
}

#[test]
fn eager_memory_survives_replays_cuda_async() {
    rmm_testing::require_gpu!();
    eager_memory_survives_replays(Scratch::CudaAsync);
}

#[test]
fn eager_memory_survives_replays_pool() {
    rmm_testing::require_gpu!();
    eager_memory_survives_replays(Scratch::Pool);
}

// ---------------------------------------------------------------------------
// What cannot be captured is refused, and the capture survives
// ---------------------------------------------------------------------------

#[test]
fn host_reductions_refuse_a_capturing_stream() {
    rmm_testing::require_gpu!();
    let (s, policy) = setup(Scratch::CudaAsync);
    let input = upload(&[3u32, 9, 1, 4], &s);
    let mut total = DeviceScalar::<u32>::with_resource(s.view(), data_resource()).unwrap();
    let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    let refused = [
        reduce::sum(input.as_span(), &policy).map(|_| ()),
        reduce::min(input.as_span(), &policy).map(|_| ()),
        reduce::max(input.as_span(), &policy).map(|_| ()),
    ];
    for e in refused {
        match e {
            Err(Error::Capture { stream, reason }) => {
                assert_eq!(stream, s.view().as_raw());
                assert!(reason.contains("_into"), "{reason}");
            }
            other => panic!("a host reduction under capture gave {other:?}"),
        }
    }
    // The capture is intact: the device-memory form is captured and replays.
    assert!(matches!(
        s.view().capture_status().unwrap(),
        CaptureStatus::Active { .. }
    ));
    reduce::sum_into(input.as_span(), total.as_span_mut(), &policy).unwrap();
    let graph = capture.end().unwrap().instantiate().unwrap();
    launch(&graph, &s);
    assert_eq!(total.value(s.view()).unwrap(), 17);
    // Outside a capture the host form works as before.
    assert_eq!(reduce::sum(input.as_span(), &policy).unwrap(), 17);
}

/// A span owned by another (non-capturing) stream: its queued work is
/// waited for when the capture uses it, no event joins the two, and the
/// owner stays out of the capture.
#[test]
fn spans_of_other_streams_are_synchronised_at_capture() {
    rmm_testing::require_gpu!();
    let (s, policy) = setup(Scratch::CudaAsync);
    let other = CudaStream::non_blocking().unwrap();
    let n = size(1 << 18);
    let mut input = DeviceUvector::<u32>::with_resource(n, other.view(), data_resource()).unwrap();
    // Queued on the owner, not waited for by the test.
    sequence::sequence(
        input.as_span_mut(),
        7u32,
        u32::MAX,
        &ExecPolicy::new(other.view(), data_resource()),
    )
    .unwrap();
    let mut out = upload(&vec![0u32; n], &s);
    let mut legacy_owned =
        DeviceUvector::<u32>::with_resource(n, rmm::CudaStreamView::DEFAULT, data_resource()).unwrap();
    let graph = capture(&s, || {
        sort_keys_copy(input.as_span(), out.as_span_mut(), Order::Ascending, &policy)?;
        scan::inclusive_scan(input.as_span(), legacy_owned.as_span_mut(), &policy)
    });
    assert_eq!(other.view().capture_status().unwrap(), CaptureStatus::None);
    launch(&graph, &s);
    let mut want: Vec<u32> = (0..n as u32).map(|i| 7u32.wrapping_sub(i)).collect();
    let mut acc = 0u32;
    let want_scan: Vec<u32> = want
        .iter()
        .map(|&x| {
            acc = acc.wrapping_add(x);
            acc
        })
        .collect();
    want.par_sort_unstable();
    assert_eq!(out.copy_to_host(s.view()).unwrap(), want);
    s.synchronize().unwrap();
    assert_eq!(
        legacy_owned.copy_to_host(rmm::CudaStreamView::DEFAULT).unwrap(),
        want_scan
    );
}

/// Work on a non-capturing stream over memory of a capturing one is refused
/// before any event (which would pull the stream into the capture), and the
/// capture goes on.
#[test]
fn a_capturing_owner_is_refused_on_another_stream() {
    rmm_testing::require_gpu!();
    let (s, _) = setup(Scratch::CudaAsync);
    let other = CudaStream::non_blocking().unwrap();
    let eager = ExecPolicy::new(other.view(), data_resource());
    let mut keys = upload(&[5u32, 2, 8, 1], &s);
    let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    let e = sort_keys(keys.as_span_mut(), Order::Ascending, &eager).unwrap_err();
    assert!(
        matches!(&e, Error::Capture { stream, .. } if *stream == s.view().as_raw()),
        "{e:?}"
    );
    let e = containers::fill(&mut keys, 3u32, other.view()).unwrap_err();
    assert!(matches!(&e, Error::Capture { .. }), "{e:?}");
    assert_eq!(other.view().capture_status().unwrap(), CaptureStatus::None);
    containers::fill(&mut keys, 4u32, s.view()).unwrap();
    let graph = capture.end().unwrap().instantiate().unwrap();
    launch(&graph, &s);
    assert_eq!(keys.copy_to_host(s.view()).unwrap(), [4, 4, 4, 4]);
}
