//! The conformance suite over every base resource, and their own tests.

use rmm::mr::{
    CallbackMemoryResource, CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, CudaMemoryResource,
    ManagedMemoryResource, MemoryResource, PinnedHostMemoryResource, PoolMemoryResource, PoolOptions,
    SamHeadroomMemoryResource, SimulatedMemoryResource, SystemMemoryResource,
};

conformance_suite!(cuda, gpu, CudaMemoryResource::new);
conformance_suite!(managed, gpu, ManagedMemoryResource::new, max = 256 * common::MIB);
conformance_suite!(cuda_async, gpu, || CudaAsyncMemoryResource::new()
    .expect("cuda_async"));
// A view over a pool that the view keeps alive (added after the last GPU run).
conformance_suite!(cuda_async_view, gpu, || CudaAsyncMemoryResource::new()
    .expect("cuda_async")
    .view());
conformance_suite!(
    cuda_async_managed,
    gpu,
    || CudaAsyncManagedMemoryResource::new().expect("managed driver pool (needs a CUDA 13 driver)"),
    max = 256 * common::MIB
);
conformance_suite!(
    pinned_host,
    gpu,
    PinnedHostMemoryResource::new,
    max = 256 * common::MIB
);
// The pinned host pool (#18 item 3): a pool over pinned host memory.
conformance_suite!(
    pinned_pool,
    gpu,
    || PoolMemoryResource::new(PinnedHostMemoryResource::new(), PoolOptions::default()).expect("pinned pool"),
    max = 256 * common::MIB
);
// System memory: for real only where the GPU can access pageable memory
// (the H200 machine cannot: these skip there, and the constructors' error
// is checked by `system_resources_need_pageable_memory_access`).
conformance_suite!(
    system,
    pageable,
    || SystemMemoryResource::new().expect("system"),
    max = 256 * common::MIB
);
conformance_suite!(
    sam_headroom,
    pageable,
    || SamHeadroomMemoryResource::new(common::GIB).expect("sam_headroom"),
    max = 256 * common::MIB
);
// The same host allocations without a GPU: real host memory, no driver.
conformance_suite!(
    system_without_gpu,
    cpu,
    SystemMemoryResource::without_gpu,
    max = 256 * common::MIB
);
conformance_suite!(
    sam_headroom_simulated,
    cpu,
    || SamHeadroomMemoryResource::simulated(common::GIB, SimulatedMemoryResource::new(2 * common::GIB)),
    max = 256 * common::MIB
);
conformance_suite!(
    pool_over_system_without_gpu,
    cpu,
    || PoolMemoryResource::new(SystemMemoryResource::without_gpu(), PoolOptions::default()).expect("pool"),
    max = 256 * common::MIB
);
conformance_suite!(simulated, cpu, || SimulatedMemoryResource::new(64 * common::GIB));
conformance_suite!(callback_over_simulated, cpu, || {
    let sim = SimulatedMemoryResource::new(64 * common::GIB);
    let a = sim.clone();
    CallbackMemoryResource::new(
        move |b, al, s| a.allocate(b, al, s),
        // SAFETY: the callback resource forwards frees of pointers it got from `sim`.
        move |p, b, al, s| unsafe { sim.deallocate(p, b, al, s) },
    )
    .without_gpu()
});
conformance_suite!(callback_over_cuda, gpu, || {
    let cuda = CudaMemoryResource::new();
    CallbackMemoryResource::new(
        move |b, al, s| cuda.allocate(b, al, s),
        // SAFETY: the callback resource forwards frees of pointers it got from `cuda`.
        move |p, b, al, s| unsafe { cuda.deallocate(p, b, al, s) },
    )
});

/// Every GPU name of the resource factory builds, allocates and frees on a
/// GPU, adaptor stacks and `_unchecked` forms included.
#[test]
fn gpu_factory_names_build_and_allocate() {
    rmm_testing::require_gpu!("gpu_factory_names_build_and_allocate");
    use rmm_replay::by_name::{resource, ByNameOptions};
    let opts = ByNameOptions::default().arena_size(256 << 20);
    for name in [
        "cuda",
        "cuda_async",
        "cuda_async_managed",
        "managed",
        "pinned",
        "vmpool",
        "pool",
        "binning",
        "arena",
        "fixed_size",
        "pinned_pool",
        "pinned_pool_unchecked",
        "statistics_pool",
        "tracking_pool",
        "thread_safe_arena",
        "pool_unchecked",
        "statistics_pool_unchecked",
        "vmpool_unchecked",
    ] {
        let mr = resource(name, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!mr.is_simulated(), "{name}");
        let p = mr
            .allocate_sync(4096, 256)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!p.is_null(), "{name}");
        // SAFETY: `p` came from `mr` with these arguments and is not used again.
        unsafe { mr.deallocate_sync(p, 4096, 256) };
    }
}

