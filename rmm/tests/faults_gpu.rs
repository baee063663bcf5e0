//! Real driver calls failed by injection (`rmm::fault`), on a GPU:
//! `cuMemAlloc` (the cuda resource, a pool growing over it),
//! `cuMemAllocFromPoolAsync` (cuda_async, a pool over it), `cuEventRecord`
//! and `cuStreamWaitEvent` (the pool's cross-stream free lists, a container
//! copied across streams), `cuMemcpyAsync` (containers' copies and
//! resizes) and `cuMemMap` / `cuMemCreate` (the virtual-memory pool's
//! growth).
//!
//! Each test shows: every failure is an `Err` of the injected kind; no
//! allocation overlaps a live one; the stack's counters stay exact; once
//! the faults stop it serves again; and after it is dropped the upstream
//! (a [`FaultyResource`] that only counts) holds nothing and the device's
//! free memory is back (a device-wide figure: when another process moves
//! it, the check says it is inconclusive instead of failing). The tests
//! skip without a GPU (and fail with `RMM_REQUIRE_GPU=1`); they run one at
//! a time (a lock), so that no other test of this binary moves the free
//! memory. Each prints a `faults-gpu` summary line.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use rmm::fault::{DriverFaults, FaultPlan, FaultyResource, Trigger};
use rmm::mr::{
    CudaAsyncMemoryResource, CudaMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions,
    VirtualPoolMemoryResource, VirtualPoolOptions,
};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DevicePtr, DeviceUvector, Error};
use rmm_testing::SplitMix64;

const MIB: usize = 1 << 20;

/// Free device memory may differ this much before and after a test (the
/// driver's own bookkeeping); every test moves far more than this.
const SLACK: usize = 8 * MIB;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn free_memory() -> usize {
    rmm::device::synchronize().unwrap();
    rmm::device::available_device_memory().unwrap().0
}

/// Asserts the device's free memory is back to `before`.
///
/// Free memory is device-wide: another process using the GPU moves it too.
/// A shortfall therefore fails the test only when the free memory is
/// steady (six samples 50 ms apart within [`SLACK`]) and stays short; when
/// it moves, the check is reported as inconclusive (the upstream's live
/// bytes, checked by every test, remain the leak check).
fn memory_back(name: &str, before: usize) {
    if free_memory() + SLACK >= before {
        return;
    }
    let samples: Vec<usize> = (0..6)
        .map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            free_memory()
        })
        .collect();
    let (lo, hi) = (*samples.iter().min().unwrap(), *samples.iter().max().unwrap());
    if hi + SLACK >= before {
        return;
    }
    if hi - lo > SLACK {
        println!(
            "faults-gpu {name}: device memory check inconclusive: free memory moved by {} MiB while sampled \
             (another process is using the GPU)",
            (hi - lo) / MIB
        );
        return;
    }
    panic!(
        "{name}: {} MiB of device memory not returned",
        (before - hi) / MIB
    );
}

/// Live allocations by address; panics on an overlap.
#[derive(Default)]
struct Live(BTreeMap<u64, usize>);

impl Live {
    fn insert(&mut self, p: DevicePtr, bytes: usize) {
        let (start, end) = (p.addr(), p.addr() + bytes as u64);
        if let Some((&a, &n)) = self.0.range(..=start).next_back() {
            assert!(a + n as u64 <= start, "{p}+{bytes} overlaps {a:#x}+{n}");
        }
        if let Some((&a, _)) = self.0.range(start..).next() {
            assert!(end <= a, "{p}+{bytes} overlaps {a:#x}");
        }
        self.0.insert(start, bytes);
    }

    fn bytes(&self) -> usize {
        self.0.values().sum()
    }

    fn rounded(&self) -> usize {
        self.0.values().map(|n| n.next_multiple_of(256)).sum()
    }

    fn free_all(&mut self, mr: &dyn MemoryResource, s: CudaStreamView) {
        for (a, n) in std::mem::take(&mut self.0) {
            // SAFETY: allocated from `mr` with these arguments, freed once.
            unsafe { mr.deallocate(DevicePtr::new(a), n, 256, s) };
        }
    }
}

