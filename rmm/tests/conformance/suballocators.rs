//! The conformance suite over the sub-allocators (over the simulated
//! resource on any machine, over the CUDA resource on a GPU), and their own
//! tests.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{GIB, MIB};
use rmm::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CallbackMemoryResource, CudaMemoryResource,
    FixedSizeMemoryResource, FixedSizeOptions, MemoryResource, PoolMemoryResource, PoolOptions,
    SharedResource, SimulatedMemoryResource, VirtualPoolMemoryResource, VirtualPoolOptions,
};
use rmm::{CudaStream, CudaStreamView, DevicePtr, Error};

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn sim() -> SimulatedMemoryResource {
    SimulatedMemoryResource::new(64 * GIB)
}

fn pool_over<U: MemoryResource>(upstream: U, initial: usize) -> PoolMemoryResource<U> {
    PoolMemoryResource::new(upstream, PoolOptions::default().initial_pool_size(initial)).expect("pool")
}

// ---------------------------------------------------------------------------
// Conformance
// ---------------------------------------------------------------------------

conformance_suite!(pool_over_simulated, cpu, || pool_over(sim(), 64 * MIB));
conformance_suite!(pool_over_cuda, gpu, || pool_over(
    CudaMemoryResource::new(),
    256 * MIB
));
conformance_suite!(
    pool_with_maximum_over_simulated,
    cpu,
    || PoolMemoryResource::new(
        sim(),
        PoolOptions::default()
            .initial_pool_size(MIB)
            .maximum_pool_size(8 * GIB)
    )
    .expect("pool"),
    max = 2 * GIB
);
conformance_suite!(
    fixed_size_over_simulated,
    cpu,
    || FixedSizeMemoryResource::new(sim(), FixedSizeOptions::default()).expect("fixed"),
    max = MIB - 3
);
conformance_suite!(
    fixed_size_over_cuda,
    gpu,
    || FixedSizeMemoryResource::new(CudaMemoryResource::new(), FixedSizeOptions::default()).expect("fixed"),
    max = MIB - 3
);
conformance_suite!(binning_over_simulated, cpu, || {
    BinningMemoryResource::with_fixed_bins(pool_over(sim(), 256 * MIB), 18, 22).expect("binning")
});
conformance_suite!(binning_over_cuda, gpu, || {
    BinningMemoryResource::with_fixed_bins(pool_over(CudaMemoryResource::new(), 512 * MIB), 18, 22)
        .expect("binning")
});
conformance_suite!(arena_over_simulated, cpu, || {
    ArenaMemoryResource::new(sim(), ArenaOptions::default().arena_size(4 * GIB)).expect("arena")
});
// An explicit size: the default (half of the free memory) would let the
// suite's tests, which run in parallel, starve one another.
conformance_suite!(arena_over_cuda, gpu, || {
    ArenaMemoryResource::new(
        CudaMemoryResource::new(),
        ArenaOptions::default().arena_size(4 * GIB),
    )
    .expect("arena")
});
conformance_suite!(vm_pool, gpu, || {
    VirtualPoolMemoryResource::new(VirtualPoolOptions::default().initial_pool_size(64 * MIB))
        .expect("vm pool")
});

// ---------------------------------------------------------------------------
// Pool
// ---------------------------------------------------------------------------

/// RMM's `PoolTest.ForceGrowth`: an upstream of 6000 bytes.
#[test]
fn pool_force_growth_halves_then_fails() {
    let upstream = SimulatedMemoryResource::new(6000);
    let pool = pool_over(upstream.clone(), 0);
    let a = pool.allocate(1024, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 1024);
    let b = pool.allocate(4096, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 5120);
    // Growth by the pool size (5120) fails, 2560 and 1280 too; 640 fits.
    let c = pool.allocate(512, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 5760);
    // The simulated device rounds the 640-byte chunk up to 768.
    assert_eq!(upstream.allocated_bytes(), 1024 + 4096 + 768);
    let e = pool.allocate(2048, 256, S).unwrap_err();
    assert!(e.is_out_of_memory(), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("out_of_memory") && msg.contains("maximum pool size exceeded"),
        "{msg}"
    );
    assert!(msg.contains("2048"), "{msg}");
    for (p, n) in [(a, 1024), (b, 4096), (c, 512)] {
        // SAFETY: allocated above with these sizes.
        unsafe { pool.deallocate(p, n, 256, S) };
    }
    drop(pool);
    assert_eq!(upstream.allocated_bytes(), 0, "upstream memory returned on drop");
    assert_eq!(upstream.bad_frees(), 0);
}

#[test]
fn pool_growth_with_maximum() {
    let upstream = sim();
    let pool =
        PoolMemoryResource::new(upstream.clone(), PoolOptions::default().maximum_pool_size(8192)).unwrap();
    assert_eq!(pool.maximum_pool_size(), Some(8192));
    // Grows by max(request, remaining / 2) = 4096.
    let a = pool.allocate(1000, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 4096);
    // 8192 needs more than the 4096 that remain.
    let e = pool.allocate(8192, 256, S).unwrap_err();
    assert!(
        e.is_out_of_memory() && e.to_string().contains("not enough room"),
        "{e}"
    );
    // Above the maximum: refused at once.
    assert!(pool.allocate(8193, 256, S).unwrap_err().is_out_of_memory());
    let b = pool.allocate(4096, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 8192);
    assert!(pool.allocate(256, 256, S).is_ok_and(|p| {
        // SAFETY: just allocated.
        unsafe { pool.deallocate(p, 256, 256, S) };
        true
    }));
    // SAFETY: allocated above.
    unsafe {
        pool.deallocate(a, 1000, 256, S);
        pool.deallocate(b, 4096, 256, S);
    }
    assert_eq!(pool.free_bytes(), 8192);
}

