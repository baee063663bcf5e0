//! The replay tool: logs written by `LoggingAdaptor` replayed over the
//! simulated resource (round trips), an RMM-format fixture, fragmentation
//! reports (the `rmm-replay` program is tested in tools/tests/programs/replay_program.rs).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;
use std::sync::{Arc, Mutex};

use rmm::mr::{FreeBlockStats, LoggingAdaptor, MemoryResource, SimulatedMemoryResource, StatisticsAdaptor};
use rmm::{CudaStreamView, DevicePtr, Error};
use rmm_replay::by_name::{self, ByNameOptions};
use rmm_replay::{parse_log, replay, Action, Event};
use rmm_testing::SplitMix64;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;
const S: CudaStreamView = CudaStreamView::DEFAULT;

/// A log in RMM's format (embedded, so the test binary runs anywhere).
const FIXTURE: &str = include_str!("data/rmm_log.csv");

fn fixture_events() -> Vec<Event> {
    parse_log(FIXTURE.as_bytes()).unwrap()
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rmm-replay-{}-{name}", std::process::id()))
}

fn read_log(path: &std::path::Path) -> Vec<Event> {
    parse_log(BufReader::new(File::open(path).unwrap())).unwrap()
}

/// The peak of requested bytes outstanding, computed straight from the log order.
fn model_peak(events: &[Event]) -> usize {
    let mut live = BTreeMap::new();
    let (mut cur, mut peak) = (0usize, 0usize);
    for e in events {
        match e.action {
            Action::Allocate => {
                live.insert(e.pointer, e.size);
                cur += e.size;
                peak = peak.max(cur);
            }
            Action::Free => cur -= live.remove(&e.pointer).unwrap(),
            Action::AllocateFailure => {}
        }
    }
    peak
}

