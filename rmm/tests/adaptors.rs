//! The conformance suite over every adaptor (over the simulated resource on
//! the CPU, over the CUDA and CUDA-async resources on a GPU), a stack of
//! adaptors, and each adaptor's own tests.

#[macro_use]
mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use common::{KIB, MIB};
use rmm::mr::{
    AlignedAdaptor, ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CallbackMemoryResource,
    CudaAsyncMemoryResource, CudaMemoryResource, FailureCallbackAdaptor, LimitingAdaptor, LoggingAdaptor,
    ManagedMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions, PrefetchAdaptor, SharedResource,
    SimulatedMemoryResource, StatisticsAdaptor, ThreadSafeAdaptor, TrackingAdaptor,
};
use rmm::{CudaStream, CudaStreamView, DevicePtr, Error};

const SIM: usize = 64 * common::GIB;
const S: CudaStreamView = CudaStreamView::DEFAULT;

fn sim() -> SimulatedMemoryResource {
    SimulatedMemoryResource::new(SIM)
}

// ---------------------------------------------------------------------------
// Conformance: every adaptor over simulated (cpu), cuda and cuda_async (gpu)
// ---------------------------------------------------------------------------

macro_rules! adaptor_suites {
    ($cpu:ident, $cuda:ident, $cuda_async:ident, |$u:ident| $wrap:expr) => {
        conformance_suite!($cpu, cpu, || {
            let $u = sim();
            $wrap
        });
        conformance_suite!($cuda, gpu, || {
            let $u = CudaMemoryResource::new();
            $wrap
        });
        conformance_suite!($cuda_async, gpu, || {
            let $u = CudaAsyncMemoryResource::new().expect("cuda_async");
            $wrap
        });
    };
}

adaptor_suites!(aligned_sim, aligned_cuda, aligned_cuda_async, |u| {
    AlignedAdaptor::new(u, 4096, 0).expect("aligned")
});
adaptor_suites!(
    aligned_threshold_sim,
    aligned_threshold_cuda,
    aligned_threshold_cuda_async,
    |u| AlignedAdaptor::new(u, 64 * KIB, 16 * KIB).expect("aligned")
);
adaptor_suites!(
    failure_callback_sim,
    failure_callback_cuda,
    failure_callback_cuda_async,
    |u| FailureCallbackAdaptor::new(u, |_| false)
);
adaptor_suites!(limiting_sim, limiting_cuda, limiting_cuda_async, |u| {
    LimitingAdaptor::new(u, 16 * common::GIB)
});
adaptor_suites!(logging_sim, logging_cuda, logging_cuda_async, |u| {
    LoggingAdaptor::to_writer(u, std::io::sink(), false).expect("logging")
});
adaptor_suites!(statistics_sim, statistics_cuda, statistics_cuda_async, |u| {
    StatisticsAdaptor::new(u)
});
adaptor_suites!(tracking_sim, tracking_cuda, tracking_cuda_async, |u| {
    TrackingAdaptor::new(u, false)
});
adaptor_suites!(thread_safe_sim, thread_safe_cuda, thread_safe_cuda_async, |u| {
    ThreadSafeAdaptor::new(u)
});
adaptor_suites!(prefetch_sim, prefetch_cuda, prefetch_cuda_async, |u| {
    PrefetchAdaptor::new(u)
});
conformance_suite!(
    prefetch_managed,
    gpu,
    || PrefetchAdaptor::new(ManagedMemoryResource::new()),
    max = 256 * MIB
);

/// statistics over tracking over limiting over logging over the upstream.
type Stack<U> = StatisticsAdaptor<TrackingAdaptor<LimitingAdaptor<LoggingAdaptor<U>>>>;

fn stack<U: MemoryResource>(u: U) -> Stack<U> {
    let logging = LoggingAdaptor::to_writer(u, std::io::sink(), false).expect("logging");
    StatisticsAdaptor::new(TrackingAdaptor::new(
        LimitingAdaptor::new(logging, 16 * common::GIB),
        false,
    ))
}

adaptor_suites!(stacked_sim, stacked_cuda, stacked_cuda_async, |u| stack(u));
conformance_suite!(stacked_type_erased_sim, cpu, || {
    // Every layer over the type-erased handle (the default type parameter).
    let base = SharedResource::new(sim());
    let aligned: AlignedAdaptor = AlignedAdaptor::new(base, 512, 0).expect("aligned");
    let limited: LimitingAdaptor = LimitingAdaptor::new(SharedResource::new(aligned), 16 * common::GIB);
    ThreadSafeAdaptor::<SharedResource>::new(SharedResource::new(PrefetchAdaptor::<SharedResource>::new(
        SharedResource::new(limited),
    )))
});

// Adaptors over the sub-allocators (over simulated devices, so they run in CI).
fn sim_pool() -> PoolMemoryResource<SimulatedMemoryResource> {
    PoolMemoryResource::new(sim(), PoolOptions::default()).expect("pool")
}

fn sim_binning() -> BinningMemoryResource<PoolMemoryResource<SimulatedMemoryResource>> {
    BinningMemoryResource::with_fixed_bins(sim_pool(), 18, 22).expect("binning")
}

fn sim_arena() -> ArenaMemoryResource<SimulatedMemoryResource> {
    ArenaMemoryResource::new(sim(), ArenaOptions::default().arena_size(32 * common::GIB)).expect("arena")
}