#[test]
fn pool_size_checks_are_logic_errors() {
    let opts = |i: usize, m: Option<usize>| {
        let o = PoolOptions::default().initial_pool_size(i);
        match m {
            Some(m) => o.maximum_pool_size(m),
            None => o,
        }
    };
    for (i, m) in [
        (1 << 20, Some(1 << 19)),
        (1000, None),
        (0, Some(1000)),
        (512, Some(768 + 1)),
    ] {
        match PoolMemoryResource::new(sim(), opts(i, m)) {
            Err(Error::Logic(msg)) => assert!(!msg.is_empty()),
            other => panic!("initial {i} max {m:?} gave {other:?}"),
        }
    }
    let ok = PoolMemoryResource::new(sim(), opts(1 << 20, Some(1 << 20))).unwrap();
    assert_eq!(ok.pool_size(), 1 << 20);
}

#[test]
fn pool_size_and_release_on_drop() {
    let upstream = sim();
    let pool = pool_over(upstream.clone(), 4 * MIB);
    assert_eq!(pool.pool_size(), 4 * MIB);
    assert_eq!(upstream.allocated_bytes(), 4 * MIB);
    let p = pool.allocate(6 * MIB, 256, S).unwrap();
    assert_eq!(pool.pool_size(), 10 * MIB, "grew by max(request, pool size)");
    assert_eq!(pool.upstream_chunks(), 2);
    let clone = pool.clone();
    drop(pool);
    // SAFETY: allocated above.
    unsafe { clone.deallocate(p, 6 * MIB, 256, S) };
    assert_eq!(clone.free_bytes(), 10 * MIB);
    drop(clone);
    assert_eq!(upstream.allocated_bytes(), 0);
    assert_eq!(upstream.live_allocations(), 0);
}

#[test]
fn pool_reuses_freed_block_on_same_stream_and_best_fits() {
    let pool = pool_over(sim(), 16 * MIB);
    let a = pool.allocate(3000, 256, S).unwrap();
    let _keep = pool.allocate(100, 256, S).unwrap();
    let b = pool.allocate(10000, 256, S).unwrap();
    let _keep2 = pool.allocate(100, 256, S).unwrap();
    // SAFETY: allocated above.
    unsafe {
        pool.deallocate(a, 3000, 256, S);
        pool.deallocate(b, 10000, 256, S);
    }
    // Best fit: 9000 bytes go to b's hole, not the large tail; 2900 to a's.
    assert_eq!(pool.allocate(9000, 256, S).unwrap(), b);
    assert_eq!(pool.allocate(2900, 256, S).unwrap(), a);
}

#[test]
fn pool_blocks_of_different_chunks_never_merge() {
    // The simulated upstream hands out adjacent addresses, so the two chunks
    // touch; the pool must still keep them apart.
    let upstream = sim();
    let pool = pool_over(upstream.clone(), 0);
    let a = pool.allocate(MIB, 256, S).unwrap();
    let b = pool.allocate(MIB, 256, S).unwrap();
    assert_eq!(b.addr(), a.addr() + MIB as u64, "chunks are adjacent");
    assert_eq!(pool.upstream_chunks(), 2);
    // SAFETY: allocated above.
    unsafe {
        pool.deallocate(a, MIB, 256, S);
        pool.deallocate(b, MIB, 256, S);
    }
    let c = pool.allocate(2 * MIB, 256, S).unwrap();
    assert!(c != a, "a block spanning two upstream chunks was handed out");
    assert_eq!(pool.upstream_chunks(), 3);
    assert_eq!(pool.pool_size(), 4 * MIB);
    // SAFETY: allocated above.
    unsafe { pool.deallocate(c, 2 * MIB, 256, S) };
}

/// Fake stream handles: the simulated resource never passes them to the driver.
fn fake_stream(i: usize) -> CudaStreamView<'static> {
    // SAFETY: only used with simulated resources, which never touch streams.
    unsafe { CudaStreamView::from_raw(0x7000 + 16 * i) }
}

#[test]
fn pool_steals_and_merges_across_streams_over_simulated() {
    let (a_s, b_s, c_s) = (fake_stream(0), fake_stream(1), fake_stream(2));
    let pool = pool_over(sim(), 2 * MIB);
    let x = pool.allocate(MIB, 256, a_s).unwrap();
    let y = pool.allocate(MIB, 256, a_s).unwrap();
    assert_eq!(y.addr(), x.addr() + MIB as u64);
    // SAFETY: allocated above.
    unsafe { pool.deallocate(x, MIB, 256, a_s) };
    // B takes A's block (no merge needed).
    let x2 = pool.allocate(MIB, 256, b_s).unwrap();
    assert_eq!(x2, x);
    // SAFETY: allocated above.
    unsafe {
        pool.deallocate(x2, MIB, 256, b_s);
        pool.deallocate(y, MIB, 256, a_s);
    }
    // Halves sit in B's and A's lists; C merges both into one 2 MiB block.
    let z = pool.allocate(2 * MIB, 256, c_s).unwrap();
    assert_eq!(z, x);
    assert_eq!(pool.pool_size(), 2 * MIB, "no growth was needed");
    // SAFETY: allocated above.
    unsafe { pool.deallocate(z, 2 * MIB, 256, c_s) };
}

