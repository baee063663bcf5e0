//! An `ExecPolicy` feeding a Rust GPU kernel's scratch memory.
//!
//! ```sh
//! cargo run --example policy_scratch
//! ```
//!
//! The keys live in a `DeviceUvector` (from the current device resource);
//! the radix sort and the reduction (kernels written in Rust, compiled to
//! PTX) take every temporary they need from the policy's resource, here a
//! pool behind a statistics adaptor, so the example can show how much
//! scratch the sort used and that all of it went back. Without a GPU the
//! kernels cannot run: the example takes scratch from a policy over the
//! simulated resource and shows that the sort refuses simulated memory with
//! `Error::InvalidArgument` before doing any GPU work. `cargo test` runs this
//! example too (its GPU half is then counted as a skipped GPU test, or fails
//! under `RMM_REQUIRE_GPU=1`).

use rmm::exec_policy::ExecPolicy;
use rmm::mr::{
    CudaMemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource, StatisticsAdaptor,
};
use rmm::{CudaStream, CudaStreamView, DeviceUvector, Error, Result};
use rmm_suite::reduce;
use rmm_suite::sort::{sort_keys, Order};
use rmm_testing::SplitMix64;

const N: usize = 1 << 20;

fn main() -> Result<()> {
    run()
}

/// The whole example: on the GPU when there is one, else what runs without.
fn run() -> Result<()> {
    if rmm_testing::gpu_available!("example policy_scratch (GPU half)") {
        println!("policy_scratch: running on the GPU");
        on_gpu()
    } else {
        println!("policy_scratch: no GPU, so the kernels cannot run; running the scratch side over the simulated resource");
        without_gpu()
    }
}

fn on_gpu() -> Result<()> {
    let stream = CudaStream::new()?;
    let scratch = StatisticsAdaptor::new(PoolMemoryResource::new(
        CudaMemoryResource::new(),
        PoolOptions::default(),
    )?);
    let policy = ExecPolicy::new(stream.view(), scratch.clone());

    let mut rng = SplitMix64(7);
    let host: Vec<u32> = (0..N).map(|_| rng.next() as u32).collect();
    let mut keys = DeviceUvector::from_slice(&host, stream.view())?;

    sort_keys(keys.as_span_mut(), Order::Ascending, &policy)?;
    let sum = reduce::sum(keys.as_span(), &policy)?;

    let mut expected = host.clone();
    expected.sort_unstable();
    assert_eq!(keys.copy_to_host(stream.view())?, expected, "sorted on the GPU");
    assert_eq!(
        sum,
        host.iter().fold(0u32, |a, &k| a.wrapping_add(k)),
        "summed on the GPU"
    );
    stream.synchronize()?;

    let (bytes, allocations) = (scratch.bytes_counter(), scratch.allocations_counter());
    println!(
        "  sorted and summed {N} u32 keys; scratch: peak {} KiB in {} allocation(s), {} bytes still held",
        bytes.peak / 1024,
        allocations.total,
        bytes.value
    );
    assert_eq!(bytes.value, 0, "every scratch allocation went back to the pool");
    Ok(())
}

fn without_gpu() -> Result<()> {
    let sim = SimulatedMemoryResource::new(1 << 30);
    let scratch = StatisticsAdaptor::new(PoolMemoryResource::new(sim.clone(), PoolOptions::default())?);
    let policy = ExecPolicy::new(CudaStreamView::DEFAULT, scratch.clone());

    // What an algorithm does for its temporaries: typed scratch from the
    // policy, freed stream-ordered when dropped.
    {
        let histogram = policy.scratch::<u32>(256 * 1024)?;
        println!(
            "  scratch of {} u32 at {:?} from the policy's pool",
            histogram.len(),
            histogram.ptr()
        );
    }
    assert_eq!(scratch.bytes_counter().value, 0, "scratch went back when dropped");

    // The kernels themselves need a GPU: simulated memory is refused up front.
    let mut keys = DeviceUvector::<u32>::with_resource(N, CudaStreamView::DEFAULT, sim.clone())?;
    match sort_keys(keys.as_span_mut(), Order::Ascending, &policy) {
        Err(Error::InvalidArgument(why)) => {
            println!("  sort_keys over simulated memory, refused as expected: {why}")
        }
        other => {
            return Err(Error::Logic(format!(
                "sort_keys over simulated memory gave {other:?}"
            )))
        }
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
