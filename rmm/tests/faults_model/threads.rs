//! Several threads sharing one stack under faults.

use super::adaptors::{check_statistics, check_tracking};
use super::*;

/// Four threads share a stack over the faulty upstream, rebuilt every
/// round: one model of the live allocations for all of them, so an overlap
/// between threads is caught; `check` looks at the counters once they have
/// joined, the stack serves again with faults stopped, and the upstream
/// holds nothing after each drop.
fn threads_share<M: MemoryResource>(
    name: &str,
    build: impl Fn(&Upstream) -> rmm::Result<M>,
    check: impl Fn(&M, &Model, &Upstream),
) {
    const THREADS: u64 = 4;
    const ROUND: u64 = 4_000;
    let up = FaultyResource::new(SimulatedMemoryResource::new(64 * GIB));
    let total = rmm_testing::env::fault_ops();
    let failures = AtomicU64::new(0);
    for round in 0..total.div_ceil(ROUND) {
        up.fail(Trigger::rate(0.3, round));
        let mr = loop {
            match build(&up) {
                Ok(mr) => break mr,
                Err(e) => {
                    assert!(e.is_out_of_memory(), "{name}: {e}");
                    assert_eq!(up.live_bytes(), 0, "{name}: a failed build keeps upstream memory");
                    up.stop();
                }
            }
        };
        let model = Mutex::new(Model::default());
        std::thread::scope(|scope| {
            for t in 0..THREADS {
                let (mr, model, failures) = (&mr, &model, &failures);
                scope.spawn(move || {
                    thread_ops(
                        mr,
                        model,
                        failures,
                        SplitMix64(round * THREADS + t),
                        ROUND / THREADS,
                    )
                });
            }
        });
        let model = model.into_inner().unwrap();
        assert!(model.live.is_empty());
        check(&mr, &model, &up);
        up.stop();
        let p = mr.allocate(MIB, 256, stream(0)).expect("serves again");
        // SAFETY: allocated just above.
        unsafe { mr.deallocate(p, MIB, 256, stream(0)) };
        drop(mr);
        assert_eq!(
            (up.live_bytes(), up.bad_frees(), up.upstream().allocated_bytes()),
            (0, 0, 0),
            "{name}"
        );
    }
    let injected = up.injected();
    // Failures surface only from injected faults (a pool's halving retry absorbs some).
    let failures = failures.load(Ordering::Relaxed);
    assert!(
        failures <= injected && injected > 0,
        "{name}: {failures} failures, {injected} faults"
    );
    println!(
        "faults-model threads4({name}): ops={} faults_injected={injected} faults_survived={injected} \
         alloc_errors={failures} rounds={} leaks=0 overlaps=0",
        total.div_ceil(ROUND) * ROUND,
        total.div_ceil(ROUND)
    );
}

/// One thread's share of a round: allocations and frees of its own, each
/// recorded in the shared model; frees everything at the end.
fn thread_ops(
    mr: &impl MemoryResource,
    model: &Mutex<Model>,
    failures: &AtomicU64,
    mut rng: SplitMix64,
    ops: u64,
) {
    let mut mine: Vec<(u64, Live)> = Vec::new();
    let forget = |a: u64, live: &Live| {
        let mut m = model.lock().unwrap();
        m.live.remove(&a);
        m.live_bytes -= live.bytes;
    };
    for _ in 0..ops {
        if mine.len() >= MAX_LIVE / 4 || (!mine.is_empty() && rng.below(100) < 45) {
            let (a, live) = mine.swap_remove(rng.below(mine.len()));
            forget(a, &live);
            // SAFETY: allocated below with these arguments, freed once.
            unsafe { mr.deallocate(DevicePtr::new(a), live.bytes, live.alignment, stream(live.stream)) };
            continue;
        }
        let live = Live {
            bytes: request_size(&mut rng, 16 * MIB),
            alignment: alignment(&mut rng),
            stream: rng.below(4),
        };
        match mr.allocate(live.bytes, live.alignment, stream(live.stream)) {
            Ok(p) => {
                model.lock().unwrap().insert(p, live);
                mine.push((p.addr(), live));
            }
            Err(e) => {
                assert!(e.is_out_of_memory(), "{e}");
                failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    for (a, live) in mine {
        forget(a, &live);
        // SAFETY: allocated above with these arguments, freed once.
        unsafe { mr.deallocate(DevicePtr::new(a), live.bytes, live.alignment, stream(live.stream)) };
    }
}

#[test]
fn threads_share_a_pool_under_faults() {
    let build = |up: &Upstream| pool(up).map(ThreadSafeAdaptor::new);
    threads_share("thread_safe(pool)", build, |mr, model, up| {
        check_pool(mr.upstream(), model, up)
    });
}

/// Every request reaches the upstream: the statistics and tracking counters
/// stay exact while four threads' requests fail at random.
#[test]
fn threads_share_statistics_and_tracking_under_faults() {
    let build = |up: &Upstream| Ok(StatisticsAdaptor::new(TrackingAdaptor::new(up.clone(), false)));
    threads_share("statistics(tracking)", build, |mr, model, up| {
        let (bytes, count) = (mr.bytes_counter(), mr.allocations_counter());
        assert_eq!((bytes.value, count.value), (0, 0), "statistics after every free");
        check_statistics(mr, model);
        check_tracking(mr.upstream(), model);
        assert_eq!(up.live_bytes(), 0);
    });
}