#[test]
fn pool_per_thread_default_stream_over_simulated() {
    let pool = pool_over(sim(), 64 * MIB);
    std::thread::scope(|s| {
        for t in 0..4 {
            let pool = pool.clone();
            s.spawn(move || {
                let mut live = Vec::new();
                for i in 0..500 {
                    let n = 256 * (1 + (i * 7 + t) % 50);
                    live.push((pool.allocate(n, 256, CudaStreamView::PER_THREAD).unwrap(), n));
                    if i % 3 == 0 {
                        let (p, n) = live.swap_remove(0);
                        // SAFETY: allocated above.
                        unsafe { pool.deallocate(p, n, 256, CudaStreamView::PER_THREAD) };
                    }
                }
                common::assert_disjoint(&live);
                for (p, n) in live {
                    // SAFETY: allocated above.
                    unsafe { pool.deallocate(p, n, 256, CudaStreamView::PER_THREAD) };
                }
            });
        }
    });
    assert_eq!(pool.free_bytes(), pool.pool_size());
}

#[test]
fn pool_double_free_is_ignored_not_fatal() {
    let pool = pool_over(sim(), MIB);
    let p = pool.allocate(1024, 256, S).unwrap();
    let q = pool.allocate(1024, 256, S).unwrap();
    // SAFETY: deliberately wrong use to check the pool survives it: the
    // second free of `p` is refused (logged) and changes nothing.
    unsafe {
        pool.deallocate(p, 1024, 256, S);
        pool.deallocate(p, 1024, 256, S);
    }
    assert_eq!(pool.free_bytes(), MIB - 1024);
    // SAFETY: allocated above.
    unsafe { pool.deallocate(q, 1024, 256, S) };
    assert_eq!(pool.free_bytes(), MIB);
}

/// Long work on `from` using `p`, then a free on `from`; `to` takes the
/// block and must see its own write, not `from`'s late one, which it would
/// if it did not wait.
fn hand_over(
    pool: &dyn MemoryResource,
    p: DevicePtr,
    n: usize,
    from: &CudaStream,
    to: &CudaStream,
) -> DevicePtr {
    for _ in 0..20 {
        // SAFETY: [p, p + n) is live pool memory; ordered on `from`.
        unsafe { rmm::launch::memset_async(p, 0xAA, 1, n, from.view()).unwrap() };
    }
    // SAFETY: the only use of p is ordered on `from`, where it is freed.
    unsafe { pool.deallocate(p, n, 256, from.view()) };
    let q = pool.allocate(n, 256, to.view()).unwrap();
    assert_eq!(q, p, "the other stream should reuse the block");
    let mut host = vec![0u8; 4096];
    // SAFETY: q is live; host outlives the copy (`to` is synchronised below).
    unsafe {
        rmm::launch::memset_async(q, 0x55, 1, n, to.view()).unwrap();
        rmm::launch::memcpy_async(
            rmm::DevicePtr::new(host.as_mut_ptr() as u64),
            rmm::DevicePtr::new(q.addr() + (n - 4096) as u64),
            4096,
            to.view(),
        )
        .unwrap();
    }
    to.synchronize().unwrap();
    from.synchronize().unwrap();
    assert!(
        host.iter().all(|&x| x == 0x55),
        "memory was overwritten by the other stream's pending work"
    );
    q
}

/// Cross-stream reuse on the GPU: first through a lazy list (the taker
/// synchronises the device and every list turns eager), then through
/// recorded events (the taker's stream waits on the GPU).
#[test]
fn pool_cross_stream_reuse_waits_on_gpu() {
    rmm_testing::require_gpu!();
    let pool = pool_over(CudaMemoryResource::new(), 0);
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let n = 512 * MIB;
    let p = pool.allocate(n, 256, a.view()).unwrap();
    let q = hand_over(&pool, p, n, &a, &b); // A's list was lazy: device sync
    let r = hand_over(&pool, q, n, &b, &a); // eager from here on: event waits
    let s = hand_over(&pool, r, n, &a, &b);
    let t = hand_over(&pool, s, n, &b, &a);
    assert_eq!(
        pool.pool_size(),
        n,
        "the block went back and forth without growth"
    );
    // SAFETY: allocated above; A is idle.
    unsafe { pool.deallocate(t, n, 256, a.view()) };
}

/// A stream destroyed with blocks in its free list: they are still usable.
#[test]
fn pool_deleted_stream_on_gpu() {
    rmm_testing::require_gpu!();
    let pool = pool_over(CudaMemoryResource::new(), 64 * MIB);
    {
        let s = CudaStream::new().unwrap();
        let p = pool.allocate(MIB, 256, s.view()).unwrap();
        common::touch(&pool, p, MIB, s.view());
        // SAFETY: allocated above, used only on s (synchronised by touch).
        unsafe { pool.deallocate(p, MIB, 256, s.view()) };
    }
    let t = CudaStream::new().unwrap();
    let p = pool.allocate(64 * MIB, 256, t.view()).unwrap();
    common::touch(&pool, p, 64 * MIB, t.view());
    // SAFETY: allocated above.
    unsafe { pool.deallocate(p, 64 * MIB, 256, t.view()) };
    t.synchronize().unwrap();
}

