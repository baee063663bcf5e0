//! RMM's multi-device rules on two GPUs. These tests need 2 GPUs: they skip
//! with fewer, and fail instead when `RMM_REQUIRE_GPUS=2` is set.

#[macro_use]
mod common;

use std::sync::Mutex;

use rmm::device::PointerKind;
use rmm::device::{self, DeviceGuard, DeviceId};
use rmm::mr::{
    per_device_resource, reset_per_device_resource, set_per_device_resource, CudaAsyncMemoryResource,
    CudaMemoryResource, MemoryResource, SharedResource,
};
use rmm::{peer, CudaStream, Error};

static SERIAL: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// README's loop: one resource per device, made with its device current.
fn per_device_async_resources() -> Vec<SharedResource> {
    (0..2)
        .map(|d| {
            let _g = DeviceGuard::new(DeviceId(d)).unwrap();
            let mr = SharedResource::new(CudaAsyncMemoryResource::new().unwrap());
            set_per_device_resource(DeviceId(d), mr.clone()).unwrap();
            mr
        })
        .collect()
}

#[test]
fn per_device_registry_holds_each_devices_resource() {
    let _l = lock();
    rmm_testing::require_gpus!(2);
    let mrs = per_device_async_resources();
    for d in 0..2 {
        let _g = DeviceGuard::new(DeviceId(d)).unwrap();
        let r = per_device_resource(DeviceId(d));
        assert!(r.ptr_eq(&mrs[d as usize]));
        assert_eq!(r.device(), Some(DeviceId(d)));
        let s = CudaStream::new().unwrap();
        let p = r.allocate(1 << 20, 256, s.view()).unwrap();
        assert_eq!(
            rmm::device::pointer_kind(p.addr()).unwrap(),
            PointerKind::Device(d),
            "memory lives on its device"
        );
        common::touch(r.inner(), p, 1 << 20, s.view());
        // SAFETY: allocated just above from r; the stream is idle after touch.
        unsafe { r.deallocate(p, 1 << 20, 256, s.view()) };
    }
    assert!(!mrs[0].is_equal(&mrs[1]));
    // A resource of device 0 cannot become device 1's resource.
    assert!(matches!(
        set_per_device_resource(DeviceId(1), mrs[0].clone()),
        Err(Error::Logic(_))
    ));
    for d in 0..2 {
        reset_per_device_resource(DeviceId(d));
    }
}

#[test]
fn resource_used_under_the_wrong_device_is_an_error() {
    let _l = lock();
    rmm_testing::require_gpus!(2);
    let mr0 = {
        let _g = DeviceGuard::new(DeviceId(0)).unwrap();
        CudaAsyncMemoryResource::new().unwrap()
    };
    let _g1 = DeviceGuard::new(DeviceId(1)).unwrap();
    let r = mr0.allocate(4096, 256, rmm::CudaStreamView::DEFAULT);
    assert!(
        matches!(r, Err(Error::Logic(ref m)) if m.contains("device 0")),
        "{r:?}"
    );
}