conformance_suite!(stacked_over_pool_sim, cpu, || stack(sim_pool()));
conformance_suite!(stacked_over_binning_sim, cpu, || stack(sim_binning()));
conformance_suite!(stacked_over_arena_sim, cpu, || stack(sim_arena()));
conformance_suite!(aligned_over_pool_sim, cpu, || {
    AlignedAdaptor::new(sim_pool(), 4096, 0).expect("aligned")
});
conformance_suite!(aligned_over_arena_sim, cpu, || {
    AlignedAdaptor::new(sim_arena(), 64 * KIB, 16 * KIB).expect("aligned")
});
conformance_suite!(failure_callback_over_binning_sim, cpu, || {
    FailureCallbackAdaptor::new(sim_binning(), |_| false)
});
conformance_suite!(thread_safe_over_arena_sim, cpu, || ThreadSafeAdaptor::new(
    sim_arena()
));
conformance_suite!(prefetch_over_pool_sim, cpu, || PrefetchAdaptor::new(sim_pool()));

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

/// Captures `log` records of level error so tests can check what adaptors report.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Error
    }
    fn log(&self, r: &log::Record<'_>) {
        if self.enabled(r.metadata()) {
            self.0.lock().unwrap().push(r.args().to_string());
        }
    }
    fn flush(&self) {}
}

fn captured_errors() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(c).expect("no other logger in this test binary");
        log::set_max_level(log::LevelFilter::Error);
        c
    })
}

/// True when an error containing every one of `needles` was logged.
fn error_logged(needles: &[&str]) -> bool {
    captured_errors()
        .0
        .lock()
        .unwrap()
        .iter()
        .any(|m| needles.iter().all(|n| m.contains(n)))
}

/// A `Write` into a shared buffer.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rmm-adaptors-{}-{name}", std::process::id()))
}

// ---------------------------------------------------------------------------
// Common adaptor behaviour
// ---------------------------------------------------------------------------

#[test]
fn adaptors_forward_properties_and_upstream() {
    let s = sim();
    let stacked = stack(s.clone());
    assert!(stacked.is_simulated());
    assert_eq!(stacked.device(), s.device());
    assert_eq!(stacked.is_host_accessible(), s.is_host_accessible());
    assert!(stacked.upstream().upstream().upstream().upstream().is_equal(&s));
    let clone = stacked.clone();
    assert!(clone.is_equal(&stacked));
    // Another adaptor over the same upstream has its own state: not equal.
    assert!(!stack(s.clone()).is_equal(&stacked));
    // Shared state: what one clone allocates, the other sees.
    let p = clone.allocate(1000, 256, S).unwrap();
    assert_eq!(stacked.bytes_counter().value, 1000);
    assert_eq!(stacked.upstream().outstanding_allocations().len(), 1);
    // SAFETY: p came from a clone of `stacked` with these arguments.
    unsafe { stacked.deallocate(p, 1000, 256, S) };
    assert_eq!(s.allocated_bytes(), 0);
}