/// Allocates `sizes` under `faults` (none: every allocation must succeed);
/// every failure must be out-of-memory from an injected fault. Returns the
/// failures.
fn allocate_all(
    mr: &dyn MemoryResource,
    sizes: &[usize],
    s: CudaStreamView,
    live: &mut Live,
    faults: Option<&DriverFaults>,
) -> u64 {
    let injected = || faults.map_or(0, DriverFaults::injected);
    let mut failures = 0;
    for &n in sizes {
        let before = injected();
        match mr.allocate(n, 256, s) {
            Ok(p) => live.insert(p, n),
            Err(e) => {
                assert!(e.is_out_of_memory(), "{e}");
                assert!(injected() > before, "a failure without an injected fault: {e}");
                failures += 1;
            }
        }
    }
    failures
}

fn summary(name: &str, injected: u64, errors: u64) {
    println!("faults-gpu {name}: faults_injected={injected} faults_survived={injected} errors_surfaced={errors} leaks=0 overlaps=0");
}

#[test]
fn gpu_cuda_resource_survives_cu_mem_alloc_faults() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let up = FaultyResource::new(CudaMemoryResource::new());
    let s = CudaStreamView::DEFAULT;
    let mut live = Live::default();
    let sizes: Vec<usize> = (0..60).map(|i| (1 + i % 4) * MIB).collect();
    let faults = DriverFaults::inject(FaultPlan::call("cuMemAlloc").trigger(Trigger::EveryNth(3)));
    let failures = allocate_all(&up, &sizes, s, &mut live, Some(&faults));
    let injected = faults.injected();
    drop(faults);
    assert_eq!((injected, failures), (20, 20));
    assert_eq!((up.live_bytes(), up.live_allocations()), (live.bytes(), 40));
    // Faults stopped: it serves again.
    allocate_all(&up, &[64 * MIB], s, &mut live, None);
    live.free_all(&up, s);
    assert_eq!(up.live_bytes(), 0);
    drop(up);
    memory_back("cuda", before);
    summary("cuMemAlloc/cuda", injected, failures);
}

#[test]
fn gpu_pool_over_cuda_survives_growth_faults() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let up = FaultyResource::new(CudaMemoryResource::new());
    let pool =
        PoolMemoryResource::new(up.clone(), PoolOptions::default().initial_pool_size(4 * MIB)).unwrap();
    let s = CudaStreamView::DEFAULT;
    let mut live = Live::default();
    // Requests larger than what the pool has free make it grow. Every
    // second growth attempt fails: the pool's halving retry absorbs some;
    // then every attempt fails, and a request beyond what is free surfaces.
    let sizes: Vec<usize> = (0..24).map(|i| (8 + 8 * (i % 3)) * MIB).collect();
    let (mut injected, mut failures) = (0, 0);
    for (trigger, sizes) in [
        (Trigger::EveryNth(2), &sizes[..]),
        (Trigger::Always, &[8 * MIB, 1 << 31][..]),
    ] {
        let faults = DriverFaults::inject(FaultPlan::call("cuMemAlloc").trigger(trigger));
        for n in sizes {
            failures += allocate_all(&pool, &[*n], s, &mut live, Some(&faults));
            assert_eq!(pool.pool_size(), up.live_bytes(), "pool chunks vs upstream");
            assert_eq!(
                pool.pool_size() - pool.free_bytes(),
                live.rounded(),
                "pool used bytes"
            );
        }
        injected += faults.injected();
    }
    assert!(
        injected > 0 && failures > 0,
        "injected {injected}, failures {failures}"
    );
    allocate_all(&pool, &[256 * MIB], s, &mut live, None);
    live.free_all(&pool, s);
    assert_eq!(pool.bad_frees(), 0);
    drop(pool);
    assert_eq!((up.live_bytes(), up.live_allocations()), (0, 0));
    drop(up);
    memory_back("pool(cuda)", before);
    summary("cuMemAlloc/pool(cuda)", injected, failures);
}

