//! Devices, streams, errors and the specifics of each base resource.

#[macro_use]
mod common;

use rmm::device::{self, DeviceGuard, DeviceId};
use rmm::mr::{
    CudaAsyncMemoryResource, CudaAsyncOptions, CudaAsyncViewMemoryResource, CudaMemoryResource,
    ExportHandleType, ManagedMemoryResource, MemoryResource, PinnedHostMemoryResource, SharedResource,
    SimulatedMemoryResource,
};
use rmm::{CudaStream, CudaStreamPool, CudaStreamView, DevicePtr, Error};

// ---- CPU: errors and argument checks -------------------------------------

#[test]
fn out_of_memory_is_mapped_in_one_place() {
    let e = Error::from_cuda(2, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc_v2", 12345);
    assert!(e.is_out_of_memory() && e.is_bad_alloc());
    assert!(e.to_string().contains("out_of_memory") && e.to_string().contains("12345"));
    let e = Error::from_cuda(700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cuStreamSynchronize", 0);
    assert_eq!(
        e,
        Error::Cuda {
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS",
            call: "cuStreamSynchronize"
        }
    );
    assert!(!e.is_out_of_memory());
}

#[test]
fn stream_pool_of_size_zero_is_an_error() {
    assert!(matches!(CudaStreamPool::new(0), Err(Error::Logic(_))));
}

#[test]
fn stream_view_constants() {
    assert!(CudaStreamView::DEFAULT.is_default() && CudaStreamView::LEGACY.is_default());
    assert!(!CudaStreamView::DEFAULT.is_per_thread_default());
    assert!(CudaStreamView::PER_THREAD.is_per_thread_default());
    assert_eq!(CudaStreamView::default(), CudaStreamView::DEFAULT);
    assert_eq!(
        format!("{:?}", CudaStreamView::PER_THREAD),
        "CudaStreamView(per-thread)"
    );
}

#[test]
fn percent_above_100_is_invalid() {
    assert!(matches!(
        device::percent_of_free_device_memory(101),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn simulated_reports_bad_frees_without_crashing() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = CudaStreamView::DEFAULT;
    let p = sim.allocate(1000, 256, s).unwrap();
    // SAFETY: deliberate misuse; the simulated resource only bookkeeps.
    unsafe {
        sim.deallocate(DevicePtr::new(0xdead00), 10, 256, s);
        sim.deallocate(p, 999, 256, s);
    }
    assert_eq!(sim.bad_frees(), 2);
    assert_eq!(sim.live_allocations(), 1);
    // SAFETY: the correct free.
    unsafe { sim.deallocate(p, 1000, 256, s) };
    assert_eq!(
        (sim.live_allocations(), sim.allocated_bytes(), sim.peak_bytes()),
        (0, 0, 1024)
    );
}

#[test]
fn shared_resource_is_not_wrapped_twice_and_downcasts() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let a = SharedResource::new(sim.clone());
    let b = SharedResource::new(a.clone());
    assert!(a.ptr_eq(&b));
    assert!(a.inner().downcast_ref::<SimulatedMemoryResource>().is_some());
    let other = SimulatedMemoryResource::new(1 << 20);
    assert!(!a.is_equal(&other) && !other.is_equal(&a));
}

// ---- GPU -----------------------------------------------------------------

/// A failed device-wide allocation makes the driver trim every memory pool,
/// so the out-of-memory test must not run beside the pool-size checks.
static POOL_TRIM: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn pool_trim_lock() -> std::sync::MutexGuard<'static, ()> {
    POOL_TRIM.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn devices_and_guard() {
    rmm_testing::require_gpu!();
    assert!(device::device_count() >= 1);
    let before = device::current_device().unwrap();
    {
        let _g = DeviceGuard::new(DeviceId(0)).unwrap();
        assert_eq!(device::current_device().unwrap(), DeviceId(0));
    }
    assert_eq!(device::current_device().unwrap(), before);
    let bad = DeviceId(device::device_count() as i32);
    assert!(matches!(DeviceGuard::new(bad), Err(Error::InvalidArgument(_))));
    let (free, total) = device::available_device_memory().unwrap();
    assert!(free > 0 && free <= total);
    let half = device::percent_of_free_device_memory(50).unwrap();
    assert!(half.is_multiple_of(256) && half <= free / 2 + 256 && half > 0);
}

#[test]
fn streams_and_pool() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    assert!(!s.view().is_default());
    s.synchronize().unwrap();
    assert!(s.view().is_idle().unwrap());
    let nb = CudaStream::non_blocking().unwrap();
    assert_ne!(nb.view(), s.view());
    #[cfg(feature = "cust")]
    assert_eq!(
        s.as_cust()
            .expect("a stream rmm made has a cust stream")
            .as_inner() as usize,
        s.view().as_raw()
    );
    let pool = CudaStreamPool::new(4).unwrap();
    assert_eq!(pool.pool_size(), 4);
    assert_eq!(pool.get_stream_by_id(5), pool.get_stream_by_id(1));
    let seen: std::collections::HashSet<_> = (0..8).map(|_| pool.get_stream()).collect();
    assert_eq!(seen.len(), 4, "round robin visits every stream");
    CudaStreamView::DEFAULT.synchronize().unwrap();
    CudaStreamView::PER_THREAD.synchronize().unwrap();
    // A stream converts to cust and back, once nobody else shares it.
    #[cfg(feature = "cust")]
    {
        let raw = s.view().as_raw();
        let shared = s.clone();
        let s = s.into_cust().expect_err("a clone shares the stream");
        drop(shared);
        let cust_stream = s.into_cust().expect("sole owner");
        assert_eq!(cust_stream.as_inner() as usize, raw);
        let back = CudaStream::from(cust_stream);
        assert_eq!(back.view().as_raw(), raw);
    }
}

/// A container keeps its stream alive: the caller's `CudaStream` may drop
/// first, and the buffer is still used and freed on a live stream.
#[test]
fn containers_keep_their_stream_alive() {
    rmm_testing::require_gpu!();
    let (buf, raw) = {
        let s = CudaStream::new().unwrap();
        let buf =
            rmm::DeviceBuffer::from_host(&[7u8; 64], s.view(), rmm::mr::CudaMemoryResource::new()).unwrap();
        (buf, s.view().as_raw())
    };
    assert_eq!(buf.stream().as_raw(), raw);
    buf.stream().synchronize().unwrap();
    assert_eq!(buf.to_host(buf.stream()).unwrap(), vec![7u8; 64]);
    let policy = {
        let s = CudaStream::new().unwrap();
        rmm::exec_policy::ExecPolicy::new(s.view(), rmm::mr::CudaMemoryResource::new())
    };
    let scratch = policy.scratch::<u32>(16).unwrap();
    drop(policy);
    scratch.stream().synchronize().unwrap();
    // The stream is shared: it cannot be taken back from cust's side while
    // a container keeps it.
    #[cfg(feature = "cust")]
    {
        let s = CudaStream::new().unwrap();
        let v = rmm::DeviceUvector::<u32>::new(4, s.view()).unwrap();
        let s = s.into_cust().expect_err("the vector keeps the stream");
        drop(v);
        assert!(s.into_cust().is_ok());
    }
}

#[test]
fn real_out_of_memory_on_every_base_resource() {
    rmm_testing::require_gpu!();
    let _serial = pool_trim_lock();
    let (_, total) = device::available_device_memory().unwrap();
    let s = CudaStream::new().unwrap();
    let too_big = total * 2;
    let resources: Vec<SharedResource> = vec![
        SharedResource::new(CudaMemoryResource::new()),
        SharedResource::new(CudaAsyncMemoryResource::new().unwrap()),
    ];
    for mr in resources {
        let e = mr.allocate(too_big, 256, s.view()).unwrap_err();
        assert!(e.is_out_of_memory(), "{mr:?}: {e}");
        assert!(
            e.to_string().contains(&too_big.to_string()),
            "message names the size: {e}"
        );
    }
}

#[test]
fn cuda_async_options_and_views() {
    rmm_testing::require_gpu!();
    let _serial = pool_trim_lock();
    let mr = CudaAsyncMemoryResource::new().unwrap();
    assert_eq!(
        mr.release_threshold().unwrap(),
        u64::MAX,
        "default keeps everything"
    );
    let primed = CudaAsyncMemoryResource::with_options(
        CudaAsyncOptions::default()
            .initial_pool_size(64 << 20)
            .release_threshold(1 << 30),
    )
    .unwrap();
    assert_eq!(primed.release_threshold().unwrap(), 1 << 30);
    assert!(
        primed.reserved_bytes().unwrap() >= 64 << 20,
        "priming reserved the initial size"
    );
    assert!(!mr.is_equal(&primed), "distinct pools differ");
    assert!(mr.is_equal(&mr.clone()));
    // A view over the same pool is equal and can free the owner's memory.
    let view = mr.view();
    assert!(view.is_equal(&mr) && mr.is_equal(&view));
    let s = CudaStream::new().unwrap();
    let p = mr.allocate(1 << 20, 256, s.view()).unwrap();
    // SAFETY: view and mr share the pool; p is unused.
    unsafe { view.deallocate(p, 1 << 20, 256, s.view()) };
    // A view from a raw handle; null is refused.
    // SAFETY: the handle belongs to `mr`, which outlives `raw_view`.
    let raw_view = unsafe { CudaAsyncViewMemoryResource::from_raw(mr.pool_handle()) }.unwrap();
    assert!(raw_view.is_equal(&mr));
    // SAFETY: null is checked before use.
    let null_view = unsafe { CudaAsyncViewMemoryResource::from_raw(0) };
    assert!(matches!(null_view, Err(Error::Logic(_))));
    common::mixed_random(&raw_view, 500, 1 << 20, 11);
    // An exportable pool (POSIX fd) works or reports a clear logic error.
    match CudaAsyncMemoryResource::with_options(
        CudaAsyncOptions::default().export_handle_type(ExportHandleType::PosixFileDescriptor),
    ) {
        Ok(exp) => common::mixed_random(&exp, 200, 1 << 20, 12),
        Err(e) => assert!(matches!(e, Error::Logic(_)), "{e}"),
    }
    assert_eq!(mr.device(), Some(DeviceId(0)));
}

#[test]
fn cuda_async_pools_are_recycled_with_default_settings() {
    rmm_testing::require_gpu!();
    // Every test of this binary that makes a driver pool holds this lock, so
    // the pool given back below is the last one in the idle list when the
    // second resource asks.
    let _serial = pool_trim_lock();
    let first = CudaAsyncMemoryResource::with_options(CudaAsyncOptions::default().release_threshold(1 << 30))
        .unwrap();
    let handle = first.pool_handle();
    let s = CudaStream::new().unwrap();
    let p = first.allocate(32 << 20, 256, s.view()).unwrap();
    // SAFETY: p came from `first` with these arguments and is unused.
    unsafe { first.deallocate(p, 32 << 20, 256, s.view()) };
    s.synchronize().unwrap();
    assert!(
        first.reserved_bytes().unwrap() >= 32 << 20,
        "a 1 GiB threshold keeps the freed block"
    );
    drop(first);
    let second = CudaAsyncMemoryResource::new().unwrap();
    assert_eq!(second.pool_handle(), handle, "the pool was recycled");
    assert_eq!(
        second.release_threshold().unwrap(),
        u64::MAX,
        "the new owner's threshold"
    );
    assert_eq!(
        second.reserved_bytes().unwrap(),
        0,
        "the first owner's memory went back to the driver"
    );
    common::mixed_random(&second, 200, 1 << 20, 13);
}

#[test]
fn host_accessible_resources_are_writable_from_the_host() {
    rmm_testing::require_gpu!();
    for mr in [
        SharedResource::new(ManagedMemoryResource::new()),
        SharedResource::new(PinnedHostMemoryResource::new()),
    ] {
        assert!(mr.is_host_accessible() && mr.is_device_accessible());
        let n = 4096;
        let p = mr.allocate(n, 256, CudaStreamView::DEFAULT).unwrap();
        // SAFETY: host-accessible memory of n bytes, not used by the GPU now.
        let host = unsafe { std::slice::from_raw_parts_mut(p.as_mut_ptr::<u8>(), n) };
        host.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        common::touch(mr.inner(), p, n, CudaStreamView::DEFAULT);
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, n, 256, CudaStreamView::DEFAULT) };
    }
    assert!(!CudaMemoryResource::new().is_host_accessible());
}

#[test]
fn stateless_resources_compare_equal() {
    // Runs everywhere: construction touches no driver.
    assert!(CudaMemoryResource::new().is_equal(&CudaMemoryResource::new()));
    assert!(ManagedMemoryResource::new().is_equal(&ManagedMemoryResource::new()));
    assert!(!CudaMemoryResource::new().is_equal(&ManagedMemoryResource::new()));
    assert!(PinnedHostMemoryResource::new().is_equal(&PinnedHostMemoryResource::new()));
}