#[test]
fn round_trip_single_thread_same_peak() {
    let path = temp_path("single.csv");
    let original = SimulatedMemoryResource::new(256 * MIB);
    let logged = LoggingAdaptor::to_file(original.clone(), &path, false).unwrap();
    let mr = StatisticsAdaptor::new(logged.clone());
    let mut rng = SplitMix64(5);
    let mut live = Vec::new();
    for _ in 0..3000 {
        if live.is_empty() || rng.below(100) < 55 {
            let b = 1 + rng.below(256 * KIB);
            live.push((mr.allocate(b, 256, S).unwrap(), b));
        } else {
            let (p, b) = live.swap_remove(rng.below(live.len()));
            // SAFETY: p came from mr with these arguments.
            unsafe { mr.deallocate(p, b, 256, S) };
        }
    }
    // One logged failure, and some allocations left outstanding (a leak in the log).
    assert!(mr.allocate(1 << 40, 256, S).is_err());
    let leaked: Vec<_> = live.drain(..live.len() / 2).collect();
    for (p, b) in live {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
    logged.flush().unwrap();

    let events = read_log(&path);
    let replayed = SimulatedMemoryResource::new(256 * MIB);
    let report = replay(&events, &replayed);
    assert_eq!(report.threads, 1);
    assert_eq!(report.events, events.len());
    assert_eq!(report.peak_bytes as i64, mr.bytes_counter().peak);
    assert_eq!(replayed.peak_bytes(), original.peak_bytes());
    assert_eq!(report.failed_allocations, 0);
    assert_eq!(report.logged_failures, 1);
    assert_eq!(report.unmatched_frees, 0);
    assert_eq!(report.leaked_allocations, leaked.len());
    assert_eq!(report.leaked_bytes, leaked.iter().map(|&(_, b)| b).sum::<usize>());
    assert_eq!(replayed.allocated_bytes(), 0, "leaks are freed after the replay");
    assert_eq!(report.free_blocks_at_peak, None);
    assert!(report.to_string().contains("fragmentation at peak:  n/a"));
    for (p, b) in leaked {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn round_trip_multithreaded_keeps_order() {
    let path = temp_path("multi.csv");
    let logged = LoggingAdaptor::to_file(SimulatedMemoryResource::new(GIB), &path, false).unwrap();
    // Pointers move between threads: allocated on one, freed on another.
    let handoff: Arc<Mutex<Vec<(DevicePtr, usize)>>> = Arc::default();
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (mr, handoff) = (logged.clone(), handoff.clone());
            scope.spawn(move || {
                let mut rng = SplitMix64(t);
                for _ in 0..500 {
                    if rng.below(100) < 55 {
                        let b = 1 + rng.below(64 * KIB);
                        let p = mr.allocate(b, 256, S).unwrap();
                        handoff.lock().unwrap().push((p, b));
                    } else {
                        let taken = {
                            let mut h = handoff.lock().unwrap();
                            let n = h.len();
                            (n > 0).then(|| h.swap_remove(rng.below(n)))
                        };
                        if let Some((p, b)) = taken {
                            // SAFETY: p came from mr with these arguments, freed once.
                            unsafe { mr.deallocate(p, b, 256, S) };
                        }
                    }
                }
            });
        }
    });
    for (p, b) in handoff.lock().unwrap().drain(..) {
        // SAFETY: p came from logged with these arguments.
        unsafe { logged.deallocate(p, b, 256, S) };
    }
    logged.flush().unwrap();
    let events = read_log(&path);
    let threads: std::collections::HashSet<_> = events.iter().map(|e| e.thread).collect();
    assert_eq!(threads.len(), 5, "4 workers and the main thread");
    let replayed = SimulatedMemoryResource::new(GIB);
    let report = replay(&events, &replayed);
    assert_eq!(report.threads, 5);
    assert_eq!(report.peak_bytes, model_peak(&events));
    assert_eq!(report.failed_allocations, 0);
    assert_eq!(
        report.unmatched_frees, 0,
        "every free found its allocation: order was kept"
    );
    assert_eq!(report.leaked_allocations, 0);
    assert_eq!(replayed.allocated_bytes(), 0);
    assert_eq!(replayed.bad_frees(), 0);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn replay_on_a_smaller_device_reports_failures() {
    let events = fixture_events();
    // The fixture peaks at 2004608 bytes; 1.5 MiB cannot hold the 2 MB block.
    let small = SimulatedMemoryResource::new(3 * MIB / 2);
    let report = replay(&events, &small);
    assert_eq!(report.failed_allocations, 1);
    assert_eq!(
        report.unmatched_frees, 1,
        "the free of the failed block is skipped"
    );
    assert_eq!(small.allocated_bytes(), 0);
    assert_eq!(small.bad_frees(), 0);
}

#[test]
fn rmm_format_fixture() {
    let events = fixture_events();
    assert_eq!(events.len(), 10);
    assert_eq!(events[0].pointer, 0x7fa6_b400_0000);
    assert_eq!(events[3].action, Action::AllocateFailure);
    assert_eq!(events[3].pointer, 0);
    assert_eq!(events[3].size, 1 << 40);
    assert_eq!(events[7].stream, 0x55d2_c0f1_a2b0);
    // Thread ids are renumbered in order of appearance.
    assert_eq!(
        events.iter().map(|e| e.thread).collect::<Vec<_>>(),
        [0, 1, 0, 2, 1, 2, 0, 2, 1, 2]
    );
    let sim = SimulatedMemoryResource::new(GIB);
    let report = replay(&events, &sim);
    assert_eq!(report.events, 10);
    assert_eq!(report.threads, 3);
    assert_eq!(report.peak_bytes, 2_004_608);
    assert_eq!(report.logged_failures, 1);
    assert_eq!(report.failed_allocations, 0);
    assert_eq!(report.unmatched_frees, 0);
    assert_eq!((report.leaked_allocations, report.leaked_bytes), (1, 512));
    assert_eq!(report.non_default_streams, 2);
    // Peak of the simulated device in 256-byte units: 1024 was freed before
    // 512 was allocated, so the peak is 512 + 2000128 + 4096.
    assert_eq!(sim.peak_bytes(), 512 + 2_000_128 + 4096);
    assert_eq!(sim.allocated_bytes(), 0);
}

/// A first-fit allocator over a fixed range that knows its free blocks, to
/// check the fragmentation report.
#[derive(Debug, Clone)]
struct FirstFit(Arc<Mutex<BTreeMap<u64, u64>>>);

impl FirstFit {
    const BASE: u64 = 1 << 20;
    fn new(size: u64) -> Self {
        FirstFit(Arc::new(Mutex::new(BTreeMap::from([(Self::BASE, size)]))))
    }
}

impl MemoryResource for FirstFit {
    fn allocate(&self, bytes: usize, _alignment: usize, _stream: CudaStreamView) -> rmm::Result<DevicePtr> {
        let size = bytes.next_multiple_of(256) as u64;
        let mut free = self.0.lock().unwrap();
        let Some((&at, &len)) = free.iter().find(|(_, &len)| len >= size) else {
            return Err(Error::OutOfMemory {
                requested: bytes,
                reason: "FirstFit".into(),
                report: None,
            });
        };
        free.remove(&at);
        if len > size {
            free.insert(at + size, len - size);
        }
        Ok(DevicePtr::new(at))
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, _alignment: usize, _stream: CudaStreamView) {
        let size = bytes.next_multiple_of(256) as u64;
        let mut free = self.0.lock().unwrap();
        let (mut at, mut len) = (ptr.addr(), size);
        if let Some(next) = free.remove(&(at + len)) {
            len += next;
        }
        if let Some((&prev, &plen)) = free.range(..at).next_back() {
            if prev + plen == at {
                free.remove(&prev);
                at = prev;
                len += plen;
            }
        }
        free.insert(at, len);
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<FirstFit>()
            .is_some_and(|o| Arc::ptr_eq(&o.0, &self.0))
    }
    fn is_simulated(&self) -> bool {
        true
    }
    fn free_block_stats(&self) -> Option<FreeBlockStats> {
        let free = self.0.lock().unwrap();
        Some(FreeBlockStats {
            free_bytes: free.values().sum::<u64>() as usize,
            largest_free_block: free.values().copied().max().unwrap_or(0) as usize,
            free_blocks: free.len(),
        })
    }
}

#[test]
fn fragmentation_at_peak() {
    let log = "Thread,Time,Action,Pointer,Size,Stream\n\
               1,00:00:00.000000,allocate,0x1000,1024,0x0\n\
               1,00:00:00.000001,allocate,0x2000,1024,0x0\n\
               1,00:00:00.000002,allocate,0x3000,1024,0x0\n\
               1,00:00:00.000003,allocate,0x4000,1024,0x0\n\
               1,00:00:00.000004,free,0x1000,1024,0x0\n\
               1,00:00:00.000005,free,0x3000,1024,0x0\n\
               1,00:00:00.000006,allocate,0x5000,4096,0x0\n\
               1,00:00:00.000007,free,0x5000,4096,0x0\n";
    let events = parse_log(log.as_bytes()).unwrap();
    let mr = FirstFit::new(16 * 1024);
    let report = replay(&events, &mr);
    // Peak (6 KiB live) after the 4 KiB block: holes of 1 KiB at A and C, 8 KiB at the end.
    assert_eq!(report.peak_bytes, 6 * 1024);
    assert_eq!(
        report.free_blocks_at_peak,
        Some(FreeBlockStats {
            free_bytes: 10 * 1024,
            largest_free_block: 8 * 1024,
            free_blocks: 3
        })
    );
    assert!(
        report.to_string().contains("fragmentation at peak:  20.00%"),
        "{report}"
    );
    // Leaked blocks (B and D) were freed: everything coalesced again.
    assert_eq!(report.leaked_allocations, 2);
    assert_eq!(mr.free_block_stats().unwrap().free_blocks, 1);
}

#[test]
fn gpu_replay_of_the_fixture_over_cuda_resources() {
    rmm_testing::require_gpu!();
    let events = fixture_events();
    for name in ["cuda", "cuda_async", "managed"] {
        let mr = by_name::resource(name, &ByNameOptions::default()).unwrap();
        let report = replay(&events, &mr);
        assert_eq!(report.peak_bytes, 2_004_608, "{name}");
        assert_eq!(report.failed_allocations, 0, "{name}");
        assert_eq!(report.leaked_allocations, 1, "{name}");
    }
}

/// A resource that panics on its third allocation.
#[derive(Debug, Clone)]
struct PanicsOnThird(SimulatedMemoryResource, Arc<Mutex<usize>>);

impl MemoryResource for PanicsOnThird {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> rmm::Result<DevicePtr> {
        let n = {
            let mut n = self.1.lock().unwrap();
            *n += 1;
            *n
        };
        assert!(n != 3, "deliberate panic in the resource");
        self.0.allocate(bytes, alignment, stream)
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { self.0.deallocate(ptr, bytes, alignment, stream) }
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<Self>()
            .is_some_and(|o| Arc::ptr_eq(&o.1, &self.1))
    }
    fn is_simulated(&self) -> bool {
        true
    }
}

#[test]
fn a_panicking_resource_does_not_hang_the_replay() {
    let events = fixture_events();
    let mr = PanicsOnThird(SimulatedMemoryResource::new(GIB), Arc::default());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| replay(&events, &mr)));
    assert!(r.is_err(), "the panic is passed on");
}

