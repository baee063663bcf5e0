//! Out-of-memory reports, observers and snapshots (`rmm::mr::forensics`)
//! over the simulated resource, each number computed from what the test
//! allocated; one GPU test of a real pool's report.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmm::mr::{
    add_oom_observer, remove_oom_observer, snapshot, write_oom_reports_to, ArenaMemoryResource, ArenaOptions,
    BinningMemoryResource, BlockState, CudaMemoryResource, FailureCallbackAdaptor, FixedSizeMemoryResource,
    FixedSizeOptions, LayerState, LimitingAdaptor, MemoryResource, OomReport, PoolMemoryResource,
    PoolOptions, SharedResource, SimulatedMemoryResource, Snapshot, StatisticsAdaptor, TrackingAdaptor,
};
use rmm::{CudaStreamView, DevicePtr, Error};

const S: CudaStreamView<'static> = CudaStreamView::DEFAULT;

fn round(n: usize) -> usize {
    n.div_ceil(256) * 256
}

/// Frees what the test allocated from `mr` with these arguments.
fn free(mr: &dyn MemoryResource, p: DevicePtr, n: usize, alignment: usize, stream: CudaStreamView) {
    // SAFETY: every call passes a live allocation of `mr` with the
    // arguments it was made with, once.
    unsafe { mr.deallocate(p, n, alignment, stream) }
}

fn report(e: &Error) -> &OomReport {
    e.oom_report().unwrap_or_else(|| panic!("no report on {e:?}"))
}

fn layer<'a>(r: &'a OomReport, name: &str) -> &'a LayerState {
    r.snapshot
        .layers
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no layer {name} in {r}"))
}

/// The free gaps of a chunk `[start, start + size)` around `live`
/// (address, rounded size): the model of a coalescing pool's free list.
fn gaps(start: u64, size: usize, live: &[(u64, usize)]) -> Vec<usize> {
    let mut live = live.to_vec();
    live.sort_unstable();
    let mut at = start;
    let mut out = Vec::new();
    for (a, n) in live {
        if a > at {
            out.push((a - at) as usize);
        }
        at = a + n as u64;
    }
    let end = start + size as u64;
    if end > at {
        out.push((end - at) as usize);
    }
    out
}

#[test]
fn pool_report_names_reserved_used_largest_free_and_fragmentation() {
    let size = 4 << 20;
    let pool = PoolMemoryResource::new(
        SimulatedMemoryResource::new(1 << 30),
        PoolOptions::default()
            .initial_pool_size(size)
            .maximum_pool_size(size),
    )
    .unwrap();
    let sizes = [300_000usize, 700_000, 123_456, 1 << 20, 50_000, 900_000];
    let ptrs: Vec<DevicePtr> = sizes.iter().map(|&n| pool.allocate(n, 256, S).unwrap()).collect();
    // Free every other one: holes of different sizes.
    let mut live = Vec::new();
    for (i, (&p, &n)) in ptrs.iter().zip(&sizes).enumerate() {
        if i % 2 == 0 {
            free(&pool, p, n, 256, S);
        } else {
            live.push((p.addr(), round(n)));
        }
    }
    let used: usize = live.iter().map(|l| l.1).sum();
    let chunk = snapshot(&pool).layers[0].chunks.clone().unwrap();
    assert_eq!(chunk.len(), 1);
    let free_gaps = gaps(chunk[0].address, chunk[0].size, &live);
    let largest = *free_gaps.iter().max().unwrap();
    let request = largest + 256;
    let e = pool.allocate(request, 256, S).unwrap_err();
    let r = report(&e);
    assert_eq!(
        (r.request.size, r.request.alignment, r.request.stream),
        (request, 256, 0)
    );
    assert_eq!(r.failed_layer, "pool");
    let l = layer(r, "pool");
    assert_eq!(l.reserved_bytes, Some(size));
    assert_eq!(l.used_bytes, Some(used));
    assert_eq!(l.free_bytes, Some(size - used));
    assert_eq!(l.largest_free_block, Some(largest));
    assert_eq!(l.free_bytes_by_stream, Some(vec![(0, size - used)]));
    let frag = 1.0 - largest as f64 / (size - used) as f64;
    assert!((l.fragmentation().unwrap() - frag).abs() < 1e-12);
    let free_blocks: Vec<usize> = l
        .blocks
        .as_ref()
        .unwrap()
        .iter()
        .filter(|b| b.state == BlockState::Free)
        .map(|b| b.size)
        .collect();
    assert_eq!(free_blocks, free_gaps);
    // The simulated device under it holds the one chunk.
    assert_eq!(layer(r, "simulated").used_bytes, Some(size));
    let text = e.to_string();
    assert!(text.starts_with("out_of_memory: failed to allocate"), "{text}");
    assert!(
        text.contains(&format!("largest free block {largest} B")),
        "{text}"
    );
    assert!(
        text.contains("pool (PoolMemoryResource)  <- refused the request"),
        "{text}"
    );
    for (p, n) in live {
        free(&pool, DevicePtr::new(p), n, 256, S);
    }
}