#[test]
fn peer_copy_between_devices() {
    let _l = lock();
    rmm_testing::require_gpus!(2);
    let n = 8 << 20;
    let cuda = CudaMemoryResource::new();
    let (src, s0) = {
        let _g = DeviceGuard::new(DeviceId(0)).unwrap();
        let s0 = CudaStream::new().unwrap();
        let p = cuda.allocate(n, 256, s0.view()).unwrap();
        // SAFETY: p is n bytes of device 0 memory.
        unsafe { rmm::launch::memset_async(p, 0x5A, 1, n, s0.view()).unwrap() };
        s0.synchronize().unwrap();
        (p, s0)
    };
    let _g1 = DeviceGuard::new(DeviceId(1)).unwrap();
    if peer::can_access_peer(DeviceId(1), DeviceId(0)).unwrap() {
        peer::enable_peer_access(DeviceId(1), DeviceId(0)).unwrap();
        peer::enable_peer_access(DeviceId(1), DeviceId(0)).unwrap(); // idempotent
    }
    assert!(matches!(
        peer::enable_peer_access(DeviceId(1), DeviceId(1)),
        Err(Error::Logic(_))
    ));
    let s1 = CudaStream::new().unwrap();
    let dst = cuda.allocate(n, 256, s1.view()).unwrap();
    // A pointer of the wrong device is refused before any copy.
    // SAFETY: the call fails its pointer check before copying.
    let wrong = unsafe { peer::copy_peer_async(dst, DeviceId(0), src, DeviceId(0), n, s1.view()) };
    assert!(matches!(wrong, Err(Error::InvalidArgument(_))), "{wrong:?}");
    // SAFETY: both ranges are n bytes of their devices' memory.
    unsafe { peer::copy_peer_async(dst, DeviceId(1), src, DeviceId(0), n, s1.view()).unwrap() };
    let mut host = vec![0u8; n];
    // SAFETY: host outlives the copy (synchronised below).
    unsafe {
        rmm::launch::memcpy_async(rmm::DevicePtr::new(host.as_mut_ptr() as u64), dst, n, s1.view()).unwrap()
    };
    s1.synchronize().unwrap();
    assert!(host.iter().all(|&b| b == 0x5A));
    // SAFETY: both allocations are idle; each is freed with its device current.
    unsafe { cuda.deallocate(dst, n, 256, s1.view()) };
    let _g0 = DeviceGuard::new(DeviceId(0)).unwrap();
    // SAFETY: as above.
    unsafe { cuda.deallocate(src, n, 256, s0.view()) };
}

#[test]
fn eight_threads_over_both_devices_driver_pools() {
    let _l = lock();
    rmm_testing::require_gpus!(2);
    let mrs = per_device_async_resources();
    std::thread::scope(|scope| {
        for t in 0..8usize {
            let mr = mrs[t % 2].clone();
            scope.spawn(move || {
                device::set_current_device(DeviceId((t % 2) as i32)).unwrap();
                common::mixed_random(mr.inner(), 1500, 1 << 20, 300 + t as u64);
            });
        }
    });
    for d in 0..2 {
        reset_per_device_resource(DeviceId(d));
    }
}

/// One pool and one arena per device, each made with its device current,
/// used by 8 threads spread over both devices.
#[test]
fn eight_threads_over_both_devices_pools_and_arenas() {
    use rmm::mr::{ArenaMemoryResource, ArenaOptions, PoolMemoryResource, PoolOptions};
    let _l = lock();
    rmm_testing::require_gpus!(2);
    let mut per_device: Vec<[SharedResource; 2]> = Vec::new();
    for d in 0..2 {
        let _g = DeviceGuard::new(DeviceId(d)).unwrap();
        let pool = PoolMemoryResource::new(
            CudaMemoryResource::new(),
            PoolOptions::default().initial_pool_size(1 << 30),
        )
        .unwrap();
        let arena = ArenaMemoryResource::new(
            CudaMemoryResource::new(),
            ArenaOptions::default().arena_size(4 << 30),
        )
        .unwrap();
        per_device.push([SharedResource::new(pool), SharedResource::new(arena)]);
    }
    std::thread::scope(|scope| {
        for t in 0..8usize {
            let d = t % 2;
            let mr = per_device[d][(t / 2) % 2].clone();
            scope.spawn(move || {
                device::set_current_device(DeviceId(d as i32)).unwrap();
                common::mixed_random(mr.inner(), 1500, 1 << 20, 500 + t as u64);
                // Memory of each device's resources lives on that device.
                let p = mr.allocate(4096, 256, rmm::CudaStreamView::DEFAULT).unwrap();
                assert_eq!(
                    rmm::device::pointer_kind(p.addr()).unwrap(),
                    PointerKind::Device(d as i32)
                );
                // SAFETY: allocated just above from mr; unused.
                unsafe { mr.deallocate(p, 4096, 256, rmm::CudaStreamView::DEFAULT) };
            });
        }
    });
    // Each device's resources go away with their device current.
    for (d, mrs) in per_device.into_iter().enumerate() {
        let _g = DeviceGuard::new(DeviceId(d as i32)).unwrap();
        drop(mrs);
    }
}