#[test]
fn replay_over_simulated_sub_allocators_reports_fragmentation() {
    let events = fixture_events();
    for name in ["simulated-pool", "simulated-binning", "simulated-arena"] {
        let mr = by_name::resource(name, &ByNameOptions::default().simulated_size(GIB)).unwrap();
        let report = replay(&events, mr.inner());
        assert_eq!(report.peak_bytes, 2_004_608, "{name}");
        assert_eq!(report.failed_allocations, 0, "{name}");
        if name == "simulated-pool" {
            let stats = report
                .free_blocks_at_peak
                .expect("the pool reports its free blocks");
            assert!(stats.largest_free_block <= stats.free_bytes);
            assert!(stats.free_bytes == 0 || stats.free_blocks >= 1);
            let pool = mr
                .inner()
                .downcast_ref::<rmm::mr::PoolMemoryResource<rmm::mr::SharedResource>>()
                .expect("a pool");
            // Everything is freed after the replay: the whole pool is free again.
            assert_eq!(pool.free_bytes(), pool.pool_size());
            let live_at_peak = 512 + 2_000_128 + 4096;
            assert!(stats.free_bytes + live_at_peak <= pool.pool_size());
            let after = mr.free_block_stats().unwrap();
            assert_eq!(after.free_bytes, pool.pool_size());
        }
    }
    assert!(matches!(
        by_name::resource("no-such", &ByNameOptions::default().simulated_size(GIB)),
        Err(rmm::Error::InvalidArgument(_))
    ));
}