#[test]
fn stacked_layers_agree() {
    let s = sim();
    let buf = SharedBuf::default();
    let logging = LoggingAdaptor::to_writer(s.clone(), buf.clone(), true).unwrap();
    let mr = StatisticsAdaptor::new(TrackingAdaptor::new(LimitingAdaptor::new(logging, MIB), false));
    let mut rng = common::SplitMix64(11);
    let mut live = Vec::new();
    let mut failures = 0;
    for _ in 0..500 {
        if live.is_empty() || rng.below(100) < 60 {
            let bytes = 1 + rng.below(64 * KIB);
            match mr.allocate(bytes, 256, S) {
                Ok(p) => live.push((p, bytes)),
                Err(e) => {
                    assert!(e.to_string().contains("exceeded memory limit"), "{e}");
                    failures += 1;
                }
            }
        } else {
            let (p, b) = live.swap_remove(rng.below(live.len()));
            // SAFETY: p came from mr with these arguments.
            unsafe { mr.deallocate(p, b, 256, S) };
        }
        let requested: usize = live.iter().map(|&(_, b)| b).sum();
        assert_eq!(mr.bytes_counter().value as usize, requested);
        assert_eq!(mr.upstream().allocated_bytes(), requested);
        assert_eq!(mr.upstream().upstream().allocated_bytes(), s.allocated_bytes());
        assert!(s.allocated_bytes() <= MIB);
    }
    assert!(failures > 0, "the workload should hit the 1 MiB limit");
    let log = buf.text();
    let lines: Vec<&str> = log.lines().collect();
    let allocs = lines.iter().filter(|l| l.contains(",allocate,")).count();
    let frees = lines.iter().filter(|l| l.contains(",free,")).count();
    // The limit fails above the logging layer: no failure lines reach the log.
    assert!(!log.contains("allocate failure"));
    assert_eq!(allocs - frees, live.len());
    assert_eq!(mr.allocations_counter().total as usize, allocs);
    for (p, b) in live {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
    assert_eq!(s.allocated_bytes(), 0);
}

// ---------------------------------------------------------------------------
// LimitingAdaptor
// ---------------------------------------------------------------------------

#[test]
fn limiting_too_big() {
    captured_errors();
    let s = sim();
    let mr = LimitingAdaptor::new(s.clone(), MIB);
    assert_eq!(mr.allocation_limit(), MIB);
    let e = mr.allocate(2 * MIB, 256, S).unwrap_err();
    assert!(
        e.is_out_of_memory() && e.to_string().contains("exceeded memory limit"),
        "{e}"
    );
    assert!(error_logged(&["exceeded memory limit", "1048576"]));
    assert_eq!(mr.allocated_bytes(), 0);
    assert_eq!(s.live_allocations(), 0, "the upstream must not be called");
    let e = mr.allocate(usize::MAX - 10, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
}

#[test]
fn limiting_counts_aligned_sizes() {
    let mr = LimitingAdaptor::new(sim(), MIB);
    let p = mr.allocate(1, 256, S).unwrap();
    assert_eq!(mr.allocated_bytes(), 256);
    let q = mr.allocate(257, 256, S).unwrap();
    assert_eq!(mr.allocated_bytes(), 768);
    // SAFETY: p, q came from mr with these arguments.
    unsafe {
        mr.deallocate(p, 1, 256, S);
        mr.deallocate(q, 257, 256, S);
    }
    assert_eq!(mr.allocated_bytes(), 0);
}

#[test]
fn limiting_upstream_failure_rolls_back() {
    let s = SimulatedMemoryResource::new(MIB);
    let mr = LimitingAdaptor::new(s, common::GIB);
    let e = mr.allocate(2 * MIB, 256, S).unwrap_err();
    assert!(e.is_out_of_memory());
    assert!(
        !e.to_string().contains("exceeded memory limit"),
        "upstream's error: {e}"
    );
    assert_eq!(mr.allocated_bytes(), 0);
    let p = mr.allocate(MIB, 256, S).unwrap();
    assert_eq!(mr.allocated_bytes(), MIB);
    // SAFETY: p came from mr with these arguments.
    unsafe { mr.deallocate(p, MIB, 256, S) };
}

#[test]
fn limiting_frees_allow_new_allocations() {
    let mr = LimitingAdaptor::new(sim(), MIB);
    let ptrs: Vec<_> = (0..4).map(|_| mr.allocate(256 * KIB, 256, S).unwrap()).collect();
    assert_eq!(mr.allocated_bytes(), MIB);
    assert!(mr.allocate(1, 256, S).unwrap_err().is_out_of_memory());
    // SAFETY: ptrs[0] came from mr with these arguments.
    unsafe { mr.deallocate(ptrs[0], 256 * KIB, 256, S) };
    let p = mr.allocate(256 * KIB, 256, S).expect("room after a free");
    // SAFETY: all came from mr with these arguments.
    unsafe {
        mr.deallocate(p, 256 * KIB, 256, S);
        for &q in &ptrs[1..] {
            mr.deallocate(q, 256 * KIB, 256, S);
        }
    }
    assert_eq!(mr.allocated_bytes(), 0);
}

#[test]
fn limiting_never_overshoots_under_contention() {
    let s = sim();
    let mr = LimitingAdaptor::new(s.clone(), 4 * MIB);
    std::thread::scope(|scope| {
        for t in 0..8 {
            let mr = mr.clone();
            scope.spawn(move || {
                let mut rng = common::SplitMix64(t);
                let mut live = Vec::new();
                for _ in 0..2000 {
                    if rng.below(100) < 55 {
                        let b = 1 + rng.below(256 * KIB);
                        if let Ok(p) = mr.allocate(b, 256, S) {
                            live.push((p, b));
                        }
                    } else if let Some((p, b)) = live.pop() {
                        // SAFETY: p came from mr with these arguments.
                        unsafe { mr.deallocate(p, b, 256, S) };
                    }
                }
                for (p, b) in live {
                    // SAFETY: p came from mr with these arguments.
                    unsafe { mr.deallocate(p, b, 256, S) };
                }
            });
        }
    });
    assert!(
        s.peak_bytes() <= 4 * MIB,
        "peak {} over the limit",
        s.peak_bytes()
    );
    assert!(s.peak_bytes() > 2 * MIB, "the workload should press the limit");
    assert_eq!(mr.allocated_bytes(), 0);
}

// ---------------------------------------------------------------------------
// StatisticsAdaptor
// ---------------------------------------------------------------------------

#[test]
fn statistics_empty_and_all_freed() {
    let mr = StatisticsAdaptor::new(sim());
    assert_eq!(mr.bytes_counter(), Default::default());
    assert_eq!(mr.allocations_counter(), Default::default());
    let ptrs: Vec<_> = (1..=10)
        .map(|i| (mr.allocate(i * 100, 256, S).unwrap(), i * 100))
        .collect();
    for (p, b) in ptrs {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
    let bytes = mr.bytes_counter();
    assert_eq!((bytes.value, bytes.peak, bytes.total), (0, 5500, 5500));
    let allocs = mr.allocations_counter();
    assert_eq!((allocs.value, allocs.peak, allocs.total), (0, 10, 10));
}

#[test]
fn statistics_peaks() {
    let mr = StatisticsAdaptor::new(sim());
    let a = mr.allocate(100, 256, S).unwrap();
    let b = mr.allocate(200, 256, S).unwrap();
    // SAFETY: a came from mr with these arguments.
    unsafe { mr.deallocate(a, 100, 256, S) };
    let c = mr.allocate(50, 256, S).unwrap();
    let bytes = mr.bytes_counter();
    assert_eq!((bytes.value, bytes.peak, bytes.total), (250, 300, 350));
    let allocs = mr.allocations_counter();
    assert_eq!((allocs.value, allocs.peak, allocs.total), (2, 2, 3));
    // Failed allocations and zero-byte allocations are not counted.
    assert!(mr.allocate(1 << 50, 256, S).is_err());
    let z = mr.allocate(0, 256, S).unwrap();
    // SAFETY: all came from mr with these arguments.
    unsafe {
        mr.deallocate(z, 0, 256, S);
        mr.deallocate(b, 200, 256, S);
        mr.deallocate(c, 50, 256, S);
    }
    assert_eq!(mr.allocations_counter().total, 3);
    assert_eq!(mr.bytes_counter().value, 0);
}

#[test]
fn statistics_nested_push_pop() {
    let mr = StatisticsAdaptor::new(sim());
    assert!(matches!(mr.pop_counters(), Err(Error::OutOfRange(_))));
    let outer = mr.allocate(1000, 256, S).unwrap();
    let (below, _) = mr.push_counters();
    assert_eq!(below.value, 1000);
    assert_eq!(mr.depth(), 1);
    assert_eq!(mr.bytes_counter(), Default::default());
    let inner1 = mr.allocate(300, 256, S).unwrap();
    let inner2 = mr.allocate(200, 256, S).unwrap();
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(inner1, 300, 256, S) };
    // Freeing the outer scope's memory makes this scope's value negative.
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(outer, 1000, 256, S) };
    let (bytes, allocs) = mr.pop_counters().unwrap();
    assert_eq!((bytes.value, bytes.peak, bytes.total), (-800, 500, 500));
    assert_eq!((allocs.value, allocs.peak, allocs.total), (0, 2, 2));
    let merged = mr.bytes_counter();
    // peak = max(1000, 1000 + 500); value = 1000 - 800; total = 1000 + 500.
    assert_eq!((merged.value, merged.peak, merged.total), (200, 1500, 1500));
    assert_eq!(mr.allocations_counter().peak, 3);
    assert_eq!(mr.depth(), 0);
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(inner2, 200, 256, S) };
    assert_eq!(mr.bytes_counter().value, 0);
}