/// Pools, arenas, fixed-size and binning resources over the stateless cuda
/// resource record the device current at their construction: they report
/// it, the registry refuses them for the other device, their slow paths
/// (growth, defragmentation) refuse to run under the other device, and they
/// release their memory on their own device when dropped under another.
#[test]
fn sub_allocators_over_cuda_record_their_device() {
    use rmm::mr::{
        ArenaMemoryResource, ArenaOptions, BinningMemoryResource, FixedSizeMemoryResource, FixedSizeOptions,
        PoolMemoryResource, PoolOptions, StatisticsAdaptor,
    };
    let _l = lock();
    rmm_testing::require_gpus!(2);
    // Every upstream block goes through one statistics adaptor, so "the
    // memory went back" is checked exactly (free device memory also moves
    // with other processes on the GPU).
    let upstream = StatisticsAdaptor::new(CudaMemoryResource::new());
    let (pool, arena, fixed, binning) = {
        let _g = DeviceGuard::new(DeviceId(0)).unwrap();
        let pool = PoolMemoryResource::new(
            upstream.clone(),
            PoolOptions::default().initial_pool_size(64 << 20),
        )
        .unwrap();
        let arena =
            ArenaMemoryResource::new(upstream.clone(), ArenaOptions::default().arena_size(64 << 20)).unwrap();
        let fixed = FixedSizeMemoryResource::new(
            upstream.clone(),
            FixedSizeOptions::default()
                .block_size(1 << 20)
                .blocks_to_preallocate(2),
        )
        .unwrap();
        let binning = BinningMemoryResource::with_fixed_bins(upstream.clone(), 18, 20).unwrap();
        (pool, arena, fixed, binning)
    };
    assert!(
        upstream.bytes_counter().value >= 64 << 20,
        "the pool holds its initial block"
    );
    assert_eq!(pool.device(), Some(DeviceId(0)));
    assert_eq!(arena.device(), Some(DeviceId(0)));
    assert_eq!(fixed.device(), Some(DeviceId(0)));
    assert_eq!(binning.device(), Some(DeviceId(0)));
    for mr in [
        SharedResource::new(pool.clone()),
        SharedResource::new(arena.clone()),
        SharedResource::new(fixed.clone()),
    ] {
        assert!(
            matches!(set_per_device_resource(DeviceId(1), mr), Err(Error::Logic(_))),
            "a device-0 resource is refused as device 1's"
        );
    }

    let _g1 = DeviceGuard::new(DeviceId(1)).unwrap();
    let s = rmm::CudaStreamView::DEFAULT;
    // Growth under device 1: refused, naming both devices.
    let r = pool.allocate(128 << 20, 256, s);
    assert!(
        matches!(r, Err(Error::Logic(ref m)) if m.contains("device 0") && m.contains("device 1")),
        "{r:?}"
    );
    let r = fixed.allocate(4096, 256, s).and_then(|a| {
        let b = fixed.allocate(4096, 256, s);
        let c = fixed.allocate(4096, 256, s);
        // SAFETY: `a` came from `fixed` just above; unused.
        unsafe { fixed.deallocate(a, 4096, 256, s) };
        if let Ok(b) = b {
            // SAFETY: as above.
            unsafe { fixed.deallocate(b, 4096, 256, s) };
        }
        c
    });
    assert!(
        matches!(r, Err(Error::Logic(_))),
        "third block needs a new chunk: {r:?}"
    );
    // The arena hands out its device-0 memory without a device operation;
    // a request that only defragmenting could serve is refused.
    let a = arena.allocate(48 << 20, 256, s).unwrap();
    let r = arena.allocate(48 << 20, 256, s);
    assert!(
        matches!(r, Err(Error::Logic(ref m)) if m.contains("ArenaMemoryResource")),
        "{r:?}"
    );
    // SAFETY: `a` came from `arena` just above; unused.
    unsafe { arena.deallocate(a, 48 << 20, 256, s) };
    // Dropped under device 1: memory returns to device 0 and device 1
    // stays current.
    drop((pool, arena, fixed, binning));
    assert_eq!(device::current_device().unwrap(), DeviceId(1));
    assert_eq!(
        (
            upstream.bytes_counter().value,
            upstream.allocations_counter().value
        ),
        (0, 0),
        "every upstream block went back"
    );
    assert_eq!(upstream.bad_frees(), 0);
}
