//! The same-process benchmark's allocator rows (benches/rmm_ab: `hot_pair`
//! and `threads`) over a simulated device, for machines without a GPU:
//! what the resources' own bookkeeping and locks cost, without the driver
//! (no capture query, no events). Each thread works on its own stream, as
//! in rmm_ab, except in the `one_stream` rows (T > 1), where all of them
//! share one stream and so its lock; a row's time is the median of its repetitions, in ns per
//! operation (allocations and frees together, over all threads).
//!
//! ```text
//! cargo bench -p rmm-ab --bench cpu_scaling                 # pool binning arena, T = 1 2
//! cargo bench -p rmm-ab --bench cpu_scaling -- pool 1 2 4   # one resource, these thread counts
//! ```
//! Output: CSV `resource,workload,params,median_ns_per_op,best_ns_per_op`.

use std::time::Instant;

use rmm::mr::SharedResource;
use rmm::CudaStreamView;
use rmm_replay::by_name::{self, ByNameOptions};

/// Alignment of every request (the CUDA allocation alignment).
const ALIGN: usize = 256;
/// Repetitions of each row.
const REPS: usize = 5;
/// One mebibyte.
const MIB: usize = 1 << 20;

/// rmm_ab.cu's random-number generator.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A stream view for thread `t` (a simulated resource never passes it to
/// the driver).
fn stream(t: usize) -> CudaStreamView<'static> {
    // SAFETY: the handle is only compared and hashed: the resources under
    // test are simulated and make no driver call with it.
    unsafe { CudaStreamView::from_raw(0x1000 * (t + 1)) }
}

/// WORKLOADS.md's `random` (as rmm_ab.cu runs it); the operations made.
fn random(
    mr: &SharedResource,
    s: CudaStreamView,
    n: usize,
    max_size: usize,
    max_usage: usize,
    seed: u64,
) -> usize {
    let mr = mr.inner();
    let mut rng = SplitMix64(seed);
    let mut live: Vec<(rmm::DevicePtr, usize)> = Vec::with_capacity(n);
    let (mut count, mut usage, mut ops) = (0usize, 0usize, 0usize);
    for _ in 0..2 * n {
        let size = 1 + (rng.next() % max_size as u64) as usize;
        let alloc = if live.is_empty() {
            count < n
        } else {
            rng.next() % 100 < 73 && count < n && usage + size < max_usage
        };
        if alloc {
            ops += 1;
            if let Ok(p) = mr.allocate(size, ALIGN, s) {
                live.push((p, size));
                count += 1;
                usage += size;
                continue;
            }
        }
        if !live.is_empty() {
            let i = (rng.next() % live.len() as u64) as usize;
            let (p, n) = live.swap_remove(i);
            // SAFETY: allocated above with these arguments, freed once.
            unsafe { mr.deallocate(p, n, ALIGN, s) };
            usage -= n;
            ops += 1;
        }
    }
    for (p, n) in live {
        // SAFETY: as above.
        unsafe { mr.deallocate(p, n, ALIGN, s) };
        ops += 1;
    }
    ops
}

/// The `hot_pair` row: one size allocated and freed 200,000 times.
fn hot_pair(mr: &SharedResource, size: usize) -> usize {
    let mr = mr.inner();
    let s = stream(0);
    for _ in 0..200_000 {
        let p = mr.allocate(size, ALIGN, s).expect("hot pair allocation");
        // SAFETY: just allocated with these arguments.
        unsafe { mr.deallocate(p, size, ALIGN, s) };
    }
    400_000
}

/// The `threads` row: `t` threads, each the random workload on its own stream.
fn threads(mr: &SharedResource, t: usize) -> usize {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..t)
            .map(|i| scope.spawn(move || random(mr, stream(i + 1), 20_000, MIB, 1000 * MIB, 1000 + i as u64)))
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).sum()
    })
}

/// The `one_stream` row: `t` threads, each the random workload, all on one
/// stream, so that they meet on that stream's lock (what threads sharing the
/// default stream do).
fn one_stream(mr: &SharedResource, t: usize) -> usize {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..t)
            .map(|i| scope.spawn(move || random(mr, stream(0), 20_000, MIB, 1000 * MIB, 2000 + i as u64)))
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).sum()
    })
}

/// Times `row` REPS times; prints its CSV line.
fn report(resource: &str, workload: &str, params: &str, mut row: impl FnMut() -> usize) {
    let mut times: Vec<f64> = (0..REPS)
        .map(|_| {
            let t0 = Instant::now();
            let ops = row();
            t0.elapsed().as_secs_f64() * 1e9 / ops.max(1) as f64
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "{resource},{workload},{params},{:.1},{:.1}",
        times[REPS / 2],
        times[0]
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let mut resources: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| a.parse::<usize>().is_err())
        .collect();
    let mut counts: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if resources.is_empty() {
        resources = vec!["pool", "binning", "arena"];
    }
    if counts.is_empty() {
        counts = vec![1, 2];
    }
    println!("resource,workload,params,median_ns_per_op,best_ns_per_op");
    for name in resources {
        let pool_bytes = 40usize << 30;
        let opts = ByNameOptions::default()
            .pool_initial_size(pool_bytes)
            .simulated_size(2 * pool_bytes);
        let mr = match by_name::resource(&format!("simulated-{name}"), &opts) {
            Ok(mr) => mr,
            Err(e) => {
                eprintln!("cpu_scaling: simulated-{name}: {e}");
                continue;
            }
        };
        // Warm-up, as rmm_ab does.
        random(&mr, stream(0), 1000, 64 * MIB, 16000 * MIB, 42);
        for size in [256, MIB] {
            report(name, "hot_pair", &format!("size={size}"), || hot_pair(&mr, size));
        }
        for &t in &counts {
            report(name, "threads", &format!("t={t} n=20000 max=1MiB"), || {
                threads(&mr, t)
            });
        }
        for &t in counts.iter().filter(|&&t| t > 1) {
            report(name, "one_stream", &format!("t={t} n=20000 max=1MiB"), || {
                one_stream(&mr, t)
            });
        }
    }
}