#[test]
fn statistics_inner_adaptor_on_outer() {
    let inner = StatisticsAdaptor::new(sim());
    let outer = StatisticsAdaptor::new(inner.clone());
    let p = outer.allocate(100, 256, S).unwrap();
    let q = inner.allocate(50, 256, S).unwrap();
    assert_eq!(outer.bytes_counter().value, 100);
    assert_eq!(inner.bytes_counter().value, 150);
    // SAFETY: came from these resources with these arguments.
    unsafe {
        outer.deallocate(p, 100, 256, S);
        inner.deallocate(q, 50, 256, S);
    }
    assert_eq!(inner.bytes_counter().total, 150);
    assert_eq!(outer.bytes_counter().total, 100);
}

#[test]
fn statistics_multithreaded_totals() {
    let mr = StatisticsAdaptor::new(sim());
    let expected: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8u64)
            .map(|t| {
                let mr = mr.clone();
                scope.spawn(move || {
                    let mut rng = common::SplitMix64(t);
                    let mut sum = 0;
                    for _ in 0..1000 {
                        let b = 1 + rng.below(10 * KIB);
                        sum += b;
                        let p = mr.allocate(b, 256, S).unwrap();
                        // SAFETY: p came from mr with these arguments.
                        unsafe { mr.deallocate(p, b, 256, S) };
                    }
                    sum
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let bytes = mr.bytes_counter();
    assert_eq!(bytes.value, 0);
    assert_eq!(bytes.total as usize, expected);
    assert!(bytes.peak > 0 && bytes.peak as usize <= 8 * 10 * KIB);
    let allocs = mr.allocations_counter();
    assert_eq!((allocs.value, allocs.total), (0, 8000));
    assert!((1..=8).contains(&allocs.peak));
}

// ---------------------------------------------------------------------------
// TrackingAdaptor
// ---------------------------------------------------------------------------

#[test]
fn tracking_outstanding_without_stacks() {
    let mr = TrackingAdaptor::new(sim(), false);
    assert!(!mr.captures_stacks());
    let ptrs: Vec<_> = (1..=10)
        .map(|i| (mr.allocate(i * 10, 256, S).unwrap(), i * 10))
        .collect();
    let out = mr.outstanding_allocations();
    assert_eq!(out.len(), 10);
    for &(p, b) in &ptrs {
        assert_eq!(out[&p].size, b);
        assert!(out[&p].backtrace.is_none());
    }
    assert_eq!(mr.allocated_bytes(), 550);
    let report = mr.outstanding_allocations_str();
    assert!(
        report.contains("Outstanding allocations: 10 (550 bytes)"),
        "{report}"
    );
    assert!(report.contains(&format!("{}: 100 bytes", ptrs[9].0)), "{report}");
    for &(p, b) in &ptrs[..5] {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
    assert_eq!(mr.outstanding_allocations().len(), 5);
    assert_eq!(mr.allocated_bytes(), 400);
    for &(p, b) in &ptrs[5..] {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
    assert!(mr.outstanding_allocations().is_empty());
    assert_eq!(mr.bad_frees(), 0);
}

#[test]
fn tracking_outstanding_with_stacks() {
    let mr = TrackingAdaptor::new(sim(), true);
    assert!(mr.captures_stacks());
    let p = mr.allocate(4096, 256, S).unwrap();
    let out = mr.outstanding_allocations();
    let bt = out[&p].backtrace.as_ref().expect("a backtrace was captured");
    assert_eq!(bt.status(), std::backtrace::BacktraceStatus::Captured);
    let with = mr.outstanding_allocations_str();
    assert!(
        with.lines().count() > 2,
        "backtrace lines follow the entry: {with}"
    );
    // SAFETY: p came from mr with these arguments.
    unsafe { mr.deallocate(p, 4096, 256, S) };
    assert_eq!(mr.allocated_bytes(), 0);
}

#[test]
fn tracking_unknown_free_is_reported_not_forwarded() {
    captured_errors();
    let s = sim();
    let mr = TrackingAdaptor::new(s.clone(), false);
    let p = mr.allocate(1000, 256, S).unwrap();
    let bogus = DevicePtr::new(0xdead_0000);
    // SAFETY: deliberately wrong: the adaptor must report it, not crash or forward.
    unsafe { mr.deallocate(bogus, 1000, 256, S) };
    assert_eq!(mr.bad_frees(), 1);
    assert_eq!(s.bad_frees(), 0, "an untracked free must not reach the upstream");
    assert_eq!(mr.allocated_bytes(), 1000, "no underflow");
    assert!(error_logged(&["untracked pointer", "0xdead0000"]));
    // SAFETY: p came from mr with these arguments.
    unsafe { mr.deallocate(p, 1000, 256, S) };
    assert_eq!(s.allocated_bytes(), 0);
}

#[test]
fn tracking_wrong_size_free_is_refused_and_the_allocation_stays_live() {
    captured_errors();
    let s = sim();
    let mr = TrackingAdaptor::new(s.clone(), false);
    let p = mr.allocate(1000, 256, S).unwrap();
    // SAFETY: deliberately the wrong size for p: reported and ignored.
    unsafe { mr.deallocate(p, 777, 256, S) };
    assert_eq!(mr.bad_frees(), 1);
    assert!(error_logged(&[
        "777 bytes",
        "1000 bytes",
        &p.to_string(),
        "ignored"
    ]));
    assert_eq!(s.bad_frees(), 0);
    assert!(s.allocated_bytes() >= 1000, "still allocated upstream");
    assert_eq!(mr.allocated_bytes(), 1000);
    assert_eq!(mr.outstanding_allocations().len(), 1);
    // SAFETY: the right size now: freed upstream.
    unsafe { mr.deallocate(p, 1000, 256, S) };
    assert_eq!(
        (s.allocated_bytes(), mr.allocated_bytes(), mr.bad_frees()),
        (0, 0, 1)
    );
}

// ---------------------------------------------------------------------------
// AlignedAdaptor
// ---------------------------------------------------------------------------

#[test]
fn aligned_invalid_alignment_errors() {
    for bad in [0usize, 3, 48, 257, 3000] {
        let e = AlignedAdaptor::new(sim(), bad, 0).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{bad}: {e}");
    }
    let mr = AlignedAdaptor::new(sim(), 4096, 0).unwrap();
    for bad in [0usize, 3, 48, 257, 4097] {
        assert!(mr.allocate(64, bad, S).is_err(), "alignment {bad} accepted");
    }
}

#[test]
fn aligned_small_alignments_raised_to_256() {
    for a in [1usize, 16, 128, 256] {
        assert_eq!(AlignedAdaptor::new(sim(), a, 0).unwrap().alignment(), 256);
    }
}

#[test]
fn aligned_passthrough_at_256_and_below_threshold() {
    let s = sim();
    let mr = AlignedAdaptor::new(s.clone(), 256, 0).unwrap();
    let p = mr.allocate(1000, 256, S).unwrap();
    assert_eq!(s.allocated_bytes(), 1024, "no over-allocation at 256");
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 1000, 256, S) };

    let s = sim();
    let tracked = TrackingAdaptor::new(s.clone(), false);
    let mr = AlignedAdaptor::new(tracked.clone(), 4096, 64 * KIB).unwrap();
    assert_eq!(mr.threshold(), 64 * KIB);
    let small = mr.allocate(1000, 256, S).unwrap();
    assert_eq!(
        tracked.outstanding_allocations()[&small].size,
        1000,
        "passed through"
    );
    let big = mr.allocate(64 * KIB, 256, S).unwrap();
    assert!(big.is_aligned(4096));
    let (orig, info) = tracked
        .outstanding_allocations()
        .into_iter()
        .find(|(p, _)| *p != small)
        .expect("the aligned block's upstream allocation");
    assert_eq!(info.size, 64 * KIB + 4096 - 256);
    assert!(orig <= big && big.addr() + (64 * KIB) as u64 <= orig.addr() + info.size as u64);
    // SAFETY: came from mr with these arguments.
    unsafe {
        mr.deallocate(small, 1000, 256, S);
        mr.deallocate(big, 64 * KIB, 256, S);
    }
    assert_eq!(s.allocated_bytes(), 0);
    assert_eq!(tracked.bad_frees(), 0);
}

fn check_real_alignment(alignment: usize) {
    let s = sim();
    let tracked = TrackingAdaptor::new(s.clone(), false);
    let mr = AlignedAdaptor::new(tracked.clone(), alignment, 0).unwrap();
    let mut live = Vec::new();
    for bytes in [
        1usize,
        100,
        1000,
        5000,
        alignment - 1,
        alignment,
        alignment + 1,
        3 * alignment,
    ] {
        // Misalign the simulated bump pointer so that aligning up is needed.
        let pad = s.allocate(256, 256, S).unwrap();
        let p = mr.allocate(bytes, 256, S).unwrap();
        assert!(p.is_aligned(alignment), "{bytes} bytes at {p:?}");
        live.push((p, bytes, pad));
    }
    let upstream: Vec<_> = tracked.outstanding_allocations().into_iter().collect();
    assert_eq!(upstream.len(), live.len());
    for &(p, bytes, _) in &live {
        let inside = upstream
            .iter()
            .any(|(o, i)| *o <= p && p.addr() + bytes as u64 <= o.addr() + i.size as u64);
        assert!(inside, "{p:?}+{bytes} is not inside an upstream block");
    }
    common::assert_disjoint(&live.iter().map(|&(p, b, _)| (p, b)).collect::<Vec<_>>());
    assert!(
        live.iter()
            .any(|&(p, _, _)| !upstream.iter().any(|(o, _)| *o == p)),
        "some pointer was moved"
    );
    for (p, bytes, pad) in live {
        // SAFETY: came from mr / s with these arguments.
        unsafe {
            mr.deallocate(p, bytes, 256, S);
            s.deallocate(pad, 256, 256, S);
        }
    }
    assert_eq!(s.allocated_bytes(), 0);
    assert_eq!(tracked.bad_frees(), 0);
}

#[test]
fn aligned_real_alignment_4096() {
    check_real_alignment(4096);
}

#[test]
fn aligned_real_alignment_1mib() {
    check_real_alignment(MIB);
}

#[test]
fn aligned_per_call_alignment() {
    let s = sim();
    let mr = AlignedAdaptor::new(s.clone(), 256, 0).unwrap();
    let _pad = s.allocate(256, 256, S).unwrap();
    let p = mr.allocate(100, 64 * KIB, S).unwrap();
    assert!(p.is_aligned(64 * KIB));
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 100, 64 * KIB, S) };
    assert_eq!(s.allocated_bytes(), 256);
}

#[test]
fn aligned_unknown_free_is_reported() {
    captured_errors();
    let s = sim();
    let mr = AlignedAdaptor::new(s.clone(), 4096, 0).unwrap();
    // SAFETY: deliberately bogus: must be reported, not forwarded.
    unsafe { mr.deallocate(DevicePtr::new(0xabc000), 10, 256, S) };
    assert!(error_logged(&["AlignedAdaptor", "0xabc000"]));
    assert_eq!(s.bad_frees(), 0);
}

#[test]
fn aligned_multithreaded() {
    let s = sim();
    let mr = AlignedAdaptor::new(s.clone(), 4096, 0).unwrap();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let mr = mr.clone();
            scope.spawn(move || {
                let mut rng = common::SplitMix64(t);
                let mut live = Vec::new();
                for _ in 0..1000 {
                    if rng.below(100) < 60 {
                        let b = 1 + rng.below(20 * KIB);
                        let p = mr.allocate(b, 256, S).unwrap();
                        assert!(p.is_aligned(4096));
                        live.push((p, b));
                    } else if let Some((p, b)) = live.pop() {
                        // SAFETY: came from mr with these arguments.
                        unsafe { mr.deallocate(p, b, 256, S) };
                    }
                }
                common::assert_disjoint(&live);
                for (p, b) in live {
                    // SAFETY: came from mr with these arguments.
                    unsafe { mr.deallocate(p, b, 256, S) };
                }
            });
        }
    });
    assert_eq!(s.allocated_bytes(), 0);
    assert_eq!(s.bad_frees(), 0);
}