#[test]
fn gpu_cuda_async_and_pool_over_it_survive_pool_alloc_faults() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let stream = CudaStream::new().unwrap();
    let s = stream.view();
    let up = FaultyResource::new(CudaAsyncMemoryResource::new().unwrap());
    let mut rng = SplitMix64(21);
    let sizes: Vec<usize> = (0..400).map(|_| rng.log_uniform(256, 16 * MIB)).collect();
    let mut live = Live::default();
    let faults =
        DriverFaults::inject(FaultPlan::call("cuMemAllocFromPoolAsync").trigger(Trigger::rate(0.3, 5)));
    let mut failures = allocate_all(&up, &sizes, s, &mut live, Some(&faults));
    assert_eq!(
        (up.live_bytes(), up.live_allocations()),
        (live.bytes(), live.0.len())
    );
    live.free_all(&up, s);
    // A pool over cuda_async: its growth meets the same faults.
    let pool = PoolMemoryResource::new(up.clone(), PoolOptions::default()).unwrap();
    for n in &sizes {
        failures += allocate_all(&pool, &[*n], s, &mut live, Some(&faults));
        assert_eq!(pool.pool_size(), up.live_bytes(), "pool chunks vs upstream");
    }
    let injected = faults.injected();
    drop(faults);
    assert!(injected > 0 && failures > 0);
    allocate_all(&pool, &[64 * MIB], s, &mut live, None);
    live.free_all(&pool, s);
    drop(pool);
    assert_eq!((up.live_bytes(), up.live_allocations()), (0, 0));
    // Every stream-ordered free done before the pool goes back to the driver.
    rmm::device::synchronize().unwrap();
    drop(up);
    memory_back("cuda_async", before);
    summary(
        "cuMemAllocFromPoolAsync/cuda_async+pool(cuda_async)",
        injected,
        failures,
    );
}

/// A pool over cuda used from four streams, blocks freed on one stream and
/// taken by another, while the event record and stream wait of its
/// cross-stream path fail.
#[test]
fn gpu_pool_cross_stream_paths_survive_event_faults() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let up = FaultyResource::new(CudaMemoryResource::new());
    let pool =
        PoolMemoryResource::new(up.clone(), PoolOptions::default().initial_pool_size(256 * MIB)).unwrap();
    let streams: Vec<CudaStream> = (0..4).map(|_| CudaStream::new().unwrap()).collect();
    let mut rng = SplitMix64(33);
    let mut live: BTreeMap<u64, (usize, usize)> = BTreeMap::new();
    let mut model = Live::default();
    let (mut injected, mut errors) = (0, 0);
    let plans = [
        FaultPlan::call("cuEventRecord"),
        FaultPlan::call("cuStreamWaitEvent").trigger(Trigger::EveryNth(2)),
        FaultPlan::call("cuStreamWaitEvent").trigger(Trigger::rate(0.3, 9)),
        FaultPlan::call("cuEventRecord").trigger(Trigger::rate(0.5, 10)),
    ];
    for plan in plans {
        let faults = DriverFaults::inject(plan);
        for _ in 0..3000 {
            if !live.is_empty() && (live.len() > 200 || rng.below(2) == 0) {
                let (&a, &(n, _)) = live.iter().nth(rng.below(live.len())).unwrap();
                live.remove(&a);
                model.0.remove(&a);
                // Freed on any stream: the next taker may be another one.
                let s = streams[rng.below(4)].view();
                // SAFETY: allocated from the pool with these arguments, freed once.
                unsafe { pool.deallocate(DevicePtr::new(a), n, 256, s) };
                continue;
            }
            let (n, k) = (rng.log_uniform(256, 4 * MIB), rng.below(4));
            let seen = faults.injected();
            match pool.allocate(n, 256, streams[k].view()) {
                Ok(p) => {
                    model.insert(p, n);
                    live.insert(p.addr(), (n, k));
                }
                Err(e) => {
                    assert!(
                        faults.injected() > seen,
                        "a failure without an injected fault: {e}"
                    );
                    assert!(matches!(e, Error::Cuda { code: 999, .. }), "{e}");
                    errors += 1;
                }
            }
            assert_eq!(
                pool.pool_size() - pool.free_bytes(),
                model.rounded(),
                "pool used bytes"
            );
        }
        injected += faults.injected();
    }
    assert!(injected > 0, "no event fault injected");
    assert_eq!(pool.pool_size(), up.live_bytes());
    for (a, (n, k)) in std::mem::take(&mut live) {
        // SAFETY: allocated from the pool with these arguments, freed once.
        unsafe { pool.deallocate(DevicePtr::new(a), n, 256, streams[k].view()) };
    }
    // Serves again: a block freed on one stream taken by another.
    let p = pool.allocate(MIB, 256, streams[0].view()).unwrap();
    // SAFETY: allocated just above.
    unsafe { pool.deallocate(p, MIB, 256, streams[0].view()) };
    let q = pool.allocate(MIB, 256, streams[1].view()).unwrap();
    // SAFETY: allocated just above.
    unsafe { pool.deallocate(q, MIB, 256, streams[1].view()) };
    assert_eq!((pool.free_bytes(), pool.bad_frees()), (pool.pool_size(), 0));
    drop(pool);
    assert_eq!((up.live_bytes(), up.live_allocations()), (0, 0));
    drop((up, streams));
    memory_back("pool cross-stream", before);
    summary("cuEventRecord+cuStreamWaitEvent/pool(cuda)", injected, errors);
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