// ---------------------------------------------------------------------------
// Fixed size
// ---------------------------------------------------------------------------

#[test]
fn fixed_size_grows_by_chunks_and_rejects_large() {
    let upstream = sim();
    let opts = FixedSizeOptions::default()
        .block_size(1000)
        .blocks_to_preallocate(4);
    let mr = FixedSizeMemoryResource::new(upstream.clone(), opts).unwrap();
    assert_eq!(mr.block_size(), 1024);
    assert_eq!(upstream.allocated_bytes(), 4 * 1024);
    let ptrs: Vec<_> = (0..5).map(|_| mr.allocate(1024, 256, S).unwrap()).collect();
    assert_eq!(mr.pool_size(), 8 * 1024);
    assert_eq!(upstream.allocated_bytes(), 8 * 1024);
    let live: Vec<_> = ptrs.iter().map(|&p| (p, 1024)).collect();
    common::assert_disjoint(&live);
    let e = mr.allocate(1025, 256, S).unwrap_err();
    assert!(
        e.is_out_of_memory() && e.to_string().contains("maximum allocation size exceeded"),
        "{e}"
    );
    // A free must name the requested size: 1 byte is a wrong size, refused.
    for &p in &ptrs {
        // SAFETY: allocated above (the wrong size is refused, nothing freed).
        unsafe { mr.deallocate(p, 1, 256, S) };
    }
    assert_eq!((mr.free_bytes(), mr.bad_frees()), (3 * 1024, 5));
    for &p in &ptrs {
        // SAFETY: allocated above with 1024 bytes.
        unsafe { mr.deallocate(p, 1024, 256, S) };
    }
    assert_eq!(mr.free_bytes(), 8 * 1024);
    drop(mr);
    assert_eq!(upstream.allocated_bytes(), 0);
    let default = FixedSizeOptions::default();
    assert_eq!((default.block_size, default.blocks_to_preallocate), (MIB, 128));
    assert!(matches!(
        FixedSizeMemoryResource::new(sim(), FixedSizeOptions::default().blocks_to_preallocate(0)),
        Err(Error::Logic(_))
    ));
    assert!(matches!(
        FixedSizeMemoryResource::new(sim(), FixedSizeOptions::default().block_size(0)),
        Err(Error::Logic(_))
    ));
}

#[test]
fn fixed_size_is_fifo_per_stream() {
    let mr = FixedSizeMemoryResource::new(
        sim(),
        FixedSizeOptions::default()
            .block_size(256)
            .blocks_to_preallocate(8),
    )
    .unwrap();
    let a = mr.allocate(10, 256, S).unwrap();
    let b = mr.allocate(10, 256, S).unwrap();
    // SAFETY: allocated above.
    unsafe {
        mr.deallocate(a, 10, 256, S);
        mr.deallocate(b, 10, 256, S);
    }
    // Six untouched blocks come first, then a, then b.
    let next: Vec<_> = (0..8).map(|_| mr.allocate(10, 256, S).unwrap()).collect();
    assert_eq!(&next[6..], &[a, b]);
}

// ---------------------------------------------------------------------------
// Binning
// ---------------------------------------------------------------------------

#[test]
fn binning_routes_by_size() {
    let upstream = sim();
    let mr = BinningMemoryResource::with_fixed_bins(upstream.clone(), 10, 12).unwrap();
    assert_eq!(mr.bin_sizes(), vec![1024, 2048, 4096]);
    let preallocated = upstream.allocated_bytes();
    assert_eq!(preallocated, 128 * (1024 + 2048 + 4096));
    let small = mr.allocate(1500, 256, S).unwrap();
    let mid = mr.allocate(4096, 256, S).unwrap();
    assert_eq!(upstream.allocated_bytes(), preallocated, "bins serve these");
    let big = mr.allocate(4097, 256, S).unwrap();
    assert_eq!(
        upstream.allocated_bytes(),
        preallocated + 4352,
        "the upstream serves this"
    );
    assert_eq!(mr.allocate(0, 256, S).unwrap(), DevicePtr::NULL);
    // SAFETY: allocated above with these sizes.
    unsafe {
        mr.deallocate(small, 1500, 256, S);
        mr.deallocate(mid, 4096, 256, S);
        mr.deallocate(big, 4097, 256, S);
    }
    assert_eq!(upstream.allocated_bytes(), preallocated);
    assert_eq!(upstream.bad_frees(), 0);
    drop(mr);
    assert_eq!(upstream.allocated_bytes(), 0);
}

#[test]
fn binning_add_bin_with_resource_and_after_clone() {
    let upstream = sim();
    let calls = Arc::new(AtomicUsize::new(0));
    let (inner, c) = (upstream.clone(), calls.clone());
    let free_to = upstream.clone();
    let counting = CallbackMemoryResource::new(
        move |b, a, s| {
            c.fetch_add(1, Ordering::Relaxed);
            inner.allocate(b, a, s)
        },
        // SAFETY: forwards frees of pointers that came from `free_to`.
        move |p, b, a, s| unsafe { free_to.deallocate(p, b, a, s) },
    )
    .without_gpu();
    let mut mr = BinningMemoryResource::new(upstream.clone());
    mr.add_bin(512, Some(SharedResource::new(counting))).unwrap();
    mr.add_bin(300, None).unwrap(); // rounded to 512: already there, ignored
    assert_eq!(mr.bin_sizes(), vec![512]);
    let p = mr.allocate(400, 256, S).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // SAFETY: allocated above.
    unsafe { mr.deallocate(p, 400, 256, S) };
    let clone = mr.clone();
    assert!(matches!(mr.add_bin(4096, None), Err(Error::Logic(_))));
    drop(clone);
    mr.add_bin(4096, None).unwrap();
    assert_eq!(mr.bin_sizes(), vec![512, 4096]);
    assert!(matches!(
        BinningMemoryResource::with_fixed_bins(sim(), 5, 4),
        Err(Error::Logic(_))
    ));
}