// ---------------------------------------------------------------------------
// FailureCallbackAdaptor
// ---------------------------------------------------------------------------

#[test]
fn failure_callback_spills_and_retries_once() {
    let s = SimulatedMemoryResource::new(MIB);
    let spillable = Arc::new(Mutex::new(Some(s.allocate(768 * KIB, 256, S).unwrap())));
    let calls = Arc::new(Mutex::new(Vec::new()));
    let (s2, spill, c) = (s.clone(), spillable.clone(), calls.clone());
    let mr = FailureCallbackAdaptor::new(s.clone(), move |bytes| {
        c.lock().unwrap().push(bytes);
        match spill.lock().unwrap().take() {
            Some(p) => {
                // SAFETY: p came from s2 with these arguments and is no longer used.
                unsafe { s2.deallocate(p, 768 * KIB, 256, S) };
                true
            }
            None => false,
        }
    });
    let p = mr.allocate(512 * KIB, 256, S).expect("succeeds after spilling");
    assert_eq!(*calls.lock().unwrap(), [512 * KIB]);
    // Nothing left to spill: the callback gives up and the OOM comes back.
    let e = mr.allocate(768 * KIB, 256, S).unwrap_err();
    assert!(e.is_out_of_memory());
    assert_eq!(*calls.lock().unwrap(), [512 * KIB, 768 * KIB]);
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 512 * KIB, 256, S) };
}

