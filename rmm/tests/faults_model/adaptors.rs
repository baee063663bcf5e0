//! The adaptor stacks over a pool (and over the faulty upstream directly),
//! each with the check of its own counters.

use super::*;

/// Statistics counters: current values are the model's live bytes and
/// count, totals this epoch's successful allocations.
pub(super) fn check_statistics(stats: &StatisticsAdaptor<impl MemoryResource>, model: &Model) {
    let (bytes, count) = (stats.bytes_counter(), stats.allocations_counter());
    assert_eq!(bytes.value as usize, model.live_bytes, "statistics bytes");
    assert_eq!(count.value as usize, model.live.len(), "statistics count");
    assert_eq!(
        bytes.total as usize, model.allocated_total,
        "statistics total bytes"
    );
    assert_eq!(
        count.total as usize, model.allocations_total,
        "statistics total count"
    );
    assert_eq!(stats.bad_frees(), 0);
}

/// Tracking: the outstanding allocations are the model's.
pub(super) fn check_tracking(tracking: &TrackingAdaptor<impl MemoryResource>, model: &Model) {
    assert_eq!(tracking.allocated_bytes(), model.live_bytes, "tracking bytes");
    let outstanding = tracking.outstanding_allocations();
    assert_eq!(outstanding.len(), model.live.len(), "tracking count");
    for (p, info) in &outstanding {
        assert_eq!(
            model.live.get(&p.addr()).map(|l| l.bytes),
            Some(info.size),
            "tracking of {p}"
        );
    }
    assert_eq!(tracking.bad_frees(), 0);
}

#[test]
fn statistics_over_pool_survives_faults() {
    run(
        stack("statistics(pool)", 16 * MIB, |up| {
            Ok(Built {
                mr: SharedResource::new(StatisticsAdaptor::new(pool(up)?)),
                check: Box::new(|mr, model, up| {
                    let stats: &StatisticsAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    check_statistics(stats, model);
                    check_pool(stats.upstream(), model, up);
                }),
            })
        }),
        6,
    );
}

#[test]
fn tracking_over_pool_survives_faults() {
    run(
        stack("tracking(pool)", 16 * MIB, |up| {
            Ok(Built {
                mr: SharedResource::new(TrackingAdaptor::new(pool(up)?, false)),
                check: Box::new(|mr, model, up| {
                    let tracking: &TrackingAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    check_tracking(tracking, model);
                    check_pool(tracking.upstream(), model, up);
                }),
            })
        }),
        7,
    );
}

#[test]
fn limiting_over_pool_survives_faults() {
    let mut s = stack("limiting(pool)", 16 * MIB, |up| {
        Ok(Built {
            mr: SharedResource::new(LimitingAdaptor::new(pool(up)?, 256 * MIB)),
            check: Box::new(|mr, model, up| {
                let limiting: &LimitingAdaptor<PoolMemoryResource<Upstream>> =
                    mr.inner().downcast_ref().unwrap();
                let rounded: usize = model.live.values().map(|l| l.bytes.next_multiple_of(256)).sum();
                assert_eq!(limiting.allocated_bytes(), rounded, "limiting bytes");
                assert!(limiting.allocated_bytes() <= limiting.allocation_limit());
                assert_eq!(limiting.bad_frees(), 0);
                check_pool(limiting.upstream(), model, up);
            }),
        })
    });
    s.may_refuse = true;
    run(s, 8);
}

/// Counts the log's lines by action.
#[derive(Debug, Default, Clone)]
struct LogLines(Arc<Mutex<LogCounts>>);

#[derive(Debug, Default)]
struct LogCounts {
    partial: Vec<u8>,
    by_action: BTreeMap<String, usize>,
}

impl Write for LogLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut c = self.0.lock().unwrap();
        c.partial.extend_from_slice(buf);
        while let Some(end) = c.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = c.partial.drain(..=end).collect();
            let action = String::from_utf8_lossy(&line)
                .split(',')
                .nth(2)
                .unwrap_or("")
                .to_string();
            *c.by_action.entry(action).or_default() += 1;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn logging_over_pool_survives_faults() {
    run(
        stack("logging(pool)", 16 * MIB, |up| {
            let lines = LogLines::default();
            let logging = LoggingAdaptor::to_writer(pool(up)?, lines.clone(), true)?;
            Ok(Built {
                mr: SharedResource::new(logging),
                check: Box::new(move |mr, model, up| {
                    let logging: &LoggingAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    logging.flush().unwrap();
                    assert_eq!(logging.write_errors(), 0);
                    let c = lines.0.lock().unwrap();
                    let n = |a: &str| c.by_action.get(a).copied().unwrap_or(0);
                    assert_eq!(n("allocate"), model.allocations_total, "logged allocations");
                    assert_eq!(n("free"), model.frees, "logged frees");
                    assert_eq!(n("allocate failure"), model.failures, "logged failures");
                    check_pool(logging.upstream(), model, up);
                }),
            })
        }),
        9,
    );
}

