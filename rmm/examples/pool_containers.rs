//! A pool as the current device resource, feeding containers.
//!
//! ```sh
//! cargo run -p rmm --example pool_containers
//! ```
//!
//! On a GPU: a pool over `cuMemAlloc`, counted by a statistics adaptor and
//! registered as the current device resource; `DeviceBuffer` and
//! `DeviceUvector` made without naming a resource draw from it, and the data
//! round-trips through the device. Without a GPU: the same pool over the
//! simulated resource, which hands out addresses but holds no data, so only
//! the allocation side runs (no copies). `cargo test` runs this example too
//! (its GPU half is then counted as a skipped GPU test, or fails under
//! `RMM_REQUIRE_GPU=1`).

use rmm::mr::{
    current_device_resource, set_current_device_resource, CudaMemoryResource, MemoryResource,
    PoolMemoryResource, PoolOptions, SharedResource, SimulatedMemoryResource, StatisticsAdaptor,
};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DeviceUvector, Result};

const MIB: usize = 1 << 20;

fn main() -> Result<()> {
    run()
}

/// The whole example: on the GPU when there is one, else over simulated memory.
fn run() -> Result<()> {
    if rmm_testing::gpu_available!("example pool_containers (GPU half)") {
        println!("pool_containers: running on the GPU");
        let stream = CudaStream::new()?;
        let pool = PoolMemoryResource::new(
            CudaMemoryResource::new(),
            PoolOptions::default().initial_pool_size(64 * MIB),
        )?;
        with_current(pool, stream.view(), true)
    } else {
        println!(
            "pool_containers: no GPU, running over the simulated resource (addresses only, no data copies)"
        );
        let pool = PoolMemoryResource::new(
            SimulatedMemoryResource::new(1 << 30),
            PoolOptions::default().initial_pool_size(64 * MIB),
        )?;
        with_current(pool, CudaStreamView::DEFAULT, false)
    }
}

/// Makes `pool` (behind a statistics adaptor) the current device resource,
/// runs the containers on it, and puts the previous resource back.
fn with_current<U: MemoryResource>(
    pool: PoolMemoryResource<U>,
    stream: CudaStreamView,
    gpu: bool,
) -> Result<()> {
    let stats = StatisticsAdaptor::new(pool.clone());
    let previous = set_current_device_resource(SharedResource::new(stats.clone()))?;
    let result = containers(stream, gpu);
    set_current_device_resource(previous)?;
    result?;
    let (bytes, allocations) = (stats.bytes_counter(), stats.allocations_counter());
    println!(
        "  statistics: peak {} KiB in use, {} allocations in all, {} live at the end",
        bytes.peak / 1024,
        allocations.total,
        allocations.value
    );
    println!(
        "  pool: {} MiB taken from upstream in {} chunk(s), {} MiB free",
        pool.pool_size() / MIB,
        pool.upstream_chunks(),
        pool.free_bytes() / MIB
    );
    assert_eq!(allocations.value, 0, "every container gave its memory back");
    Ok(())
}

/// Containers that name no resource: they take the current device resource.
fn containers(stream: CudaStreamView, gpu: bool) -> Result<()> {
    let n = 1 << 18;
    let mut values = if gpu {
        let host: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        let values = DeviceUvector::from_slice(&host, stream)?;
        assert_eq!(
            values.copy_to_host(stream)?,
            host,
            "data round-trips through the pool"
        );
        values
    } else {
        DeviceUvector::<u32>::new(n, stream)?
    };
    assert!(values.resource().ptr_eq(&current_device_resource()));
    println!(
        "  DeviceUvector<u32> of {} elements at {:?}",
        values.len(),
        values.data()
    );

    // Growing reallocates from the pool; the old block goes back to it.
    values.resize(4 * n, stream)?;
    println!(
        "  resized to {} elements ({} KiB)",
        values.len(),
        values.size_bytes() / 1024
    );

    // A block freed on a stream is reused by the next request on that stream.
    let first = DeviceBuffer::new(MIB, stream)?;
    let address = first.data();
    drop(first);
    let second = DeviceBuffer::new(MIB, stream)?;
    println!(
        "  1 MiB freed and asked for again on the same stream: {}",
        if second.data() == address {
            "the same block"
        } else {
            "another block"
        }
    );
    if gpu {
        stream.synchronize()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example; a GPU failure fails the test.
    #[test]
    fn example_runs() {
        super::run().unwrap();
    }
}