#[test]
fn failure_callback_retry_count_and_error_filter() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mr = FailureCallbackAdaptor::new(SimulatedMemoryResource::new(MIB), move |_| {
        c.fetch_add(1, Ordering::SeqCst) < 4
    });
    assert!(mr.allocate(2 * MIB, 256, S).unwrap_err().is_out_of_memory());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        5,
        "4 retries, then the callback gives up"
    );
    // Errors other than out-of-memory do not call the callback.
    assert!(matches!(mr.allocate(64, 3, S), Err(Error::BadAlloc(_))));
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    // The alignment is forwarded.
    let p = mr.allocate(64, 4096, S).unwrap();
    assert!(p.is_aligned(4096));
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 64, 4096, S) };
}

// ---------------------------------------------------------------------------
// ThreadSafeAdaptor
// ---------------------------------------------------------------------------

#[test]
fn thread_safe_serialises_upstream_calls() {
    let s = sim();
    let busy = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let enter = {
        let (busy, overlaps) = (busy.clone(), overlaps.clone());
        move || {
            if busy.swap(true, Ordering::SeqCst) {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::yield_now();
        }
    };
    let leave = move || busy.store(false, Ordering::SeqCst);
    let (e1, l1, e2, l2, s1, s2) = (enter.clone(), leave.clone(), enter, leave, s.clone(), s.clone());
    let upstream = CallbackMemoryResource::new(
        move |b, a, st| {
            e1();
            let r = s1.allocate(b, a, st);
            l1();
            r
        },
        move |p, b, a, st| {
            e2();
            // SAFETY: the callback resource forwards frees of pointers it got from `s`.
            unsafe { s2.deallocate(p, b, a, st) };
            l2();
        },
    )
    .without_gpu();
    let mr = ThreadSafeAdaptor::new(upstream);
    common::threads8(&mr, 500, 4 * KIB);
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "upstream calls overlapped");
    assert_eq!(s.allocated_bytes(), 0);
}