/// Containers' copies and resizes while cuMemcpyAsync (and the event
/// calls that order two streams) fail: the error surfaces, a failed copy
/// frees what it allocated, and the original keeps its contents.
#[test]
fn gpu_containers_survive_copy_faults() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let up = FaultyResource::new(CudaAsyncMemoryResource::new().unwrap());
    let (a, b) = (CudaStream::new().unwrap(), CudaStream::new().unwrap());
    let host = pattern(3 * MIB + 5);
    let (mut injected, mut errors) = (0, 0);
    let mut buffer = DeviceBuffer::from_host(&host, a.view(), up.clone()).unwrap();
    let mut vector = DeviceUvector::<u32>::with_resource(MIB, a.view(), up.clone()).unwrap();
    vector.copy_from_host(&vec![7u32; MIB], a.view()).unwrap();
    for plan in [
        FaultPlan::call("cuMemcpyAsync"),
        FaultPlan::call("cuEventRecord"),
        FaultPlan::call("cuStreamWaitEvent"),
    ] {
        let faults = DriverFaults::inject(plan.clone());
        let held = up.live_allocations();
        let surfaced = |r: rmm::Result<()>, errors: &mut u64| match r {
            Ok(()) => {}
            Err(e) => {
                assert!(matches!(e, Error::Cuda { code: 999, .. }), "{plan:?}: {e}");
                *errors += 1;
            }
        };
        // A new buffer from host bytes, a clone onto another stream, a growth.
        surfaced(
            DeviceBuffer::from_host(&host, b.view(), up.clone()).map(drop),
            &mut errors,
        );
        surfaced(buffer.try_clone_on(b.view(), up.clone()).map(drop), &mut errors);
        let (size, capacity) = (buffer.size(), buffer.capacity());
        match buffer.resize(2 * host.len(), a.view()) {
            Ok(()) => buffer.resize(host.len(), a.view()).unwrap(),
            Err(e) => {
                surfaced(Err(e), &mut errors);
                assert_eq!(
                    (buffer.size(), buffer.capacity()),
                    (size, capacity),
                    "a failed resize changed the buffer"
                );
            }
        }
        surfaced(vector.resize(3 * MIB, a.view()), &mut errors);
        if vector.len() != MIB {
            vector.resize(MIB, a.view()).unwrap();
        }
        injected += faults.injected();
        drop(faults);
        // Nothing failed keeps an allocation; the contents survive.
        assert_eq!(up.live_allocations(), held, "{plan:?}: allocations leaked");
        buffer.shrink_to_fit(a.view()).unwrap();
        vector.shrink_to_fit(a.view()).unwrap();
        assert_eq!(up.live_allocations(), 2, "{plan:?}: allocations leaked");
        assert_eq!(
            buffer.to_host(a.view()).unwrap(),
            host,
            "{plan:?}: contents changed"
        );
        assert!(
            vector.copy_to_host(a.view()).unwrap().iter().all(|&v| v == 7),
            "{plan:?}"
        );
    }
    assert!(injected > 0 && errors > 0, "injected {injected}, errors {errors}");
    drop((buffer, vector));
    rmm::device::synchronize().unwrap();
    assert_eq!((up.live_bytes(), up.live_allocations()), (0, 0));
    drop((up, a, b));
    memory_back("containers", before);
    summary(
        "cuMemcpyAsync+cuEventRecord+cuStreamWaitEvent/containers",
        injected,
        errors,
    );
}