#[test]
fn limiting_report_names_the_limit_and_what_is_left() {
    let limit = 10_000;
    let mr = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), limit);
    let a = mr.allocate(3000, 256, S).unwrap();
    let e = mr.allocate(8000, 256, S).unwrap_err();
    let r = report(&e);
    assert_eq!(r.failed_layer, "limiting");
    let l = layer(r, "limiting");
    let used = mr.allocated_bytes();
    assert_eq!(used, round(3000));
    assert_eq!(
        (l.limit_bytes, l.used_bytes, l.free_bytes),
        (Some(limit), Some(used), Some(limit - used))
    );
    assert_eq!(layer(r, "simulated").used_bytes, Some(round(3000)));
    free(&mr, a, 3000, 256, S);
}

#[test]
fn fixed_size_report_counts_blocks_and_chunks() {
    let block = 64 << 10;
    let n_blocks = 4;
    // The upstream gives exactly one chunk.
    let upstream = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), block * n_blocks);
    let mr = FixedSizeMemoryResource::new(
        upstream,
        FixedSizeOptions::default()
            .block_size(block)
            .blocks_to_preallocate(n_blocks),
    )
    .unwrap();
    let ptrs: Vec<DevicePtr> = (0..n_blocks)
        .map(|_| mr.allocate(1000, 256, S).unwrap())
        .collect();
    let e = mr.allocate(1000, 256, S).unwrap_err();
    let r = report(&e);
    // The block list is empty and the upstream refuses another chunk: the
    // report names the limiting adaptor, with the fixed-size layer in front.
    let names: Vec<&str> = r.snapshot.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["fixed_size", "limiting", "simulated"]);
    assert_eq!(r.failed_layer, "limiting");
    let l = layer(r, "fixed_size");
    assert_eq!(l.reserved_bytes, Some(block * n_blocks));
    assert_eq!(l.used_bytes, Some(block * n_blocks));
    assert_eq!(l.free_bytes, Some(0));
    let used_blocks = l
        .blocks
        .as_ref()
        .unwrap()
        .iter()
        .filter(|b| b.state == BlockState::Used)
        .count();
    assert_eq!(used_blocks, n_blocks);
    assert_eq!(layer(r, "limiting").free_bytes, Some(0));
    for p in ptrs {
        free(&mr, p, 1000, 256, S);
    }
}

#[test]
fn arena_report_names_its_size_and_free_bytes() {
    let size = 8 << 20;
    let arena = ArenaMemoryResource::new(
        SimulatedMemoryResource::new(1 << 30),
        ArenaOptions::default().arena_size(size).superblock_size(1 << 20),
    )
    .unwrap();
    let sizes = [5000usize, 70_000, 3 << 20];
    let ptrs: Vec<DevicePtr> = sizes
        .iter()
        .map(|&n| arena.allocate(n, 256, S).unwrap())
        .collect();
    let e = arena.allocate(size, 256, S).unwrap_err();
    let r = report(&e);
    assert_eq!(r.failed_layer, "arena");
    let l = layer(r, "arena");
    assert_eq!(l.reserved_bytes, Some(size));
    assert_eq!(l.free_bytes, Some(arena.free_bytes()));
    assert_eq!(l.used_bytes, Some(size - arena.free_bytes()));
    let used: usize = sizes.iter().map(|&n| round(n)).sum();
    assert_eq!(
        size - arena.free_bytes(),
        used,
        "the arena hands out 256-byte rounded blocks"
    );
    assert!(l.largest_free_block.unwrap() >= arena.global_free().1);
    for (p, n) in ptrs.into_iter().zip(sizes) {
        free(&arena, p, n, 256, S);
    }
}