// ---------------------------------------------------------------------------
// LoggingAdaptor
// ---------------------------------------------------------------------------

fn is_time(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 15
        && b[2] == b':'
        && b[5] == b':'
        && b[8] == b'.'
        && b.iter()
            .enumerate()
            .all(|(i, c)| [2, 5, 8].contains(&i) || c.is_ascii_digit())
        && t[0..2].parse::<u32>().unwrap() < 24
        && t[3..5].parse::<u32>().unwrap() < 60
        && t[6..8].parse::<u32>().unwrap() < 60
}

#[test]
fn logging_header_and_line_format() {
    let buf = SharedBuf::default();
    let mr = LoggingAdaptor::to_writer(sim(), buf.clone(), true).unwrap();
    // SAFETY: the simulated resource never passes stream handles to the driver.
    let stream = unsafe { CudaStreamView::from_raw(0x5a5a0) };
    let p = mr.allocate(1000, 256, stream).unwrap();
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 1000, 256, stream) };
    let text = buf.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[0], "Thread,Time,Action,Pointer,Size,Stream");
    assert_eq!(lines[0], LoggingAdaptor::header());
    let me = rmm::logger::thread_id().to_string();
    for (line, action) in [(lines[1], "allocate"), (lines[2], "free")] {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 6, "{line}");
        assert_eq!(f[0], me);
        assert!(is_time(f[1]), "time {:?}", f[1]);
        assert_eq!(f[2], action);
        assert_eq!(f[3], format!("0x{:x}", p.addr()));
        assert_eq!(f[4], "1000");
        assert_eq!(f[5], "0x5a5a0");
    }
}

#[test]
fn logging_allocate_failure_line() {
    let buf = SharedBuf::default();
    let mr = LoggingAdaptor::to_writer(SimulatedMemoryResource::new(MIB), buf.clone(), true).unwrap();
    let e = mr.allocate(2 * MIB, 256, S).unwrap_err();
    assert!(e.is_out_of_memory());
    let text = buf.text();
    let line = text.lines().nth(1).expect("a failure line");
    let f: Vec<&str> = line.split(',').collect();
    assert_eq!(
        &f[2..],
        &["allocate failure", "(nil)", "2097152", "0x0"],
        "{line}"
    );
}

#[test]
fn logging_free_is_logged_before_the_upstream_free() {
    let buf = SharedBuf::default();
    let s = sim();
    let (s1, s2, seen) = (s.clone(), s.clone(), buf.clone());
    let checked = Arc::new(AtomicUsize::new(0));
    let c = checked.clone();
    let upstream = CallbackMemoryResource::new(
        move |b, a, st| s1.allocate(b, a, st),
        move |p, b, a, st| {
            assert!(
                seen.text().contains(&format!(",free,{p},")),
                "free not yet logged"
            );
            c.fetch_add(1, Ordering::SeqCst);
            // SAFETY: the callback resource forwards frees of pointers it got from `s`.
            unsafe { s2.deallocate(p, b, a, st) };
        },
    )
    .without_gpu();
    let mr = LoggingAdaptor::to_writer(upstream, buf.clone(), true).unwrap();
    let p = mr.allocate(64, 256, S).unwrap();
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 64, 256, S) };
    assert_eq!(checked.load(Ordering::SeqCst), 1);
}

#[test]
fn logging_file_output_flush_and_env() {
    // The only test of this binary that touches RMM_LOG_FILE.
    std::env::remove_var("RMM_LOG_FILE");
    let e = LoggingAdaptor::new(sim(), None, false).unwrap_err();
    assert!(
        matches!(e, Error::Logic(_)) && e.to_string().contains("RMM_LOG_FILE"),
        "{e}"
    );

    let env_path = temp_path("env.csv");
    std::env::set_var("RMM_LOG_FILE", &env_path);
    let mr = LoggingAdaptor::new(sim(), None, true).unwrap();
    std::env::remove_var("RMM_LOG_FILE");
    assert_eq!(mr.path(), Some(env_path.as_path()));
    let p = mr.allocate(10, 256, S).unwrap();
    let text = std::fs::read_to_string(&env_path).unwrap();
    assert!(text.starts_with("Thread,Time,Action,Pointer,Size,Stream\n"));
    assert!(
        text.contains(&format!(",allocate,{p},10,0x0")),
        "auto-flushed: {text}"
    );
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 10, 256, S) };
    drop(mr);
    std::fs::remove_file(&env_path).unwrap();

    // Buffered: lines reach the file on flush (or drop).
    let path = temp_path("buffered.csv");
    let mr = LoggingAdaptor::new(sim(), Some(&path), false).unwrap();
    let p = mr.allocate(20, 256, S).unwrap();
    assert!(!std::fs::read_to_string(&path).unwrap().contains(",allocate,"));
    mr.flush().unwrap();
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains(&format!(",allocate,{p},20,")));
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 20, 256, S) };
    drop(mr);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "flushed on drop: {text}");
    std::fs::remove_file(&path).unwrap();

    let e = LoggingAdaptor::to_file(sim(), "/nonexistent-dir/x/log.csv", false).unwrap_err();
    assert!(
        matches!(&e, Error::Io { kind: std::io::ErrorKind::NotFound, context, .. } if context.contains("log.csv")),
        "{e}"
    );
}

