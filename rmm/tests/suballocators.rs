//! The conformance suite over the sub-allocators (over the simulated
//! resource on any machine, over the CUDA resource on a GPU), and their own
//! tests.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{GIB, KIB, MIB};
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
conformance_suite!(pool_over_cuda, gpu, || pool_over(CudaMemoryResource::new(), 256 * MIB));
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
    || FixedSizeMemoryResource::new(sim(), FixedSizeOptions::default().block_size(4 * MIB)).expect("fixed"),
    max = 4 * MIB - 3
);
conformance_suite!(
    fixed_size_over_cuda,
    gpu,
    || FixedSizeMemoryResource::new(CudaMemoryResource::new(), FixedSizeOptions::default().block_size(4 * MIB))
        .expect("fixed"),
    max = 4 * MIB - 3
);
conformance_suite!(binning_over_simulated, cpu, || {
    BinningMemoryResource::with_fixed_bins(pool_over(sim(), 256 * MIB), 18, 22).expect("binning")
});
conformance_suite!(binning_over_cuda, gpu, || {
    BinningMemoryResource::with_fixed_bins(pool_over(CudaMemoryResource::new(), 512 * MIB), 18, 22)
        .expect("binning")
});
conformance_suite!(arena_over_simulated, cpu, || {
    ArenaMemoryResource::new(sim(), ArenaOptions::default().arena_size(16 * GIB)).expect("arena")
});
conformance_suite!(arena_over_cuda, gpu, || {
    ArenaMemoryResource::new(CudaMemoryResource::new(), ArenaOptions::default()).expect("arena")
});
conformance_suite!(vm_pool, gpu, || {
    VirtualPoolMemoryResource::new(VirtualPoolOptions::default().initial_pool_size(64 * MIB)).expect("vm pool")
});
