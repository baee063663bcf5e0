//! Every resource under CUDA graph capture (#34): memory allocated during a
//! capture belongs to the graph, stays reserved while the graph exists, is
//! reused only within it, and goes back once the graph is destroyed.
//!
//! A binary of its own, whose tests take turns ([`one_at_a_time`]): a
//! capture is invalidated by device-wide work of other threads while it is
//! under way. Seen on the H200 (2026-12-02): with the tests in parallel, a
//! pool constructor's synchronisation of the legacy default stream failed
//! with `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` while another test captured a
//! blocking stream, and, with non-blocking streams, captures of three tests
//! were invalidated while other tests built and dropped resources (device
//! synchronisations, `cuMemFree`). Every other thread's `cuMemAlloc` is
//! refused in global capture mode, as the driver defines it. So the tests
//! capture non-blocking streams in `CaptureMode::ThreadLocal` (the
//! capturing thread's own synchronous calls are the ones rmm must keep
//! legal, and thread-local mode refuses them just the same), one test at a
//! time.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmm::graph::{begin_capture, begin_capture_in, CaptureMode, GraphPool};
use rmm::mr::{
    AlignedAdaptor, ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CallbackMemoryResource,
    CudaMemoryResource, FailureCallbackAdaptor, FixedSizeMemoryResource, FixedSizeOptions, GraphMemoryStats,
    LimitingAdaptor, LoggingAdaptor, ManagedMemoryResource, MemoryResource, PinnedHostMemoryResource,
    PoolMemoryResource, PoolOptions, PrefetchAdaptor, SamHeadroomMemoryResource, SharedResource,
    StatisticsAdaptor, SystemMemoryResource, ThreadSafeAdaptor, TrackingAdaptor, VirtualPoolMemoryResource,
    VirtualPoolOptions,
};
use rmm::{CudaStream, CudaStreamView, DevicePtr};

#[macro_use]
#[path = "common/mod.rs"]
mod common;

use common::{GIB, MIB};

const TL: CaptureMode = CaptureMode::ThreadLocal;

/// Held for a whole test: no other test's device-wide work can invalidate
/// its captures (see the module docs). A failed test poisons nothing: the
/// lock is taken over.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}
const N: usize = MIB;

fn fill(p: DevicePtr, n: usize, v: u8, s: CudaStreamView) {
    // SAFETY: the callers pass live device-accessible memory of `n` bytes.
    unsafe { rmm::launch::memset_async(p, u32::from(v), 1, n, s) }.expect("memset");
}

fn copy(dst: DevicePtr, src: DevicePtr, n: usize, s: CudaStreamView) {
    // SAFETY: the callers pass live memory of `n` bytes each.
    unsafe { rmm::launch::memcpy_async(dst, src, n, s) }.expect("memcpy");
}

fn read(p: DevicePtr, n: usize, s: CudaStreamView) -> Vec<u8> {
    let mut host = vec![0u8; n];
    // SAFETY: `p` is live memory of `n` bytes; `host` outlives the copy (the
    // stream is synchronised before it is read).
    unsafe { rmm::launch::memcpy_async(DevicePtr::new(host.as_mut_ptr() as u64), p, n, s) }.expect("read");
    s.synchronize().expect("sync");
    host
}

fn all(bytes: &[u8], v: u8) -> bool {
    bytes.iter().all(|&b| b == v)
}

fn disjoint(a: DevicePtr, b: DevicePtr, n: usize) -> bool {
    a.addr() + n as u64 <= b.addr() || b.addr() + n as u64 <= a.addr()
}

fn stats(name: &str, mr: &dyn MemoryResource) -> GraphMemoryStats {
    mr.graph_memory()
        .unwrap_or_else(|| panic!("{name}: reports no graph memory"))
}