/// The virtual-memory pool's growth with cuMemMap or cuMemCreate failing:
/// the error surfaces, nothing stays mapped or created, and it grows once
/// the faults stop.
#[test]
fn gpu_vm_pool_survives_map_faults() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let pool =
        VirtualPoolMemoryResource::new(VirtualPoolOptions::default().maximum_pool_size(1 << 30)).unwrap();
    let s = CudaStreamView::DEFAULT;
    let (mut injected, mut errors) = (0, 0);
    let mut live = Live::default();
    for (plan, oom) in [
        (FaultPlan::call("cuMemMap"), false),
        (FaultPlan::call("cuMemCreate"), true),
        (FaultPlan::call("cuMemSetAccess"), false),
    ] {
        let faults = DriverFaults::inject(plan.clone());
        let mapped = pool.pool_size();
        let err = pool.allocate(64 * MIB, 256, s).unwrap_err();
        assert_eq!(err.is_out_of_memory(), oom, "{plan:?}: {err}");
        assert!(
            oom || matches!(err, Error::Cuda { code: 999, .. }),
            "{plan:?}: {err}"
        );
        assert_eq!(
            pool.pool_size(),
            mapped,
            "{plan:?}: a failed growth changed the pool"
        );
        memory_back("vm_pool under faults", before - mapped);
        injected += faults.injected();
        errors += 1;
        drop(faults);
        let p = pool.allocate(64 * MIB, 256, s).unwrap();
        live.insert(p, 64 * MIB);
        assert_eq!(pool.pool_size() - pool.free_bytes(), live.rounded());
    }
    live.free_all(&pool, s);
    drop(pool);
    memory_back("vm_pool", before);
    summary("cuMemMap+cuMemCreate+cuMemSetAccess/vm_pool", injected, errors);
}

/// A driver free that fails is never silent: it is logged and counted in
/// `failed_driver_frees`. An injected failure makes no call, so the memory
/// is still allocated afterwards: the test frees it for real once the
/// faults stop, and the device's memory comes back.
#[test]
fn gpu_failed_driver_frees_are_counted() {
    rmm_testing::require_gpu!();
    let _serial = serial();
    let before = free_memory();
    let counted = rmm::mr::failed_driver_frees();
    let cuda = CudaMemoryResource::new();
    let s = CudaStreamView::DEFAULT;
    let ptrs: Vec<DevicePtr> = (0..3).map(|_| cuda.allocate(64 * MIB, 256, s).unwrap()).collect();
    let faults = DriverFaults::inject(FaultPlan::call("cuMemFree"));
    for &p in &ptrs {
        // SAFETY: allocated above; the injected failure leaves it allocated.
        unsafe { cuda.deallocate(p, 64 * MIB, 256, s) };
    }
    let mut injected = faults.injected();
    drop(faults);
    assert_eq!((injected, rmm::mr::failed_driver_frees() - counted), (3, 3));
    for &p in &ptrs {
        // SAFETY: still allocated (the failed free made no driver call).
        unsafe { cuda.deallocate(p, 64 * MIB, 256, s) };
    }
    let stream = CudaStream::new().unwrap();
    let pool = CudaAsyncMemoryResource::new().unwrap();
    let p = pool.allocate(64 * MIB, 256, stream.view()).unwrap();
    let faults = DriverFaults::inject(FaultPlan::call("cuMemFreeAsync"));
    // SAFETY: allocated above; the injected failure leaves it allocated.
    unsafe { pool.deallocate(p, 64 * MIB, 256, stream.view()) };
    injected += faults.injected();
    drop(faults);
    assert_eq!((injected, rmm::mr::failed_driver_frees() - counted), (4, 4));
    // SAFETY: still allocated (the failed free made no driver call).
    unsafe { pool.deallocate(p, 64 * MIB, 256, stream.view()) };
    rmm::device::synchronize().unwrap();
    assert_eq!(rmm::mr::failed_driver_frees() - counted, 4);
    drop((pool, stream));
    memory_back("failed frees", before);
    summary(
        "cuMemFree+cuMemFreeAsync/failed frees counted",
        injected,
        injected,
    );
}