#[test]
fn failure_callback_over_pool_survives_faults() {
    run(
        stack("failure_callback(pool)", 16 * MIB, |up| {
            // Retries once per failing request (odd calls), then gives up.
            let calls = Arc::new(AtomicU64::new(0));
            let seen = Arc::clone(&calls);
            let adaptor = FailureCallbackAdaptor::new(pool(up)?, move |_| {
                seen.fetch_add(1, Ordering::Relaxed).is_multiple_of(2)
            });
            Ok(Built {
                mr: SharedResource::new(adaptor),
                check: Box::new(move |mr, model, up| {
                    let adaptor: &FailureCallbackAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    // Every out-of-memory error that left the adaptor is
                    // one verdict to give up (the even calls); errors of
                    // other kinds never reach the callback.
                    let gave_up = calls.load(Ordering::Relaxed) / 2;
                    assert_eq!(
                        gave_up as usize, model.oom_failures,
                        "callback verdicts vs failures"
                    );
                    check_pool(adaptor.upstream(), model, up);
                }),
            })
        }),
        10,
    );
}

#[test]
fn aligned_over_pool_survives_faults() {
    run(
        stack("aligned(pool)", 16 * MIB, |up| {
            let aligned = AlignedAdaptor::new(pool(up)?, 4096, 64 * KIB)?;
            Ok(Built {
                mr: SharedResource::new(aligned),
                check: Box::new(|mr, model, up| {
                    let aligned: &AlignedAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    for (&a, l) in &model.live {
                        assert!(
                            l.bytes < 64 * KIB || a % 4096 == 0,
                            "{a:#x}+{} above the threshold",
                            l.bytes
                        );
                    }
                    assert_eq!(aligned.upstream().pool_size(), up.live_bytes());
                }),
            })
        }),
        11,
    );
}

#[test]
fn thread_safe_over_pool_survives_faults() {
    run(
        stack("thread_safe(pool)", 16 * MIB, |up| {
            Ok(Built {
                mr: SharedResource::new(ThreadSafeAdaptor::new(pool(up)?)),
                check: Box::new(|mr, model, up| {
                    let ts: &ThreadSafeAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    check_pool(ts.upstream(), model, up);
                }),
            })
        }),
        12,
    );
}

#[test]
fn prefetch_over_pool_survives_faults() {
    // Over a simulated upstream the adaptor issues no prefetch; what is
    // tested is that its allocation path forwards every failure.
    run(
        stack("prefetch(pool)", 16 * MIB, |up| {
            Ok(Built {
                mr: SharedResource::new(PrefetchAdaptor::new(pool(up)?)),
                check: Box::new(|mr, model, up| {
                    let pf: &PrefetchAdaptor<PoolMemoryResource<Upstream>> =
                        mr.inner().downcast_ref().unwrap();
                    check_pool(pf.upstream(), model, up);
                }),
            })
        }),
        13,
    );
}

/// Every adaptor stacked straight over the faulty upstream: each request
/// reaches it, so every fault surfaces through all of them.
#[test]
fn all_adaptors_over_the_faulty_upstream_survive_faults() {
    type Inner = PrefetchAdaptor<ThreadSafeAdaptor<AlignedAdaptor<Upstream>>>;
    type Top = StatisticsAdaptor<TrackingAdaptor<LimitingAdaptor<Inner>>>;
    let mut s = stack(
        "statistics(tracking(limiting(prefetch(thread_safe(aligned)))))",
        16 * MIB,
        |up| {
            let inner = PrefetchAdaptor::new(ThreadSafeAdaptor::new(AlignedAdaptor::new(
                up.clone(),
                4096,
                64 * KIB,
            )?));
            let top: Top = StatisticsAdaptor::new(TrackingAdaptor::new(
                LimitingAdaptor::new(inner, 512 * MIB),
                false,
            ));
            Ok(Built {
                mr: SharedResource::new(top),
                check: Box::new(|mr, model, up| {
                    let top: &Top = mr.inner().downcast_ref().unwrap();
                    check_statistics(top, model);
                    check_tracking(top.upstream(), model);
                    assert_eq!(up.live_allocations(), model.live.len(), "upstream allocations");
                }),
            })
        },
    );
    s.may_refuse = true;
    run(s, 14);
}