#[test]
fn binning_reuses_a_freed_block_on_its_own_stream_only() {
    let mr = BinningMemoryResource::with_fixed_bins(sim(), 10, 12).unwrap();
    let (a, b) = (fake_stream(1), fake_stream(2));
    let p = mr.allocate(1500, 256, a).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(p, 1500, 256, a) };
    assert_eq!(
        mr.cached_bytes(),
        2048,
        "waits in stream a's cache of the 2 KiB bin"
    );
    let on_b = mr.allocate(2000, 256, b).unwrap();
    assert_ne!(on_b, p, "another stream does not get it");
    let on_a = mr.allocate(1025, 256, a).unwrap();
    assert_eq!(on_a, p, "the same stream and size class does");
    assert_eq!(mr.cached_bytes(), 0);
    // SAFETY: allocated above with these arguments.
    unsafe {
        mr.deallocate(on_b, 2000, 256, b);
        mr.deallocate(on_a, 1025, 256, a);
    }
    assert_eq!(mr.cached_bytes(), 4096);
    assert_eq!(mr.bad_frees(), 0);
}

#[test]
fn binning_refuses_a_double_free_of_a_cached_block() {
    let mr = BinningMemoryResource::with_fixed_bins(sim(), 10, 12).unwrap();
    let p = mr.allocate(1000, 256, S).unwrap();
    // SAFETY: the second free is the misuse under test, which must be ignored.
    unsafe {
        mr.deallocate(p, 1000, 256, S);
        mr.deallocate(p, 1000, 256, S);
    }
    assert_eq!(mr.bad_frees(), 1);
    assert_eq!(mr.cached_bytes(), 1024, "cached once");
    let x = mr.allocate(1000, 256, S).unwrap();
    let y = mr.allocate(1000, 256, S).unwrap();
    assert_ne!(x, y, "the block is handed out once");
    // SAFETY: allocated above with these arguments.
    unsafe {
        mr.deallocate(x, 1000, 256, S);
        mr.deallocate(y, 1000, 256, S);
    }
}

#[test]
fn binning_returns_cached_blocks_to_a_bin_that_runs_out() {
    // One 1 KiB bin whose first chunk (128 blocks) is all the upstream has
    // room for, so the bin cannot grow.
    let upstream = SimulatedMemoryResource::new(128 * 1024 + 64 * 1024);
    let mr = BinningMemoryResource::with_fixed_bins(upstream.clone(), 10, 10).unwrap();
    let (a, b) = (fake_stream(1), fake_stream(2));
    let blocks: Vec<DevicePtr> = (0..128).map(|_| mr.allocate(1024, 256, a).unwrap()).collect();
    assert!(
        mr.allocate(1024, 256, a).unwrap_err().is_bad_alloc(),
        "the bin is full"
    );
    for &p in &blocks[..40] {
        // SAFETY: allocated above with these arguments.
        unsafe { mr.deallocate(p, 1024, 256, a) };
    }
    assert_eq!(mr.cached_bytes(), 40 * 1024, "all 40 in stream a's cache");
    // Stream b finds no free block in the bin: the caches go back to it.
    let q = mr.allocate(1024, 256, b).unwrap();
    assert!(blocks[..40].contains(&q));
    assert_eq!(mr.cached_bytes(), 0);
    let more: Vec<DevicePtr> = (0..39).map(|_| mr.allocate(1024, 256, b).unwrap()).collect();
    assert!(mr.allocate(1024, 256, b).unwrap_err().is_bad_alloc());
    // SAFETY: allocated above with these arguments.
    unsafe {
        for &p in blocks[40..].iter().chain(&more).chain([&q]) {
            mr.deallocate(p, 1024, 256, b);
        }
    }
    assert_eq!(mr.bad_frees(), 0);
    drop(mr);
    assert_eq!((upstream.allocated_bytes(), upstream.bad_frees()), (0, 0));
}