#[test]
fn logging_multithreaded_lines_are_whole() {
    let buf = SharedBuf::default();
    let mr = LoggingAdaptor::to_writer(sim(), buf.clone(), false).unwrap();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let mr = mr.clone();
            scope.spawn(move || {
                for i in 0..500 {
                    let p = mr.allocate(1 + i, 256, S).unwrap();
                    // SAFETY: came from mr with these arguments.
                    unsafe { mr.deallocate(p, 1 + i, 256, S) };
                }
            });
        }
    });
    mr.flush().unwrap();
    let text = buf.text();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), 4000);
    let mut threads = std::collections::HashSet::new();
    for l in &lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 6, "{l}");
        assert!(f[2] == "allocate" || f[2] == "free");
        threads.insert(f[0].to_string());
    }
    assert_eq!(threads.len(), 4);
}

// ---------------------------------------------------------------------------
// GPU-specific adaptor tests
// ---------------------------------------------------------------------------

#[test]
fn gpu_aligned_memory_is_usable() {
    rmm_testing::require_gpu!();
    let stream = CudaStream::new().unwrap();
    for alignment in [4096usize, MIB] {
        let mr = AlignedAdaptor::new(CudaMemoryResource::new(), alignment, 0).unwrap();
        let mut live = Vec::new();
        for bytes in [1usize, 1000, alignment + 1, 3 * MIB] {
            let p = mr.allocate(bytes, 256, stream.view()).unwrap();
            assert!(p.is_aligned(alignment), "{bytes} bytes at {p:?}");
            common::touch(&mr, p, bytes, stream.view());
            live.push((p, bytes));
        }
        common::assert_disjoint(&live);
        for (p, b) in live {
            // SAFETY: came from mr with these arguments; the stream was synchronised by touch.
            unsafe { mr.deallocate(p, b, 256, stream.view()) };
        }
    }
}

#[test]
fn gpu_prefetch_managed_memory_to_current_device() {
    rmm_testing::require_gpu!();
    let device = rmm::device::current_device().unwrap();
    if !rmm::device::supports_concurrent_managed_access(device).unwrap() {
        eprintln!(
            "{}: device has no concurrent managed access; nothing to prefetch",
            device
        );
        return;
    }
    let stream = CudaStream::new().unwrap();
    let mr = PrefetchAdaptor::new(ManagedMemoryResource::new());
    let bytes = 4 * MIB;
    let p = mr.allocate(bytes, 256, stream.view()).unwrap();
    stream.synchronize().unwrap();
    let location = rmm::device::last_prefetch_location(p, bytes).unwrap();
    assert_eq!(location, device.value());
    // Plain managed memory without the adaptor was never prefetched.
    let plain = ManagedMemoryResource::new();
    let q = plain.allocate(bytes, 256, stream.view()).unwrap();
    assert_ne!(
        rmm::device::last_prefetch_location(q, bytes).unwrap(),
        device.value()
    );
    // SAFETY: came from these resources with these arguments; the stream is idle.
    unsafe {
        mr.deallocate(p, bytes, 256, stream.view());
        plain.deallocate(q, bytes, 256, stream.view());
    }
}

#[test]
fn gpu_prefetch_of_device_memory_is_a_silent_no_op() {
    captured_errors();
    rmm_testing::require_gpu!();
    let stream = CudaStream::new().unwrap();
    let mr = PrefetchAdaptor::new(CudaAsyncMemoryResource::new().unwrap());
    let p = mr.allocate(MIB, 256, stream.view()).unwrap();
    common::touch(&mr, p, MIB, stream.view());
    assert!(
        !error_logged(&["PrefetchAdaptor", &p.to_string()]),
        "prefetch of device memory reported an error"
    );
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, MIB, 256, stream.view()) };
    stream.synchronize().unwrap();
}

#[test]
fn gpu_logging_records_the_stream() {
    rmm_testing::require_gpu!();
    let stream = CudaStream::new().unwrap();
    let buf = SharedBuf::default();
    let mr = LoggingAdaptor::to_writer(CudaAsyncMemoryResource::new().unwrap(), buf.clone(), true).unwrap();
    let p = mr.allocate(4096, 256, stream.view()).unwrap();
    // SAFETY: came from mr with these arguments.
    unsafe { mr.deallocate(p, 4096, 256, stream.view()) };
    stream.synchronize().unwrap();
    let text = buf.text();
    let want = format!(",allocate,{p},4096,{:#x}", stream.view().as_raw());
    assert!(text.contains(&want), "{want} not in {text}");
}

#[test]
fn gpu_limiting_and_tracking_over_cuda_async() {
    rmm_testing::require_gpu!();
    let stream = CudaStream::new().unwrap();
    let tracked = TrackingAdaptor::new(CudaAsyncMemoryResource::new().unwrap(), false);
    let mr = LimitingAdaptor::new(tracked.clone(), 64 * MIB);
    let ptrs: Vec<_> = (0..4)
        .map(|_| mr.allocate(16 * MIB, 256, stream.view()).unwrap())
        .collect();
    assert!(mr.allocate(1, 256, stream.view()).unwrap_err().is_out_of_memory());
    assert_eq!(tracked.allocated_bytes(), 64 * MIB);
    // SAFETY: came from mr with these arguments; stream-ordered free.
    unsafe { mr.deallocate(ptrs[0], 16 * MIB, 256, stream.view()) };
    let p = mr
        .allocate(16 * MIB, 256, stream.view())
        .expect("room after a free");
    common::touch(&mr, p, 16 * MIB, stream.view());
    // SAFETY: came from mr with these arguments.
    unsafe {
        mr.deallocate(p, 16 * MIB, 256, stream.view());
        for &q in &ptrs[1..] {
            mr.deallocate(q, 16 * MIB, 256, stream.view());
        }
    }
    stream.synchronize().unwrap();
    assert_eq!(mr.allocated_bytes(), 0);
    assert!(tracked.outstanding_allocations().is_empty());
}
