//! The conformance suite over every base resource, and their own tests.

#[macro_use]
mod common;

use rmm::mr::{
    CallbackMemoryResource, CudaAsyncMemoryResource, CudaMemoryResource, ManagedMemoryResource,
    MemoryResource, PinnedHostMemoryResource, SimulatedMemoryResource,
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
    pinned_host,
    gpu,
    PinnedHostMemoryResource::new,
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
    rmm::require_gpu!("gpu_factory_names_build_and_allocate");
    use rmm::mr::by_name::{resource, ByNameOptions};
    let opts = ByNameOptions::default().arena_size(256 << 20);
    for name in [
        "cuda",
        "cuda_async",
        "managed",
        "pinned",
        "vmpool",
        "pool",
        "binning",
        "arena",
        "fixed_size",
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