#[test]
fn binning_cache_budget_bounds_what_waits() {
    let mr = BinningMemoryResource::with_fixed_bins(sim(), 10, 10)
        .unwrap()
        .with_cache_budget(4 * 1024)
        .unwrap();
    let blocks: Vec<DevicePtr> = (0..10).map(|_| mr.allocate(1024, 256, S).unwrap()).collect();
    for &p in &blocks {
        // SAFETY: allocated above with these arguments.
        unsafe { mr.deallocate(p, 1024, 256, S) };
    }
    assert_eq!(mr.cached_bytes(), 4 * 1024, "the rest went back to the bin");
    let none = BinningMemoryResource::with_fixed_bins(sim(), 10, 10)
        .unwrap()
        .with_cache_budget(0)
        .unwrap();
    let p = none.allocate(1024, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe { none.deallocate(p, 1024, 256, S) };
    assert_eq!(none.cached_bytes(), 0);
    let shared = none.clone();
    assert!(matches!(none.with_cache_budget(1), Err(Error::Logic(_))));
    drop(shared);
}

// ---------------------------------------------------------------------------
// Arena
// ---------------------------------------------------------------------------

#[test]
fn arena_size_checks() {
    assert!(matches!(
        ArenaMemoryResource::new(sim(), ArenaOptions::default().arena_size(MIB - 256)),
        Err(Error::Logic(_))
    ));
    assert!(matches!(
        ArenaMemoryResource::new(sim(), ArenaOptions::default()),
        Err(Error::Logic(_))
    ));
    assert!(matches!(
        ArenaMemoryResource::new(
            sim(),
            ArenaOptions::default().arena_size(GIB).superblock_size(MIB / 2)
        ),
        Err(Error::Logic(_))
    ));
    let upstream = sim();
    let a =
        ArenaMemoryResource::new(upstream.clone(), ArenaOptions::default().arena_size(MIB + 100)).unwrap();
    assert_eq!(a.arena_size(), MIB);
    assert_eq!(upstream.allocated_bytes(), MIB);
    drop(a);
    assert_eq!(upstream.allocated_bytes(), 0);
}

/// Superblocks held by one stream's arena are returned on out-of-memory so
/// that another stream's large request succeeds; then a real OOM.
fn arena_defragments_on_oom<U: MemoryResource>(upstream: U, a: CudaStreamView, b: CudaStreamView) {
    let arena = ArenaMemoryResource::new(
        upstream,
        ArenaOptions::default()
            .arena_size(8 * MIB)
            .superblock_size(4 * MIB),
    )
    .unwrap();
    let small = arena.allocate(1000, 256, a).unwrap();
    assert_eq!(arena.superblocks_held(), 1);
    // SAFETY: allocated above.
    unsafe { arena.deallocate(small, 1000, 256, a) };
    // A keeps its (now empty) superblock: only 4 MiB are left globally.
    assert_eq!(arena.superblocks_held(), 1);
    assert_eq!(arena.global_free(), (4 * MIB, 4 * MIB));
    let big = arena.allocate(6 * MIB, 256, b).unwrap();
    assert_eq!(
        arena.superblocks_held(),
        0,
        "defragmentation returned the superblock"
    );
    let e = arena.allocate(6 * MIB, 256, b).unwrap_err();
    assert!(
        e.is_out_of_memory() && e.to_string().contains("no room in arena"),
        "{e}"
    );
    // Small requests still work from what is left.
    let s2 = arena.allocate(MIB, 256, a).unwrap();
    // SAFETY: allocated above.
    unsafe {
        arena.deallocate(s2, MIB, 256, a);
        arena.deallocate(big, 6 * MIB, 256, b);
    }
    assert_eq!(arena.free_bytes(), 8 * MIB);
}

#[test]
fn arena_defragments_on_oom_over_simulated() {
    arena_defragments_on_oom(sim(), fake_stream(0), fake_stream(1));
}

#[test]
fn arena_defragments_on_oom_on_gpu() {
    rmm_testing::require_gpu!();
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    arena_defragments_on_oom(CudaMemoryResource::new(), a.view(), b.view());
}

/// Eight threads, each on its own stream, fill a small arena until requests
/// fail (so out-of-memory retries defragment, several at once), free, and
/// repeat: no allocation ever overlaps a live one across threads, no bad
/// free is reported, and every byte comes back.
#[test]
fn arena_concurrent_defragmentations_over_simulated() {
    let arena = ArenaMemoryResource::new(
        sim(),
        ArenaOptions::default().arena_size(64 * MIB).superblock_size(MIB),
    )
    .unwrap();
    let live = std::sync::Mutex::new(std::collections::BTreeMap::<u64, usize>::new());
    std::thread::scope(|scope| {
        for t in 0..8usize {
            let (arena, live) = (&arena, &live);
            scope.spawn(move || {
                let st = fake_stream(t);
                let mut rng = rmm_testing::SplitMix64(t as u64 + 11);
                for _round in 0..20 {
                    let mut mine = Vec::new();
                    loop {
                        let max = if rng.below(4) == 0 { 6 * MIB } else { 64 << 10 };
                        let n = 1 + rng.below(max);
                        match arena.allocate(n, 256, st) {
                            Ok(p) => {
                                let mut l = live.lock().unwrap();
                                let a = p.addr();
                                let end = a + n as u64;
                                if let Some((&b, &m)) = l.range(..end).next_back() {
                                    assert!(b + m as u64 <= a, "{a:#x}+{n} overlaps live {b:#x}+{m}");
                                }
                                l.insert(a, n);
                                mine.push((p, n));
                            }
                            Err(e) => {
                                assert!(e.is_out_of_memory(), "{e}");
                                break;
                            }
                        }
                    }
                    for (p, n) in mine {
                        live.lock().unwrap().remove(&p.addr());
                        // SAFETY: allocated above with these arguments, on `st`.
                        unsafe { arena.deallocate(p, n, 256, st) };
                    }
                }
            });
        }
    });
    assert_eq!(arena.bad_frees(), 0);
    arena.defragment();
    assert_eq!(arena.free_bytes(), 64 * MIB, "every byte came back");
}

#[test]
fn arena_cross_stream_and_global_frees_account_every_byte() {
    let arena = ArenaMemoryResource::new(sim(), ArenaOptions::default().arena_size(256 * MIB)).unwrap();
    let (a, b) = (fake_stream(0), fake_stream(1));
    let mut live = Vec::new();
    for i in 0..200 {
        let n = 1 + (i * 7919) % (3 * MIB);
        live.push((arena.allocate(n, 256, if i % 2 == 0 { a } else { b }).unwrap(), n));
    }
    common::assert_disjoint(&live);
    // Free everything on the other stream (cross-arena frees) or the per-thread stream.
    for (i, (p, n)) in live.into_iter().enumerate() {
        let s = match i % 3 {
            0 => b,
            1 => a,
            _ => CudaStreamView::PER_THREAD,
        };
        // SAFETY: allocated above with this size.
        unsafe { arena.deallocate(p, n, 256, s) };
    }
    assert_eq!(arena.free_bytes(), 256 * MIB);
    arena.defragment();
    assert_eq!(arena.global_free(), (256 * MIB, 256 * MIB));
}

#[test]
fn arena_per_thread_arenas_over_simulated() {
    let arena = ArenaMemoryResource::new(sim(), ArenaOptions::default().arena_size(4 * GIB)).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let arena = arena.clone();
            s.spawn(move || {
                let mut rng = common::SplitMix64(t);
                let mut live = Vec::new();
                for _ in 0..2000 {
                    if live.is_empty() || rng.below(100) < 60 {
                        let n = 1 + rng.below(2 * MIB);
                        live.push((arena.allocate(n, 256, CudaStreamView::PER_THREAD).unwrap(), n));
                    } else {
                        let (p, n) = live.swap_remove(rng.below(live.len()));
                        // SAFETY: allocated above.
                        unsafe { arena.deallocate(p, n, 256, CudaStreamView::PER_THREAD) };
                    }
                }
                common::assert_disjoint(&live);
                for (p, n) in live {
                    // SAFETY: allocated above.
                    unsafe { arena.deallocate(p, n, 256, CudaStreamView::PER_THREAD) };
                }
            });
        }
    });
    assert_eq!(arena.free_bytes(), 4 * GIB);
}