/// Polls until the resource holds no graph pool (the driver destroys a
/// graph's user objects asynchronously); panics after 10 s.
fn wait_released(name: &str, mr: &dyn MemoryResource) -> GraphMemoryStats {
    let start = Instant::now();
    loop {
        let g = stats(name, mr);
        if g.pools == 0 && g.reserved_bytes == 0 {
            return g;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{name}: graph memory not released 10 s after the graph was destroyed: {g:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The trap of #34, over `mr`: y allocated and written during a capture,
/// freed after it; z of the same size allocated and filled with 7; a replay
/// must leave z intact. Then the graph's memory goes back.
fn trap(name: &str, mr: &dyn MemoryResource) {
    let s = CudaStream::non_blocking().expect("stream");
    let sv = s.view();
    let x = mr.allocate(N, 256, sv).unwrap_or_else(|e| panic!("{name}: {e}"));
    fill(x, N, 3, sv);
    sv.synchronize().unwrap();
    let before = stats(name, mr);
    assert_eq!(before.pools, 0, "{name}: {before:?}");

    let cap = begin_capture(sv, TL).expect("begin capture");
    let y = mr
        .allocate(N, 256, sv)
        .unwrap_or_else(|e| panic!("{name}: allocate during capture: {e}"));
    copy(y, x, N, sv);
    // Freed and reused inside the capture, on the capturing stream.
    let t = mr.allocate(4096, 256, sv).unwrap();
    fill(t, 4096, 9, sv);
    // SAFETY: `t` came from `mr` with these arguments; nothing later uses it.
    unsafe { mr.deallocate(t, 4096, 256, sv) };
    let t2 = mr.allocate(4096, 256, sv).unwrap();
    assert_eq!(
        t2, t,
        "{name}: memory freed inside the capture is reused inside it"
    );
    // SAFETY: as above.
    unsafe { mr.deallocate(t2, 4096, 256, sv) };
    let graph = cap.end().unwrap_or_else(|e| panic!("{name}: end capture: {e}"));
    let exec = graph.instantiate().expect("instantiate");
    let during = stats(name, mr);
    assert!(
        during.pools == 1 && during.reserved_bytes >= N && during.live_bytes >= N && during.graphs_alive == 1,
        "{name}: {during:?}"
    );

    // SAFETY: every allocation the graph uses is live (x) or its own (y).
    unsafe { exec.launch(sv) }.expect("launch");
    assert!(all(&read(y, N, sv), 3), "{name}: y after a replay");

    // SAFETY: `y` came from `mr` with these arguments; the host no longer uses it.
    unsafe { mr.deallocate(y, N, 256, sv) };
    let z = mr.allocate(N, 256, sv).unwrap();
    assert!(disjoint(y, z, N), "{name}: z {z} reuses the graph's y {y}");
    fill(z, N, 7, sv);
    sv.synchronize().unwrap();
    // SAFETY: as above; the graph's y stays reserved for it.
    unsafe { exec.launch(sv) }.expect("launch");
    assert!(all(&read(z, N, sv), 7), "{name}: the replay overwrote z");

    // SAFETY: `z` came from `mr` with these arguments; the stream is synchronised.
    unsafe { mr.deallocate(z, N, 256, sv) };
    drop(exec);
    drop(graph);
    let after = wait_released(name, mr);
    assert_eq!((after.live_bytes, after.bad_frees), (0, 0), "{name}: {after:?}");
    // SAFETY: `x` came from `mr` with these arguments; no graph uses it any more.
    unsafe { mr.deallocate(x, N, 256, sv) };
    sv.synchronize().unwrap();
}

fn pool() -> PoolMemoryResource<CudaMemoryResource> {
    PoolMemoryResource::new(
        CudaMemoryResource::new(),
        PoolOptions::default().initial_pool_size(64 * MIB),
    )
    .expect("pool")
}

fn arena() -> ArenaMemoryResource<CudaMemoryResource> {
    ArenaMemoryResource::new(CudaMemoryResource::new(), ArenaOptions::default().arena_size(GIB))
        .expect("arena")
}

fn binning() -> BinningMemoryResource<CudaMemoryResource> {
    BinningMemoryResource::with_fixed_bins(CudaMemoryResource::new(), 18, 22).expect("binning")
}

fn fixed() -> FixedSizeMemoryResource<CudaMemoryResource> {
    FixedSizeMemoryResource::new(
        CudaMemoryResource::new(),
        FixedSizeOptions::default().block_size(2 * MIB),
    )
    .expect("fixed size")
}

/// The resources whose graph memory is their own (the stateless cuda,
/// managed and pinned resources share one per kind: see
/// `stateless_resources_keep_the_trap_shut`).
fn stateful_resources() -> Vec<(&'static str, SharedResource)> {
    let cuda = CudaMemoryResource::new();
    let mut v: Vec<(&'static str, SharedResource)> = vec![
        ("pool", SharedResource::new(pool())),
        ("fixed_size", SharedResource::new(fixed())),
        ("binning", SharedResource::new(binning())),
        ("arena", SharedResource::new(arena())),
        (
            "callback",
            SharedResource::new(CallbackMemoryResource::new(
                move |b, a, s| cuda.allocate(b, a, s),
                // SAFETY: the callback resource passes on frees of what `cuda` allocated.
                move |p, b, a, s| unsafe { cuda.deallocate(p, b, a, s) },
            )),
        ),
        (
            "statistics(tracking(pool))",
            SharedResource::new(StatisticsAdaptor::new(TrackingAdaptor::new(pool(), false))),
        ),
        (
            "aligned(thread_safe(arena))",
            SharedResource::new(
                AlignedAdaptor::new(ThreadSafeAdaptor::new(arena()), 4096, 0).expect("aligned"),
            ),
        ),
        (
            "limiting(binning)",
            SharedResource::new(LimitingAdaptor::new(binning(), GIB)),
        ),
        (
            "failure_callback(fixed_size)",
            SharedResource::new(FailureCallbackAdaptor::new(fixed(), |_| false)),
        ),
    ];
    match VirtualPoolMemoryResource::new(VirtualPoolOptions::default().initial_pool_size(64 * MIB)) {
        Ok(vm) => v.push(("vm_pool", SharedResource::new(vm))),
        Err(e) => rmm_testing::report_skip("graph_memory::vm_pool", &e.to_string()),
    }
    match SystemMemoryResource::new() {
        Ok(sys) => v.push(("system", SharedResource::new(sys))),
        Err(e) => rmm_testing::report_skip("graph_memory::system", &e.to_string()),
    }
    match SamHeadroomMemoryResource::new(GIB) {
        Ok(sam) => v.push(("sam_headroom", SharedResource::new(sam))),
        Err(e) => rmm_testing::report_skip("graph_memory::sam_headroom", &e.to_string()),
    }
    v
}

#[test]
fn every_resource_keeps_the_trap_shut() {
    rmm_testing::require_gpu!("graph_memory::every_resource_keeps_the_trap_shut");
    let _turn = one_at_a_time();
    for (name, mr) in stateful_resources() {
        trap(name, &mr);
    }
}

#[test]
fn stateless_resources_keep_the_trap_shut() {
    rmm_testing::require_gpu!("graph_memory::stateless_resources_keep_the_trap_shut");
    let _turn = one_at_a_time();
    trap("cuda", &CudaMemoryResource::new());
    trap("managed", &ManagedMemoryResource::new());
    trap("pinned", &PinnedHostMemoryResource::new());
    trap(
        "statistics(cuda)",
        &StatisticsAdaptor::new(CudaMemoryResource::new()),
    );
    trap(
        "prefetch(managed)",
        &PrefetchAdaptor::new(ManagedMemoryResource::new()),
    );
    // Memory of one instance may be freed through another (they compare equal).
    let s = CudaStream::non_blocking().unwrap();
    let cap = begin_capture(s.view(), TL).unwrap();
    let p = CudaMemoryResource::new().allocate(N, 256, s.view()).unwrap();
    fill(p, N, 1, s.view());
    let graph = cap.end().unwrap();
    // SAFETY: from an equal resource with these arguments; the graph never ran.
    unsafe { CudaMemoryResource::new().deallocate(p, N, 256, s.view()) };
    assert_eq!(stats("cuda", &CudaMemoryResource::new()).live_bytes, 0);
    drop(graph);
    wait_released("cuda", &CudaMemoryResource::new());
}

/// Two captures given one GraphPool share its memory; a capture with
/// another pool does not.
#[test]
fn captures_sharing_a_graph_pool_share_its_memory() {
    rmm_testing::require_gpu!("graph_memory::captures_sharing_a_graph_pool_share_its_memory");
    let _turn = one_at_a_time();
    let mr = pool();
    let s = CudaStream::non_blocking().unwrap();
    let sv = s.view();
    let out = CudaMemoryResource::new()
        .allocate(2 * N, 256, CudaStreamView::DEFAULT)
        .unwrap();
    let shared = GraphPool::new();
    let mut execs = Vec::new();
    let mut seen = Vec::new();
    for (i, v) in [(0usize, 11u8), (1, 22)] {
        let cap = begin_capture_in(sv, TL, &shared).unwrap();
        let a = mr.allocate(N, 256, sv).unwrap();
        fill(a, N, v, sv);
        copy(out.offset(i * N), a, N, sv);
        // SAFETY: from `mr` with these arguments; later work of this graph does not use it.
        unsafe { mr.deallocate(a, N, 256, sv) };
        let g = cap.end().unwrap();
        execs.push((g.instantiate().unwrap(), g));
        seen.push(a);
    }
    assert_eq!(
        seen[0], seen[1],
        "the second capture reuses the first one's block of the shared pool"
    );
    let g = stats("pool", &mr);
    assert_eq!((g.pools, g.graphs_alive), (1, 1), "{g:?}");
    let cap = begin_capture(sv, TL).unwrap();
    let other = mr.allocate(N, 256, sv).unwrap();
    assert!(
        disjoint(other, seen[0], N),
        "another pool's capture gets other memory"
    );
    // SAFETY: from `mr` with these arguments.
    unsafe { mr.deallocate(other, N, 256, sv) };
    let lone = cap.end().unwrap();
    assert_eq!(stats("pool", &mr).pools, 2);
    for (e, _) in &execs {
        // SAFETY: `out` is live; the graphs of one pool run one after the other in `sv` order.
        unsafe { e.launch(sv) }.unwrap();
    }
    let host = read(out, 2 * N, sv);
    assert!(all(&host[..N], 11) && all(&host[N..], 22));
    drop(lone);
    drop(execs);
    wait_released("pool", &mr);
    // SAFETY: from the cuda resource with these arguments; no graph uses it any more.
    unsafe { CudaMemoryResource::new().deallocate(out, 2 * N, 256, CudaStreamView::DEFAULT) };
}

/// A pool with no free memory grows (cuMemAlloc) during a capture, which
/// stays valid; the growth goes back to the pool once the graph is gone.
#[test]
fn a_pool_grows_during_capture() {
    rmm_testing::require_gpu!("graph_memory::a_pool_grows_during_capture");
    let _turn = one_at_a_time();
    let upstream = StatisticsAdaptor::new(CudaMemoryResource::new());
    let mr = PoolMemoryResource::new(upstream.clone(), PoolOptions::default()).unwrap();
    let s = CudaStream::non_blocking().unwrap();
    let sv = s.view();
    let cap = begin_capture(sv, TL).unwrap();
    let y = mr.allocate(64 * MIB, 256, sv).unwrap();
    fill(y, 64 * MIB, 4, sv);
    let graph = cap.end().expect("the capture survives the pool's growth");
    assert!(upstream.bytes_counter().value >= 64 * MIB as i64);
    let exec = graph.instantiate().unwrap();
    // SAFETY: the graph uses only its own memory.
    unsafe { exec.launch(sv) }.unwrap();
    assert!(all(&read(y, 4096, sv), 4));
    // SAFETY: from `mr` with these arguments; the stream is synchronised.
    unsafe { mr.deallocate(y, 64 * MIB, 256, sv) };
    drop(exec);
    drop(graph);
    wait_released("pool", &mr);
    assert_eq!(mr.free_bytes(), mr.pool_size(), "every byte is back in the pool");
}

/// A free of memory allocated before the capture, on the capturing stream,
/// is deferred until the graph is gone: no eager allocation gets it.
#[test]
fn a_free_during_capture_waits_for_the_graph() {
    rmm_testing::require_gpu!("graph_memory::a_free_during_capture_waits_for_the_graph");
    let _turn = one_at_a_time();
    let mr = pool();
    let s = CudaStream::non_blocking().unwrap();
    let sv = s.view();
    let x = mr.allocate(N, 256, sv).unwrap();
    let cap = begin_capture(sv, TL).unwrap();
    fill(x, N, 5, sv);
    // SAFETY: from `mr` with these arguments; freed in the graph's order.
    unsafe { mr.deallocate(x, N, 256, sv) };
    let graph = cap.end().unwrap();
    let exec = graph.instantiate().unwrap();
    assert_eq!(stats("pool", &mr).deferred_frees, 1);
    let z = mr.allocate(N, 256, sv).unwrap();
    assert!(disjoint(x, z, N), "x is still the graph's");
    fill(z, N, 7, sv);
    // SAFETY: the graph writes x, which stays reserved.
    unsafe { exec.launch(sv) }.unwrap();
    assert!(all(&read(z, N, sv), 7));
    drop(exec);
    drop(graph);
    let g = wait_released("pool", &mr);
    assert_eq!(g.deferred_frees, 0);
    // SAFETY: from `mr` with these arguments; the stream is synchronised.
    unsafe { mr.deallocate(z, N, 256, sv) };
    assert_eq!(mr.bad_frees(), 0);
}

/// A few thousand allocate/free pairs in one graph reuse one chunk and
/// replay.
#[test]
fn thousands_of_pairs_in_one_graph() {
    rmm_testing::require_gpu!("graph_memory::thousands_of_pairs_in_one_graph");
    let _turn = one_at_a_time();
    for (name, mr) in [
        ("pool", SharedResource::new(pool())),
        ("arena", SharedResource::new(arena())),
        ("binning", SharedResource::new(binning())),
    ] {
        let s = CudaStream::non_blocking().unwrap();
        let sv = s.view();
        let out = CudaMemoryResource::new()
            .allocate(4096, 256, CudaStreamView::DEFAULT)
            .unwrap();
        let cap = begin_capture(sv, TL).unwrap();
        for i in 0..3000usize {
            let bytes = 256 + (i % 7) * 512;
            let p = mr.allocate(bytes, 256, sv).unwrap();
            fill(p, bytes, (i % 251) as u8, sv);
            if i == 2999 {
                copy(out, p, 256, sv);
            }
            // SAFETY: from `mr` with these arguments; later work does not use it.
            unsafe { mr.deallocate(p, bytes, 256, sv) };
        }
        let graph = cap.end().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(graph.node_count().unwrap() >= 3000);
        let g = stats(name, &mr);
        assert!(g.reserved_bytes <= 4 * MIB && g.live_bytes == 0, "{name}: {g:?}");
        let exec = graph.instantiate().unwrap();
        for _ in 0..3 {
            // SAFETY: `out` is live; the rest is the graph's own memory.
            unsafe { exec.launch(sv) }.unwrap();
        }
        assert!(all(&read(out, 256, sv), (2999 % 251) as u8), "{name}");
        drop(exec);
        drop(graph);
        wait_released(name, &mr);
        // SAFETY: from the cuda resource; no graph uses it any more.
        unsafe { CudaMemoryResource::new().deallocate(out, 4096, 256, CudaStreamView::DEFAULT) };
    }
}

#[derive(Clone, Default)]
struct SharedLog(Arc<Mutex<Vec<u8>>>);

impl Write for SharedLog {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Statistics, tracking and logging count and log graph memory as any
/// other: an allocation when made, a free when freed.
#[test]
fn adaptors_count_and_log_graph_memory() {
    rmm_testing::require_gpu!("graph_memory::adaptors_count_and_log_graph_memory");
    let _turn = one_at_a_time();
    let log = SharedLog::default();
    let logging = LoggingAdaptor::to_writer(pool(), log.clone(), true).unwrap();
    let tracking = TrackingAdaptor::new(logging.clone(), false);
    let mr = StatisticsAdaptor::new(tracking.clone());
    let s = CudaStream::non_blocking().unwrap();
    let sv = s.view();
    let cap = begin_capture(sv, TL).unwrap();
    let y = mr.allocate(N, 256, sv).unwrap();
    fill(y, N, 1, sv);
    assert_eq!(mr.bytes_counter().value, N as i64);
    assert_eq!(tracking.allocated_bytes(), N);
    let g = mr.graph_memory().expect("forwarded to the pool");
    assert_eq!((g.pools, g.live_bytes), (1, N));
    // SAFETY: from `mr` with these arguments.
    unsafe { mr.deallocate(y, N, 256, sv) };
    assert_eq!((mr.bytes_counter().value, mr.bytes_counter().peak), (0, N as i64));
    assert_eq!(tracking.allocated_bytes(), 0);
    let graph = cap.end().unwrap();
    logging.flush().unwrap();
    let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
    let stream = format!("{:#x}", sv.as_raw());
    let rows: Vec<&str> = text.lines().filter(|l| l.contains(&format!("{y}"))).collect();
    assert_eq!(rows.len(), 2, "one allocate and one free row for y: {text}");
    assert!(
        rows[0].contains("allocate") && rows[1].contains("free"),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r.ends_with(&stream)), "{rows:?}");
    drop(graph);
    wait_released("statistics", &mr);
}

/// Misuse: freeing one graph's memory during another graph's capture is
/// refused and counted; both captures stay valid.
#[test]
fn freeing_another_graphs_memory_during_capture_is_refused() {
    rmm_testing::require_gpu!("graph_memory::freeing_another_graphs_memory_during_capture_is_refused");
    let _turn = one_at_a_time();
    let mr = pool();
    let (s1, s2) = (
        CudaStream::non_blocking().unwrap(),
        CudaStream::non_blocking().unwrap(),
    );
    let cap = begin_capture(s1.view(), TL).unwrap();
    let a = mr.allocate(N, 256, s1.view()).unwrap();
    fill(a, N, 6, s1.view());
    let ga = cap.end().unwrap();
    let cap = begin_capture(s2.view(), TL).unwrap();
    let b = mr.allocate(N, 256, s2.view()).unwrap();
    fill(b, N, 8, s2.view());
    // SAFETY: misuse on purpose: `a` belongs to the other graph; refused.
    unsafe { mr.deallocate(a, N, 256, s2.view()) };
    assert_eq!(stats("pool", &mr).bad_frees, 1);
    // SAFETY: from `mr` with these arguments.
    unsafe { mr.deallocate(b, N, 256, s2.view()) };
    let gb = cap.end().expect("the capture survives the refused free");
    let (ea, eb) = (ga.instantiate().unwrap(), gb.instantiate().unwrap());
    // SAFETY: each graph uses its own memory only.
    unsafe {
        ea.launch(s1.view()).unwrap();
        eb.launch(s2.view()).unwrap();
    }
    s2.synchronize().unwrap();
    assert!(
        all(&read(a, N, s1.view()), 6),
        "the refused free left a with its graph"
    );
    // SAFETY: `a` from `mr` with these arguments, freed once for real.
    unsafe { mr.deallocate(a, N, 256, s1.view()) };
    drop((ea, eb, ga, gb));
    let g = wait_released("pool", &mr);
    assert_eq!(g.bad_frees, 1);
}

/// Misuse: a resource dropped while a graph uses its memory keeps that
/// memory reserved (the graph replays correctly) and frees it, and itself,
/// once the graph is gone: no leak.
#[test]
fn a_resource_dropped_while_a_graph_uses_it_waits_for_the_graph() {
    rmm_testing::require_gpu!("graph_memory::a_resource_dropped_while_a_graph_uses_it_waits_for_the_graph");
    let _turn = one_at_a_time();
    let upstream = StatisticsAdaptor::new(CudaMemoryResource::new());
    let mr = PoolMemoryResource::new(upstream.clone(), PoolOptions::default()).unwrap();
    let s = CudaStream::non_blocking().unwrap();
    let sv = s.view();
    let out = CudaMemoryResource::new()
        .allocate(N, 256, CudaStreamView::DEFAULT)
        .unwrap();
    let cap = begin_capture(sv, TL).unwrap();
    let y = mr.allocate(N, 256, sv).unwrap();
    fill(y, N, 5, sv);
    copy(out, y, N, sv);
    // SAFETY: from `mr` with these arguments; later work of the graph does not use it.
    unsafe { mr.deallocate(y, N, 256, sv) };
    let graph = cap.end().unwrap();
    let exec = graph.instantiate().unwrap();
    drop(mr);
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        upstream.bytes_counter().value > 0,
        "the memory stays reserved for the graph"
    );
    // Other memory from the same upstream does not land on the graph's.
    let other = upstream.allocate(N, 256, CudaStreamView::DEFAULT).unwrap();
    let s2 = CudaStream::non_blocking().unwrap();
    fill(other, N, 9, s2.view());
    s2.synchronize().unwrap();
    // SAFETY: `out` is live; y is the graph's own.
    unsafe { exec.launch(sv) }.unwrap();
    assert!(all(&read(out, N, sv), 5));
    assert!(all(&read(other, N, s2.view()), 9));
    // SAFETY: from `upstream` with these arguments.
    unsafe { upstream.deallocate(other, N, 256, CudaStreamView::DEFAULT) };
    drop(exec);
    drop(graph);
    let start = Instant::now();
    while upstream.bytes_counter().value != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the pool's memory never went back"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: from the cuda resource; no graph uses it any more.
    unsafe { CudaMemoryResource::new().deallocate(out, N, 256, CudaStreamView::DEFAULT) };
}