#[test]
fn binning_report_sums_its_bins_and_walks_to_the_upstream() {
    let upstream = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), 64 << 20);
    let mr = BinningMemoryResource::with_fixed_bins(upstream, 10, 12).unwrap();
    let sizes = [1000usize, 2000, 4000, 3000];
    let ptrs: Vec<DevicePtr> = sizes.iter().map(|&n| mr.allocate(n, 256, S).unwrap()).collect();
    let e = mr.allocate(128 << 20, 256, S).unwrap_err();
    let r = report(&e);
    let names: Vec<&str> = r.snapshot.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["binning", "limiting", "simulated"]);
    assert_eq!(r.failed_layer, "limiting");
    let l = layer(r, "binning");
    // Each request takes one block of its bin (the next power of two from 1 KiB).
    let used: usize = sizes.iter().map(|&n| n.next_power_of_two().max(1024)).sum();
    assert_eq!(l.used_bytes, Some(used));
    let reserved: usize = l.chunks.as_ref().unwrap().iter().map(|c| c.size).sum();
    assert_eq!(l.reserved_bytes, Some(reserved));
    assert_eq!(l.free_bytes, Some(reserved - used));
    // The bins' chunks came through the limiting adaptor.
    assert_eq!(layer(r, "limiting").used_bytes, Some(reserved));
    for (p, n) in ptrs.into_iter().zip(sizes) {
        free(&mr, p, n, 256, S);
    }
}

#[test]
fn adaptors_above_the_failure_put_their_state_in_front_with_live_sites() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let mr = StatisticsAdaptor::new(TrackingAdaptor::new(LimitingAdaptor::new(sim, 1 << 20), true));
    let a = mr.allocate(100_000, 256, S).unwrap();
    let b = mr.allocate(200_000, 256, S).unwrap();
    let e = mr.allocate(1 << 20, 256, S).unwrap_err();
    let r = report(&e);
    let names: Vec<&str> = r.snapshot.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["statistics", "tracking", "limiting", "simulated"]);
    assert_eq!(r.failed_layer, "limiting");
    let c = layer(r, "statistics").counters.unwrap();
    assert_eq!((c.current_bytes, c.current_count), (300_000, 2));
    assert_eq!(r.snapshot.live_allocations.len(), 2);
    let live_bytes: usize = r.largest_live_sites.iter().map(|s| s.bytes).sum();
    assert_eq!(live_bytes, 300_000);
    assert!(r
        .largest_live_sites
        .iter()
        .all(|s| s.backtrace.as_ref().is_some_and(|f| !f.is_empty())));
    assert!(e.to_string().contains("largest live allocation sites"));
    free(&mr, a, 100_000, 256, S);
    free(&mr, b, 200_000, 256, S);
}

#[test]
fn errors_with_reports_stay_clone_and_eq() {
    let mr = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), 1000);
    let e = mr.allocate(5000, 256, S).unwrap_err();
    assert_eq!(e.clone(), e);
    assert!(matches!(e, Error::OutOfMemory { requested: 5000, .. }));
    assert_ne!(e, Error::out_of_memory(5000, "x"));
}

/// Keys every layer object of the JSON has (docs/snapshots.md), null or not.
const LAYER_KEYS: [&str; 15] = [
    "name",
    "type",
    "reserved_bytes",
    "used_bytes",
    "free_bytes",
    "largest_free_block",
    "fragmentation",
    "free_bytes_by_stream",
    "limit_bytes",
    "chunks",
    "blocks",
    "graph_memory",
    "counters",
    "upstream",
    "name",
];

fn check_schema(v: &serde_json::Value) {
    assert_eq!(v["schema"], "rmm-snapshot");
    assert_eq!(v["version"], 1);
    assert!(v["time"].is_string() && v["unix_time_ns"].is_u64());
    let mut at = &v["resource"];
    let mut n = 0;
    while !at.is_null() {
        for k in LAYER_KEYS {
            assert!(at.get(k).is_some(), "layer {} has no {k}", at["name"]);
        }
        for b in at["blocks"].as_array().into_iter().flatten() {
            assert!(b["address"].as_str().unwrap().starts_with("0x"));
            assert!(b["size"].is_u64());
            assert!(["free", "used"].contains(&b["state"].as_str().unwrap()));
        }
        for (s, bytes) in at["free_bytes_by_stream"].as_object().into_iter().flatten() {
            assert!(s.starts_with("0x") && bytes.is_u64());
        }
        at = &at["upstream"];
        n += 1;
    }
    assert!(n > 0);
    assert!(v["live_allocations"].is_array());
}