// ---------------------------------------------------------------------------
// Virtual-memory pool (GPU only)
// ---------------------------------------------------------------------------

#[test]
fn vm_pool_merges_across_growth_and_releases_the_end() {
    rmm_testing::require_gpu!();
    let g = {
        let probe =
            VirtualPoolMemoryResource::new(VirtualPoolOptions::default().maximum_pool_size(1 << 30)).unwrap();
        probe.granularity()
    };
    let pool = VirtualPoolMemoryResource::new(
        VirtualPoolOptions::default()
            .initial_pool_size(2 * g)
            .maximum_pool_size(16 * g),
    )
    .unwrap();
    assert_eq!(pool.pool_size(), 2 * g);
    let s = CudaStream::new().unwrap();
    let x = pool.allocate(2 * g, 256, s.view()).unwrap();
    let y = pool.allocate(4 * g, 256, s.view()).unwrap();
    assert_eq!(pool.pool_size(), 6 * g);
    assert_eq!(y.addr(), x.addr() + 2 * g as u64, "the pool grew in place");
    common::touch(&pool, y, 4 * g, s.view());
    // SAFETY: allocated above; touch synchronised s.
    unsafe {
        pool.deallocate(x, 2 * g, 256, s.view());
        pool.deallocate(y, 4 * g, 256, s.view());
    }
    // One block across both growth steps: RMM's pool cannot do this (#1957).
    let z = pool.allocate(6 * g, 256, s.view()).unwrap();
    assert_eq!(z, x);
    assert_eq!(pool.pool_size(), 6 * g, "no growth was needed");
    common::touch(&pool, z, 6 * g, s.view());
    // SAFETY: allocated above.
    unsafe { pool.deallocate(z, 6 * g, 256, s.view()) };
    // Everything is free: every growth step is released.
    assert_eq!(pool.release_unused().unwrap(), 6 * g);
    assert_eq!(pool.pool_size(), 0);
    // And the pool grows again afterwards.
    let w = pool.allocate(g, 256, s.view()).unwrap();
    common::touch(&pool, w, g, s.view());
    assert!(pool
        .allocate(17 * g, 256, s.view())
        .unwrap_err()
        .is_out_of_memory());
    // SAFETY: allocated above.
    unsafe { pool.deallocate(w, g, 256, s.view()) };
}

#[test]
fn vm_pool_release_keeps_live_memory() {
    rmm_testing::require_gpu!();
    let pool = VirtualPoolMemoryResource::new(
        VirtualPoolOptions::default()
            .initial_pool_size(64 * MIB)
            .maximum_pool_size(GIB),
    )
    .unwrap();
    let g = pool.granularity();
    let s = CudaStream::new().unwrap();
    let live = pool.allocate(MIB, 256, s.view()).unwrap();
    let big = pool.allocate(256 * MIB, 256, s.view()).unwrap();
    let before = pool.pool_size();
    // The free 63 MiB at the end were merged with the growth: only the
    // missing 193 MiB (rounded to the granularity) were mapped.
    assert_eq!(before, 64 * MIB + (193 * MIB).div_ceil(g) * g);
    assert_eq!(big.addr(), live.addr() + MIB as u64);
    // SAFETY: allocated above, never used.
    unsafe { pool.deallocate(big, 256 * MIB, 256, s.view()) };
    let released = pool.release_unused().unwrap();
    assert_eq!(pool.pool_size(), before - released);
    assert!(
        released > 0 && pool.pool_size() >= 64 * MIB,
        "released {released}"
    );
    // The live block is still mapped and usable.
    common::touch(&pool, live, MIB, s.view());
    assert_eq!(
        pool.release_unused().unwrap(),
        0,
        "the first step holds a live block"
    );
    // SAFETY: allocated above.
    unsafe { pool.deallocate(live, MIB, 256, s.view()) };
}

