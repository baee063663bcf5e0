//! Concurrency stress tests that isolate one driver feature each, to find
//! what stalled the `adaptors` and `containers` binaries when their GPU tests
//! ran in parallel on a two-GPU machine (see README, "GPU tests"). Each test
//! runs 8 threads against one feature; a stall shows up as this binary
//! timing out, and the test that did not finish names the feature.

mod common;

use rmm::mr::{CudaAsyncMemoryResource, ManagedMemoryResource, MemoryResource, PrefetchAdaptor};
use rmm::{CudaStream, DeviceUvector};

const THREADS: usize = 8;

fn on_threads(f: impl Fn(usize) + Sync) {
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let f = &f;
            s.spawn(move || f(t));
        }
    });
}

/// Driver pools created, used and destroyed by many threads at once.
#[test]
fn driver_pools_created_and_destroyed_concurrently() {
    rmm_testing::require_gpu!();
    on_threads(|t| {
        for round in 0..20 {
            let mr = CudaAsyncMemoryResource::new().unwrap();
            let s = CudaStream::new().unwrap();
            let p = mr.allocate(1 << 20, 256, s.view()).unwrap();
            common::touch(&mr, p, 1 << 20, s.view());
            // SAFETY: allocated above; touch synchronised the stream.
            unsafe { mr.deallocate(p, 1 << 20, 256, s.view()) };
            let _ = (t, round);
        }
    });
}

/// Managed memory allocated, written through the GPU and freed by many threads.
#[test]
fn managed_memory_concurrently() {
    rmm_testing::require_gpu!();
    on_threads(|_| {
        let mr = ManagedMemoryResource::new();
        let s = CudaStream::new().unwrap();
        for _ in 0..50 {
            let p = mr.allocate(1 << 20, 256, s.view()).unwrap();
            common::touch(&mr, p, 1 << 20, s.view());
            // SAFETY: allocated above; touch synchronised the stream.
            unsafe { mr.deallocate(p, 1 << 20, 256, s.view()) };
        }
    });
}

/// Managed memory prefetched to the device by many threads.
#[test]
fn prefetch_concurrently() {
    rmm_testing::require_gpu!();
    on_threads(|_| {
        let mr = PrefetchAdaptor::new(ManagedMemoryResource::new());
        let s = CudaStream::new().unwrap();
        for _ in 0..50 {
            let p = mr.allocate(1 << 20, 256, s.view()).unwrap();
            s.synchronize().unwrap();
            // SAFETY: allocated above; the stream is idle.
            unsafe { mr.deallocate(p, 1 << 20, 256, s.view()) };
        }
    });
}

/// Asynchronous element writes (a copy plus a stream host function each)
/// from many threads, each on its own stream, over a driver pool.
#[test]
fn host_function_writes_concurrently() {
    rmm_testing::require_gpu!();
    let mr = CudaAsyncMemoryResource::new().unwrap();
    on_threads(|t| {
        let s = CudaStream::new().unwrap();
        let mut v = DeviceUvector::<u64>::with_resource(1024, s.view(), mr.clone()).unwrap();
        for i in 0..1024 {
            v.set_element_async(i, (t * 10_000 + i) as u64, s.view()).unwrap();
        }
        let host = v.copy_to_host(s.view()).unwrap();
        assert!(host
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (t * 10_000 + i) as u64));
    });
}

/// Containers on foreign streams (event joins) from many threads over
/// driver pools, with managed memory in the mix, as the containers tests do.
#[test]
fn containers_on_foreign_streams_concurrently() {
    rmm_testing::require_gpu!();
    on_threads(|t| {
        let own = CudaStream::new().unwrap();
        let other = CudaStream::new().unwrap();
        let mr = if t % 2 == 0 {
            rmm::mr::SharedResource::new(CudaAsyncMemoryResource::new().unwrap())
        } else {
            rmm::mr::SharedResource::new(ManagedMemoryResource::new())
        };
        for round in 0..20u32 {
            let host: Vec<u32> = (0..4096).map(|i| i ^ round).collect();
            let v = DeviceUvector::from_slice_with_resource(&host, own.view(), mr.clone()).unwrap();
            assert_eq!(v.copy_to_host(other.view()).unwrap(), host);
        }
    });
}
