//! The soak test: many threads over every GPU, each on its own streams,
//! mixing every resource and adaptor (allocate, write, free on another
//! stream, containers that resize, ExecPolicy scratch, switching the current
//! device resource) for a fixed time, under a [`Watchdog`] that aborts with
//! every thread's state (and stacks, with `RMM_EU_STACK`) when a thread
//! makes no progress for 10 s.
//!
//! `RMM_SOAK_SECONDS` (default 60) and `RMM_SOAK_THREADS` (default 32) size
//! it. It skips without a GPU and fails with `RMM_REQUIRE_GPU=1`.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmm::device::{device_count, set_current_device, DeviceId};
use rmm::exec_policy::ExecPolicy;
use rmm::mr::adaptors::{
    AlignedAdaptor, FailureCallbackAdaptor, LimitingAdaptor, LoggingAdaptor, PrefetchAdaptor,
    StatisticsAdaptor, ThreadSafeAdaptor, TrackingAdaptor,
};
use rmm::mr::{
    current_device_resource, set_current_device_resource, ArenaMemoryResource, ArenaOptions,
    BinningMemoryResource, CudaAsyncMemoryResource, CudaMemoryResource, FixedSizeMemoryResource,
    FixedSizeOptions, ManagedMemoryResource, MemoryResource, PinnedHostMemoryResource, PoolMemoryResource,
    PoolOptions, SharedResource,
};
use rmm::{CudaStream, DeviceBuffer, DevicePtr, DeviceUvector};
use rmm_testing::{SplitMix64, Watchdog};

const MIB: usize = 1 << 20;

/// Every resource and adaptor of one device, by name.
///
/// Built here rather than through `rmm_replay::by_name`: that factory has no
/// names for the aligned, failure-callback, limiting, logging and prefetch
/// adaptors or for a view of a driver pool, and it builds a fresh upstream
/// per name (sub-allocators over `cuda`), while this list deliberately
/// stacks several adaptors over one shared pool and several resources over
/// one `cuda_async` pool, so that they contend for the same state.
fn resources_of(device: DeviceId, log_dir: &std::path::Path) -> Vec<(&'static str, SharedResource)> {
    set_current_device(device).expect("device");
    let cuda_async = CudaAsyncMemoryResource::new().expect("cuda_async");
    let pool = PoolMemoryResource::new(
        cuda_async.clone(),
        PoolOptions::default().initial_pool_size(256 * MIB),
    )
    .expect("pool");
    let log = log_dir.join(format!("soak-{}.csv", device.value()));
    vec![
        ("cuda", SharedResource::new(CudaMemoryResource::new())),
        ("cuda_async", SharedResource::new(cuda_async.clone())),
        ("cuda_async_view", SharedResource::new(cuda_async.view())),
        ("managed", SharedResource::new(ManagedMemoryResource::new())),
        (
            "pinned_host",
            SharedResource::new(PinnedHostMemoryResource::new()),
        ),
        ("pool", SharedResource::new(pool.clone())),
        (
            "fixed_size",
            SharedResource::new(
                FixedSizeMemoryResource::new(CudaMemoryResource::new(), FixedSizeOptions::default())
                    .expect("fixed_size"),
            ),
        ),
        (
            "binning",
            SharedResource::new(BinningMemoryResource::new(cuda_async.clone())),
        ),
        (
            "arena",
            SharedResource::new(
                ArenaMemoryResource::new(
                    CudaMemoryResource::new(),
                    ArenaOptions::default().arena_size(1 << 30),
                )
                .expect("arena"),
            ),
        ),
        (
            "aligned",
            SharedResource::new(AlignedAdaptor::new(cuda_async.clone(), 4096, 64 * 1024).expect("aligned")),
        ),
        (
            "failure_callback",
            SharedResource::new(FailureCallbackAdaptor::new(pool.clone(), |_| false)),
        ),
        (
            "limiting",
            SharedResource::new(LimitingAdaptor::new(cuda_async.clone(), 8 << 30)),
        ),
        (
            "logging",
            SharedResource::new(LoggingAdaptor::new(pool.clone(), Some(&log), false).expect("logging")),
        ),
        (
            "prefetch",
            SharedResource::new(PrefetchAdaptor::new(ManagedMemoryResource::new())),
        ),
        (
            "statistics",
            SharedResource::new(StatisticsAdaptor::new(pool.clone())),
        ),
        (
            "thread_safe",
            SharedResource::new(ThreadSafeAdaptor::new(pool.clone())),
        ),
        (
            "tracking",
            SharedResource::new(TrackingAdaptor::new(cuda_async, false)),
        ),
    ]
}