#[test]
fn vm_pool_size_checks() {
    rmm_testing::require_gpu!();
    for o in [
        VirtualPoolOptions::default().initial_pool_size(1000),
        VirtualPoolOptions::default()
            .initial_pool_size(2 * MIB)
            .maximum_pool_size(MIB),
    ] {
        assert!(
            matches!(VirtualPoolMemoryResource::new(o), Err(Error::Logic(_))),
            "{o:?}"
        );
    }
}

/// The CPU twin of `threads8_on_gpu_all_resources`, same sizes over a
/// simulated device of an H200's size.
#[test]
fn threads8_over_simulated_all_resources() {
    let dev = SimulatedMemoryResource::new(140 * GIB);
    let resources: Vec<SharedResource> = vec![
        SharedResource::new(pool_over(dev.clone(), 512 * MIB)),
        SharedResource::new(
            BinningMemoryResource::with_fixed_bins(pool_over(dev.clone(), 512 * MIB), 18, 22).unwrap(),
        ),
        SharedResource::new(
            ArenaMemoryResource::new(dev.clone(), ArenaOptions::default().arena_size(16 * GIB)).unwrap(),
        ),
    ];
    for r in &resources {
        common::threads8(r.inner(), 3000, MIB);
    }
    drop(resources);
    assert_eq!(dev.allocated_bytes(), 0);
}

/// Eight threads on eight streams over the real device, every resource.
#[test]
fn threads8_on_gpu_all_resources() {
    rmm_testing::require_gpu!();
    let resources: Vec<SharedResource> = vec![
        SharedResource::new(pool_over(CudaMemoryResource::new(), 512 * MIB)),
        SharedResource::new(
            BinningMemoryResource::with_fixed_bins(pool_over(CudaMemoryResource::new(), 512 * MIB), 18, 22)
                .unwrap(),
        ),
        SharedResource::new(
            ArenaMemoryResource::new(
                CudaMemoryResource::new(),
                ArenaOptions::default().arena_size(16 * GIB),
            )
            .unwrap(),
        ),
        SharedResource::new(VirtualPoolMemoryResource::new(VirtualPoolOptions::default()).unwrap()),
    ];
    for r in &resources {
        common::threads8(r.inner(), 3000, MIB);
    }
}

#[test]
fn foreign_frees_are_ignored() {
    let upstream = sim();
    let pool = pool_over(upstream.clone(), MIB);
    let fixed =
        FixedSizeMemoryResource::new(upstream.clone(), FixedSizeOptions::default().block_size(4096)).unwrap();
    let arena =
        ArenaMemoryResource::new(upstream.clone(), ArenaOptions::default().arena_size(8 * MIB)).unwrap();
    let foreign = upstream.allocate(4096, 256, S).unwrap();
    // SAFETY: deliberately wrong frees of memory these resources never
    // handed out: each is refused (logged) and changes nothing.
    unsafe {
        pool.deallocate(foreign, 4096, 256, S);
        fixed.deallocate(foreign, 4096, 256, S);
        arena.deallocate(foreign, 4096, 256, S);
        arena.deallocate(DevicePtr::new(u64::MAX - 255), 4096, 256, S);
    }
    assert_eq!(pool.free_bytes(), MIB);
    assert_eq!(fixed.free_bytes(), fixed.pool_size());
    assert_eq!(arena.free_bytes(), 8 * MIB);
    // The pool still hands out only its own memory.
    let p = pool.allocate(MIB, 256, S).unwrap();
    assert_ne!(p, foreign);
    // SAFETY: allocated above.
    unsafe {
        pool.deallocate(p, MIB, 256, S);
        upstream.deallocate(foreign, 4096, 256, S);
    }
}

/// Over the stateless cuda resource, sub-allocators record the device
/// current at construction; over the simulated one, none.
#[test]
fn sub_allocators_over_cuda_report_the_current_device() {
    let sim_pool = pool_over(sim(), MIB);
    assert_eq!(sim_pool.device(), None);
    rmm_testing::require_gpu!();
    let current = rmm::device::current_device().unwrap();
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), PoolOptions::default()).unwrap();
    let arena = ArenaMemoryResource::new(
        CudaMemoryResource::new(),
        ArenaOptions::default().arena_size(16 * MIB),
    )
    .unwrap();
    let fixed = FixedSizeMemoryResource::new(
        CudaMemoryResource::new(),
        FixedSizeOptions::default().blocks_to_preallocate(1),
    )
    .unwrap();
    assert_eq!(pool.device(), Some(current));
    assert_eq!(arena.device(), Some(current));
    assert_eq!(fixed.device(), Some(current));
    // Growth with the right device current works as before.
    let p = pool.allocate(MIB, 256, CudaStreamView::DEFAULT).unwrap();
    // SAFETY: allocated just above from `pool`; unused.
    unsafe { pool.deallocate(p, MIB, 256, CudaStreamView::DEFAULT) };
}