#[test]
fn snapshot_json_round_trips_and_follows_the_schema() {
    let pool = PoolMemoryResource::new(
        SimulatedMemoryResource::new(1 << 30),
        PoolOptions::default().initial_pool_size(1 << 20),
    )
    .unwrap();
    let mr = StatisticsAdaptor::new(TrackingAdaptor::new(pool, false));
    // SAFETY: simulated resources only use a stream's handle as a key.
    let stream = unsafe { CudaStreamView::from_raw(0x1234) };
    let a = mr.allocate(1000, 256, S).unwrap();
    let b = mr.allocate(5000, 256, stream).unwrap();
    free(&mr, b, 5000, 256, stream);
    let snap = snapshot(&mr);
    let text = snap.to_json();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    check_schema(&v);
    assert_eq!(v["live_allocations"][0]["size"], 1000);
    let live = &v["live_allocations"][0];
    assert_eq!(live["backtrace"], serde_json::Value::Null);
    assert_eq!(live["stream"], "0x0");
    assert_eq!(live["thread"], rmm::logger::thread_id());
    assert_eq!(live["time"].as_str().map(str::len), Some("00:00:00.000000".len()));
    let pool_json = &v["resource"]["upstream"]["upstream"];
    assert_eq!(pool_json["name"], "pool");
    assert_eq!(pool_json["free_bytes_by_stream"]["0x1234"], round(5000));
    assert_eq!(Snapshot::from_json(&text).unwrap(), snap);
    assert!(Snapshot::from_json("{\"schema\":\"rmm-snapshot\",\"version\":2}").is_err());
    assert!(Snapshot::from_json("not json").is_err());
    // The report's JSON carries the same snapshot object.
    let e = mr.allocate(1 << 40, 256, S).unwrap_err();
    let rv: serde_json::Value = serde_json::from_str(&report(&e).to_json()).unwrap();
    assert_eq!(rv["schema"], "rmm-oom-report");
    assert_eq!(rv["request"]["size"], 1u64 << 40);
    check_schema(&rv["snapshot"]);
    free(&mr, a, 1000, 256, S);
}