#[test]
fn soak_every_resource_on_every_gpu() {
    rmm_testing::require_gpu!();
    let seconds = rmm_testing::env::soak_seconds();
    let threads = rmm_testing::env::soak_threads();
    let devices = device_count();
    let log_dir = std::env::temp_dir();
    let per_device: Vec<_> = (0..devices as i32)
        .map(|d| resources_of(DeviceId(d), &log_dir))
        .collect();
    let dog = Watchdog::new("soak", Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let total_ops = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for t in 0..threads {
            let device = DeviceId((t % devices) as i32);
            let resources = &per_device[device.value() as usize];
            let progress = dog.progress(format!("thread {t} ({device})"));
            let total_ops = &total_ops;
            scope.spawn(move || {
                set_current_device(device).expect("device");
                let (a, b) = (
                    CudaStream::new().expect("stream"),
                    CudaStream::new().expect("stream"),
                );
                let mut rng = SplitMix64(0x50A4 + t as u64);
                let mut ops = 0usize;
                while Instant::now() < deadline {
                    let (name, mr) = &resources[rng.below(resources.len())];
                    match rng.below(4) {
                        0 => {
                            // Allocate a batch on A, write some, free on B after A.
                            progress.doing("allocate on A, free on B");
                            let mut live: Vec<(DevicePtr, usize)> = Vec::new();
                            for _ in 0..1 + rng.below(16) {
                                let bytes =
                                    1 + rng.below(if *name == "managed" { 64 << 10 } else { 1 << 20 });
                                let p = mr
                                    .allocate(bytes, 256, a.view())
                                    .unwrap_or_else(|e| panic!("{name}: {bytes} bytes: {e}"));
                                live.push((p, bytes));
                            }
                            common::assert_disjoint(&live);
                            let (p, bytes) = live[rng.below(live.len())];
                            common::touch(mr.inner(), p, bytes, a.view());
                            a.synchronize().expect("sync A");
                            for (p, bytes) in live {
                                // SAFETY: allocated above with these arguments;
                                // A was synchronised, so nothing uses it.
                                unsafe { mr.deallocate(p, bytes, 256, b.view()) };
                            }
                        }
                        1 => {
                            // A typed container that grows and shrinks, checked on the host.
                            progress.doing("container resize");
                            let n = 1 + rng.below(4096);
                            let host: Vec<u32> = (0..n as u32).map(|i| i ^ t as u32).collect();
                            let mut v = DeviceUvector::from_slice_with_resource(&host, a.view(), mr.clone())
                                .unwrap_or_else(|e| panic!("{name}: uvector: {e}"));
                            v.resize(n * 2, a.view()).expect("grow");
                            v.resize(n / 2 + 1, a.view()).expect("shrink");
                            v.shrink_to_fit(a.view()).expect("shrink_to_fit");
                            let back = v.copy_to_host(a.view()).expect("copy back");
                            assert_eq!(&back[..], &host[..n / 2 + 1], "{name}: container contents");
                        }
                        2 => {
                            // Scratch memory of an execution policy on B.
                            progress.doing("exec policy scratch");
                            let policy = ExecPolicy::new(b.view(), mr.clone());
                            let s = policy
                                .scratch::<u64>(1 + rng.below(1 << 16))
                                .unwrap_or_else(|e| panic!("{name}: scratch: {e}"));
                            drop(s);
                            b.synchronize().expect("sync B");
                        }
                        _ => {
                            // Switch this device's current resource, then use it.
                            progress.doing("set_current_device_resource");
                            let previous = set_current_device_resource(mr.clone()).expect("set current");
                            let current = current_device_resource();
                            let buf = DeviceBuffer::with_resource(1 + rng.below(1 << 16), a.view(), current)
                                .unwrap_or_else(|e| panic!("current resource: {e}"));
                            drop(buf);
                            a.synchronize().expect("sync A");
                            let _ = previous;
                        }
                    }
                    ops += 1;
                    progress.tick();
                }
                progress.doing("finishing");
                a.synchronize().expect("sync A");
                b.synchronize().expect("sync B");
                total_ops.fetch_add(ops, Ordering::Relaxed);
            });
        }
    });
    dog.stop();
    let ops = total_ops.load(Ordering::Relaxed);
    eprintln!("soak: {threads} threads over {devices} GPU(s), {seconds} s, {ops} operations");
    assert!(ops >= threads, "soak made almost no progress: {ops} operations");
}