/// On a GPU without pageable memory access (the H200 machine) both system
/// resources refuse to be built, saying why; on one with it they build
/// (their conformance suites run there).
#[test]
fn cuda_async_managed_memory_is_written_on_the_device_and_read_on_the_host() {
    rmm_testing::require_gpu!("cuda_async_managed_memory_is_written_on_the_device_and_read_on_the_host");
    let mr = CudaAsyncManagedMemoryResource::new().expect("managed driver pool (needs a CUDA 13 driver)");
    assert!(mr.is_host_accessible() && mr.is_device_accessible());
    let s = rmm::CudaStream::new().unwrap();
    let data: Vec<u8> = (0..1 << 16).map(|i: u32| (i * 7 % 251) as u8).collect();
    let buf = rmm::DeviceBuffer::from_host(&data, s.view(), mr.clone()).unwrap();
    s.synchronize().unwrap();
    // SAFETY: managed memory is host-accessible; the copy that wrote it is
    // complete (its stream is synchronised) and the buffer outlives the slice.
    let seen = unsafe { std::slice::from_raw_parts(buf.data().addr() as usize as *const u8, data.len()) };
    assert_eq!(seen, &data[..]);
    assert!(mr.reserved_bytes().unwrap() >= data.len() as u64);
    let again = CudaAsyncManagedMemoryResource::new().unwrap();
    assert_eq!(
        again.pool_handle(),
        mr.pool_handle(),
        "the device's default managed pool"
    );
    assert!(mr.is_equal(&again));
    assert!(!mr.is_equal(&CudaAsyncMemoryResource::new().unwrap()));
    drop(buf);
    s.synchronize().unwrap();
}

#[test]
fn system_resources_need_pageable_memory_access() {
    rmm_testing::require_gpu!("system_resources_need_pageable_memory_access");
    let device = rmm::device::current_device().expect("current device");
    let pageable = rmm::device::supports_pageable_memory_access(device).expect("attribute");
    let results = [
        ("SystemMemoryResource", SystemMemoryResource::new().map(|_| ())),
        (
            "SamHeadroomMemoryResource",
            SamHeadroomMemoryResource::new(1 << 30).map(|_| ()),
        ),
    ];
    for (what, r) in results {
        match (pageable, r) {
            (true, r) => r.unwrap_or_else(|e| panic!("{what} on {device} with pageable access: {e}")),
            (false, Ok(())) => panic!("{what} built on {device}, which has no pageable memory access"),
            (false, Err(e)) => {
                assert!(matches!(e, rmm::Error::Logic(_)), "{what}: {e:?}");
                let text = e.to_string();
                for needle in [
                    what,
                    &device.to_string(),
                    "cannot access pageable host memory",
                    "CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 0",
                ] {
                    assert!(text.contains(needle), "{what}: {needle:?} not in {text:?}");
                }
            }
        }
    }
    // The factory passes the error on.
    use rmm_replay::by_name::{resource, ByNameOptions};
    for name in ["system", "sam_headroom", "statistics_sam_headroom"] {
        match resource(name, &ByNameOptions::default()) {
            Ok(mr) => {
                assert!(pageable, "{name} built without pageable access");
                let p = mr
                    .allocate_sync(4096, 256)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                // SAFETY: `p` came from `mr` with these arguments and is not used again.
                unsafe { mr.deallocate_sync(p, 4096, 256) };
            }
            Err(e) => assert!(
                !pageable
                    && e.to_string()
                        .contains("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS"),
                "{name}: {e}"
            ),
        }
    }
}

/// The pinned host pool as the host side of copies (#18 item 3): device
/// bytes copied into a pinned-pool buffer in stream order are on the host
/// after a synchronisation, and copy back to the device.
#[test]
fn pinned_pool_stages_host_copies() {
    rmm_testing::require_gpu!("pinned_pool_stages_host_copies");
    let pool = rmm::mr::SharedResource::new(
        PoolMemoryResource::new(
            PinnedHostMemoryResource::new(),
            PoolOptions::default().initial_pool_size(1 << 20),
        )
        .expect("pinned pool"),
    );
    let stream = rmm::CudaStream::new().expect("stream");
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    let on_device =
        rmm::DeviceBuffer::from_host(&data, stream.view(), CudaMemoryResource::new()).expect("from_host");
    let staged = on_device
        .try_clone_on(stream.view(), pool.clone())
        .expect("stage");
    assert!(staged.resource().is_host_accessible());
    stream.synchronize().expect("sync");
    let p: *const u8 = std::ptr::with_exposed_provenance(staged.data().addr() as usize);
    // SAFETY: `staged` holds `size()` bytes of pinned host memory, complete
    // after the synchronisation and not written while this borrow lives.
    let host = unsafe { std::slice::from_raw_parts(p, staged.size()) };
    assert_eq!(host, &data[..]);
    let back = staged
        .try_clone_on(stream.view(), CudaMemoryResource::new())
        .expect("back to the device");
    assert_eq!(back.to_host(stream.view()).expect("to_host"), data);
    assert_eq!(staged.to_host(stream.view()).expect("pinned to_host"), data);
}
