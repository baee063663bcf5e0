//! Replays that start from a snapshot (`replay_from_snapshot`): a program
//! snapshotted halfway, its log from then on, and the replay of that log
//! over a fresh resource preloaded with the snapshot's live allocations
//! reach the peak the whole run reached.

use rmm::mr::{
    snapshot, LoggingAdaptor, MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource,
    Snapshot, TrackingAdaptor,
};
use rmm::{CudaStreamView, DevicePtr};
use rmm_replay::{parse_log, replay, replay_from_snapshot, snapshot_allocations};

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn free(mr: &dyn MemoryResource, p: DevicePtr, n: usize) {
    // SAFETY: every call passes a live allocation of `mr` made with `n`
    // bytes and alignment 256, once.
    unsafe { mr.deallocate(p, n, 256, S) }
}

#[test]
fn a_log_that_starts_after_a_snapshot_replays_from_it() {
    let path = std::env::temp_dir().join(format!("rmm-replay-snap-{}.csv", std::process::id()));
    let tracked = TrackingAdaptor::new(SimulatedMemoryResource::new(1 << 30), false);
    // Before the snapshot: three allocations, one freed.
    let before = [10_000usize, 20_000, 30_000];
    let mut live: Vec<(DevicePtr, usize)> = before
        .iter()
        .map(|&n| (tracked.allocate(n, 256, S).unwrap(), n))
        .collect();
    let (p, n) = live.remove(1);
    free(&tracked, p, n);
    let snap = Snapshot::from_json(&snapshot(&tracked).to_json()).unwrap();
    let preload = snapshot_allocations(&snap);
    assert_eq!(preload.iter().map(|a| a.1).sum::<usize>(), 40_000);
    // After it, logged: one more allocation, then everything freed.
    let logged = LoggingAdaptor::new(tracked.clone(), Some(&path), true).unwrap();
    let extra = logged.allocate(50_000, 256, S).unwrap();
    let peak = 40_000 + 50_000;
    free(&logged, extra, 50_000);
    for (p, n) in live {
        free(&logged, p, n);
    }
    logged.flush().unwrap();
    let events = parse_log(std::io::BufReader::new(std::fs::File::open(&path).unwrap())).unwrap();
    let _ = std::fs::remove_file(&path);

    let fresh =
        PoolMemoryResource::new(SimulatedMemoryResource::new(1 << 30), PoolOptions::default()).unwrap();
    let r = replay_from_snapshot(&snap, &events, &fresh);
    assert_eq!((r.preloaded_allocations, r.preload_failures), (2, 0));
    assert_eq!(
        r.unmatched_frees, 0,
        "the log's frees of pre-snapshot memory find it"
    );
    assert_eq!(r.peak_bytes, peak);
    assert_eq!(r.leaked_allocations, 0);
    // Without the snapshot the same log frees memory it never saw.
    let plain = replay(&events, &SimulatedMemoryResource::new(1 << 30));
    assert_eq!((plain.unmatched_frees, plain.peak_bytes), (2, 50_000));
}

#[test]
fn without_a_tracking_adaptor_the_used_blocks_are_preloaded() {
    let pool =
        PoolMemoryResource::new(SimulatedMemoryResource::new(1 << 30), PoolOptions::default()).unwrap();
    let a = pool.allocate(1000, 256, S).unwrap();
    let b = pool.allocate(3000, 256, S).unwrap();
    let snap = snapshot(&pool);
    let mut got = snapshot_allocations(&snap);
    got.sort_unstable();
    let mut want = vec![(a.addr(), 1024), (b.addr(), 3072)];
    want.sort_unstable();
    assert_eq!(got, want);
    let r = replay_from_snapshot(&snap, &[], &SimulatedMemoryResource::new(1 << 30));
    assert_eq!(
        (r.preloaded_allocations, r.peak_bytes, r.leaked_allocations),
        (2, 4096, 2)
    );
    free(&pool, a, 1000);
    free(&pool, b, 3000);
}