#[test]
fn observers_see_each_failure_once_before_the_retry() {
    // A size no other test asks for: observers are process wide.
    const ASK: usize = 777_777_664;
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    let ev = events.clone();
    let id = add_oom_observer(move |r| {
        if r.request.size == ASK {
            ev.lock()
                .unwrap()
                .push(format!("observe:{}", r.snapshot.layers[0].name));
        }
    });
    let ev = events.clone();
    let tries = AtomicUsize::new(0);
    let mr = FailureCallbackAdaptor::new(
        SharedResource::new(SimulatedMemoryResource::new(1 << 20)),
        move |_bytes| {
            ev.lock().unwrap().push("callback".into());
            tries.fetch_add(1, Ordering::SeqCst) < 2
        },
    );
    let outer = SharedResource::new(mr);
    assert!(outer.allocate(ASK, 256, S).is_err());
    remove_oom_observer(id);
    let got = events.lock().unwrap().clone();
    let want: Vec<String> = (0..3)
        .flat_map(|_| ["observe:failure_callback".to_string(), "callback".to_string()])
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_pool_halving_its_growth_is_not_an_observed_failure() {
    const ASK: usize = 3 << 20;
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let id = add_oom_observer(move |r| {
        if r.request.size == ASK || r.request.size == 2 * ASK {
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    // The upstream has room for the request but not for the pool's first
    // (doubled) growth attempt: the pool halves and succeeds.
    let upstream = SharedResource::new(LimitingAdaptor::new(
        SimulatedMemoryResource::new(1 << 30),
        ASK + (1 << 20),
    ));
    let pool = PoolMemoryResource::new(upstream, PoolOptions::default().initial_pool_size(1 << 20)).unwrap();
    let top = SharedResource::new(pool);
    let p = top.allocate(ASK, 256, S).unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 0);
    // A real failure is seen once.
    assert!(top.allocate(2 * ASK, 256, S).is_err());
    remove_oom_observer(id);
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    free(&top, p, ASK, 256, S);
}

#[test]
fn the_report_file_option_writes_a_parseable_report() {
    const ASK: usize = 555_555_584;
    let dir = std::env::temp_dir().join(format!("rmm-oom-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let id = write_oom_reports_to(&dir);
    let mr = SharedResource::new(LimitingAdaptor::new(
        SimulatedMemoryResource::new(1 << 30),
        1 << 20,
    ));
    let e = mr.allocate(ASK, 256, S).unwrap_err();
    remove_oom_observer(id);
    let mine: Vec<serde_json::Value> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f.unwrap().path()).unwrap()).unwrap())
        .filter(|v: &serde_json::Value| v["request"]["size"] == ASK)
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["schema"], "rmm-oom-report");
    assert_eq!(mine[0]["failed_layer"], "limiting");
    assert_eq!(mine[0]["unix_time_ns"], report(&e).snapshot.unix_time_ns);
    check_schema(&mine[0]["snapshot"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gpu_pool_out_of_memory_report_names_the_pool() {
    rmm_testing::require_gpu!();
    let size = 64 << 20;
    let pool = PoolMemoryResource::new(
        CudaMemoryResource::new(),
        PoolOptions::default()
            .initial_pool_size(size)
            .maximum_pool_size(size),
    )
    .unwrap();
    let a = pool.allocate(40 << 20, 256, S).unwrap();
    let e = pool.allocate(40 << 20, 256, S).unwrap_err();
    let r = report(&e);
    assert_eq!(r.failed_layer, "pool");
    let l = layer(r, "pool");
    assert_eq!(l.reserved_bytes, Some(size));
    assert_eq!(l.used_bytes, Some(40 << 20));
    assert_eq!(l.largest_free_block, Some(size - (40 << 20)));
    assert_eq!(r.snapshot.layers.last().unwrap().name, "cuda");
    assert!(e.to_string().contains("refused the request"));
    free(&pool, a, 40 << 20, 256, S);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// A pool of one chunk, random allocations and frees: the snapshot's
    /// used bytes, free blocks and largest free block are those of a model
    /// that knows only the live blocks (every gap between them is one
    /// coalesced free block).
    #[test]
    fn pool_snapshots_match_the_gap_model(
        sizes in proptest::collection::vec(1usize..200_000, 1..40),
        frees in proptest::collection::vec(proptest::bool::ANY, 40),
    ) {
        let size = 16 << 20;
        let pool = PoolMemoryResource::new(
            SimulatedMemoryResource::new(1 << 30),
            PoolOptions::default().initial_pool_size(size).maximum_pool_size(size),
        )
        .unwrap();
        let mut live = Vec::new();
        for (i, &n) in sizes.iter().enumerate() {
            let p = pool.allocate(n, 256, S).unwrap();
            if frees[i] {
                free(&pool, p, n, 256, S);
            } else {
                live.push((p, n));
            }
        }
        let blocks: Vec<(u64, usize)> = live.iter().map(|&(p, n)| (p.addr(), round(n))).collect();
        let l = snapshot(&pool).layers.remove(0);
        let chunk = l.chunks.clone().unwrap()[0];
        let model = gaps(chunk.address, chunk.size, &blocks);
        let used: usize = blocks.iter().map(|b| b.1).sum();
        proptest::prop_assert_eq!(l.used_bytes, Some(used));
        proptest::prop_assert_eq!(l.free_bytes, Some(size - used));
        proptest::prop_assert_eq!(l.largest_free_block, Some(model.iter().copied().max().unwrap_or(0)));
        let free_sizes: Vec<usize> = l.blocks.as_ref().unwrap().iter()
            .filter(|b| b.state == BlockState::Free).map(|b| b.size).collect();
        proptest::prop_assert_eq!(free_sizes, model);
        let mut used_blocks: Vec<(u64, usize)> = l.blocks.unwrap().iter()
            .filter(|b| b.state == BlockState::Used).map(|b| (b.address, b.size)).collect();
        let mut want = blocks.clone();
        want.sort_unstable();
        used_blocks.sort_unstable();
        proptest::prop_assert_eq!(used_blocks, want);
        for (p, n) in live {
            free(&pool, p, n, 256, S);
        }
    }
}
