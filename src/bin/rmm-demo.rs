//! The allocator demo: the same random allocate/free workload over several
//! memory resources, timed, with a summary table.
//!
//! On a machine without a GPU it says so and runs the workload over the
//! simulated resource (addresses only), which still exercises every code
//! path of the sub-allocators that sit on top of it.

use std::time::Instant;

use rmm::mr::{
    CudaAsyncMemoryResource, CudaMemoryResource, MemoryResource, SharedResource, SimulatedMemoryResource,
};
use rmm::{CudaStream, CudaStreamView, DevicePtr};

/// SplitMix64 (the generator of the anchors' workloads).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

struct Outcome {
    ops: u64,
    seconds: f64,
    failed: u64,
    peak: usize,
}

/// A mixed workload: sizes log-uniform from 256 B to 16 MiB, 60% allocations
/// while under the usage cap, random victims otherwise; everything freed at the end.
fn run(mr: &dyn MemoryResource, stream: CudaStreamView, steps: usize, cap: usize, seed: u64) -> Outcome {
    let mut rng = Rng(seed);
    let mut live: Vec<(DevicePtr, usize)> = Vec::new();
    let (mut usage, mut peak, mut ops, mut failed) = (0usize, 0usize, 0u64, 0u64);
    let start = Instant::now();
    for _ in 0..steps {
        let size = 256usize << (rng.next() % 17);
        let size = size + (rng.next() as usize % size);
        let alloc = live.is_empty() || (rng.next() % 100 < 60 && usage + size <= cap);
        if alloc {
            ops += 1;
            match mr.allocate(size, 256, stream) {
                Ok(p) => {
                    live.push((p, size));
                    usage += size;
                    peak = peak.max(usage);
                    continue;
                }
                Err(_) => failed += 1,
            }
        }
        if !live.is_empty() {
            let i = (rng.next() % live.len() as u64) as usize;
            let (p, s) = live.swap_remove(i);
            // SAFETY: `p` came from `mr` with these arguments and is unused.
            unsafe { mr.deallocate(p, s, 256, stream) };
            usage -= s;
            ops += 1;
        }
    }
    for (p, s) in live.drain(..) {
        // SAFETY: as above.
        unsafe { mr.deallocate(p, s, 256, stream) };
        ops += 1;
    }
    if !mr.is_simulated() {
        let _ = stream.synchronize();
    }
    Outcome {
        ops,
        seconds: start.elapsed().as_secs_f64(),
        failed,
        peak,
    }
}

fn main() {
    let steps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    println!("rmm-demo: {steps} random allocate/free steps per resource (sizes 256 B .. 32 MiB)\n");
    let gpu = rmm::device::is_available();
    let mut resources: Vec<(&str, SharedResource)> = Vec::new();
    let stream;
    let cap;
    if gpu {
        let (free, total) = rmm::device::available_device_memory().expect("memory info");
        println!(
            "GPU found: {} device(s); device 0 has {} MiB free of {} MiB",
            rmm::device::device_count(),
            free >> 20,
            total >> 20
        );
        cap = (free / 4).min(8 << 30);
        resources.push((
            "cuda (cuMemAlloc)",
            SharedResource::new(CudaMemoryResource::new()),
        ));
        match CudaAsyncMemoryResource::new() {
            Ok(r) => resources.push(("cuda_async (driver pool)", SharedResource::new(r))),
            Err(e) => println!("cuda_async unavailable: {e}"),
        }
        stream = Some(CudaStream::new().expect("stream"));
    } else {
        println!(
            "No GPU found (the CUDA driver reports no device): running over the simulated resource only."
        );
        println!("The simulated resource hands out addresses without memory, so the timings show bookkeeping cost only.");
        cap = 8 << 30;
        resources.push((
            "simulated (8 GiB device)",
            SharedResource::new(SimulatedMemoryResource::new(16 << 30)),
        ));
        stream = None;
    }
    let view = stream
        .as_ref()
        .map(|s| s.view())
        .unwrap_or(CudaStreamView::DEFAULT);
    println!();
    println!(
        "{:<28} {:>10} {:>12} {:>10} {:>10} {:>9}",
        "resource", "ops", "ns/op", "failed", "peak MiB", "vs first"
    );
    let mut first = None;
    for (name, mr) in &resources {
        // Warm-up, then the timed run.
        run(mr.inner(), view, steps / 10, cap, 99);
        let o = run(mr.inner(), view, steps, cap, 42);
        let ns = o.seconds * 1e9 / o.ops.max(1) as f64;
        let base = *first.get_or_insert(ns);
        println!(
            "{:<28} {:>10} {:>12.0} {:>10} {:>10} {:>8.1}x",
            name,
            o.ops,
            ns,
            o.failed,
            o.peak >> 20,
            base / ns
        );
    }
}
