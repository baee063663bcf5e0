//! The allocator workloads of `shared/anchors/WORKLOADS.md` over this
//! project's resources, printed as the same CSV as RMM's anchor
//! (`impl,resource,workload,params,seconds,ns_per_op,failed`, impl `rmm-rs`).
//!
//! With a GPU: rows for `cuda`, `cuda_async`, `cuda_async_managed` (the
//! managed driver pool; RMM's anchor has no such row), `pool`, `binning`,
//! `arena` and `vmpool`, configured as WORKLOADS.md says, plus `statistics_pool` and
//! `tracking_pool` (those adaptors over the `pool` configuration), which
//! measure the adaptors' overhead against the `pool` rows. Without one: `pool`,
//! `binning` and `arena` over a simulated device (addresses only; what is
//! measured is the bookkeeping's CPU cost), with a note on stderr.
//!
//! `pool_unchecked`, `arena_unchecked` and `statistics_pool_unchecked` are
//! the same resources with `unchecked_frees` (frees trusted, not checked
//! against the live record): the difference to the checked rows is what
//! misuse detection costs.
//!
//! Every row's resource comes from [`rmm_replay::by_name`] under the row's name.
//!
//! Besides WORKLOADS.md's rows it prints `cycle` (one thread cycling its
//! allocations over 8 streams), which RMM's anchor does not measure.
//!
//! `RMM_BENCH_RESOURCES="pool arena"` (or resource names as arguments)
//! restricts the resources, `RMM_BENCH_WORKLOADS="random hot_pair"` the
//! workloads (`random`, `hot_pair`, `threads8`, `cycle`, `threads`; used, for one,
//! to time the NVTX annotations under compute-sanitizer). Run with `cargo bench --bench alloc_workloads`.

use std::time::Instant;

use rmm::mr::{MemoryResource, SharedResource};
use rmm::{CudaStream, CudaStreamView, DevicePtr};
use rmm_replay::by_name::{self, ByNameOptions};

const MIB: usize = 1 << 20;
const ALIGN: usize = 256;

/// SplitMix64 as WORKLOADS.md defines it.
use rmm_testing::SplitMix64;

#[derive(Default, Clone, Copy)]
struct Outcome {
    ops: usize,
    failed: usize,
}

/// Workload `random` on `streams`: the k-th successful allocation's
/// request goes to stream `k % streams.len()`, and each block is freed on
/// the stream it was
/// allocated on (one stream: WORKLOADS.md's `random`; several: the
/// project-only `cycle` row, one host thread cycling over streams).
fn random_allocations(
    mr: &dyn MemoryResource,
    streams: &[CudaStreamView],
    n: usize,
    max_size: usize,
    max_usage: usize,
    seed: u64,
) -> Outcome {
    let mut rng = SplitMix64(seed);
    let mut live: Vec<(DevicePtr, usize, CudaStreamView)> = Vec::with_capacity(n);
    let (mut count, mut usage) = (0usize, 0usize);
    let mut r = Outcome::default();
    for _ in 0..2 * n {
        let size = 1 + (rng.next() % max_size as u64) as usize;
        let do_alloc = if !live.is_empty() {
            rng.next() % 100 < 73 && count < n && usage + size < max_usage
        } else {
            count < n
        };
        if do_alloc {
            r.ops += 1;
            let stream = streams[count % streams.len()];
            match mr.allocate(size, ALIGN, stream) {
                Ok(p) => {
                    live.push((p, size, stream));
                    count += 1;
                    usage += size;
                    continue;
                }
                Err(e) => {
                    if !e.is_bad_alloc() {
                        eprintln!("allocate({size}) failed: {e}");
                    }
                    r.failed += 1;
                }
            }
        }
        if !live.is_empty() {
            let i = (rng.next() % live.len() as u64) as usize;
            let (p, s, stream) = live.swap_remove(i);
            // SAFETY: p came from mr with these arguments and is unused.
            unsafe { mr.deallocate(p, s, ALIGN, stream) };
            usage -= s;
            r.ops += 1;
        }
    }
    for (p, s, stream) in live {
        // SAFETY: as above.
        unsafe { mr.deallocate(p, s, ALIGN, stream) };
        r.ops += 1;
    }
    r
}

/// Workload `hot_pair`.
fn hot_pairs(mr: &dyn MemoryResource, stream: CudaStreamView, size: usize, iters: usize) -> Outcome {
    let mut failed = 0;
    for _ in 0..iters {
        match mr.allocate(size, ALIGN, stream) {
            // SAFETY: p came from mr with these arguments and is unused.
            Ok(p) => unsafe { mr.deallocate(p, size, ALIGN, stream) },
            Err(_) => failed += 1,
        }
    }
    Outcome {
        ops: 2 * iters,
        failed,
    }
}

/// Real streams on a GPU, distinct fake handles over the simulated device.
enum Streams {
    Real(Vec<CudaStream>),
    Fake,
}

impl Streams {
    fn new(gpu: bool, n: usize) -> Streams {
        if gpu {
            Streams::Real((0..n).map(|_| CudaStream::new().expect("stream")).collect())
        } else {
            Streams::Fake
        }
    }
    fn get(&self, i: usize) -> CudaStreamView<'_> {
        match self {
            Streams::Real(v) => v[i].view(),
            // SAFETY: fake handles only reach the simulated resource, which
            // never passes them to the driver.
            Streams::Fake => unsafe { CudaStreamView::from_raw(0x5000 + 16 * i) },
        }
    }
    fn sync(&self) {
        if let Streams::Real(v) = self {
            for s in v {
                s.synchronize().expect("synchronize");
            }
        }
    }
}

fn row(resource: &str, workload: &str, params: &str, secs: f64, r: Outcome) {
    println!(
        "rmm-rs,{resource},{workload},{params},{secs:.6},{:.1},{}",
        secs * 1e9 / r.ops.max(1) as f64,
        r.failed
    );
}

fn run_all(name: &str, mr: &dyn MemoryResource, gpu: bool) {
    let streams = Streams::new(gpu, 1);
    let s = streams.get(0);
    random_allocations(mr, &[s], 1000, 64 * MIB, 16000 * MIB, 99);
    let wanted =
        |w: &str| std::env::var("RMM_BENCH_WORKLOADS").map_or(true, |v| v.split_whitespace().any(|x| x == w));
    streams.sync();
    for (n, max_mib) in [(100_000usize, 1usize), (10_000, 64), (1000, 4096)] {
        if !wanted("random") || name == "cuda" && n > 10_000 {
            continue;
        }
        let t0 = Instant::now();
        let r = random_allocations(mr, &[s], n, max_mib * MIB, 16000 * MIB, 42);
        streams.sync();
        row(
            name,
            "random",
            &format!("n={n} max={max_mib}MiB"),
            t0.elapsed().as_secs_f64(),
            r,
        );
    }
    for size in [256usize, MIB] {
        if !wanted("hot_pair") {
            break;
        }
        let t0 = Instant::now();
        let r = hot_pairs(mr, s, size, 200_000);
        streams.sync();
        row(
            name,
            "hot_pair",
            &format!("size={size}"),
            t0.elapsed().as_secs_f64(),
            r,
        );
    }
    if wanted("threads8") {
        let (secs, total) = threads(mr, gpu, 8);
        row(name, "threads8", "n=20000 max=1MiB", secs, total);
    }
    // Project-only: one host thread cycling its allocations over 8 streams
    // (`threads` t=1's workload, spread over streams): blocks freed on one
    // stream are wanted on another, which per-stream free lists and caches
    // must hand over with events. RMM's anchor has no such row.
    if name != "cuda" && wanted("cycle") {
        let many = Streams::new(gpu, 8);
        let views: Vec<CudaStreamView> = (0..8).map(|i| many.get(i)).collect();
        let t0 = Instant::now();
        let r = random_allocations(mr, &views, 20_000, MIB, 1000 * MIB, 1000);
        many.sync();
        row(
            name,
            "cycle",
            "s=8 n=20000 max=1MiB",
            t0.elapsed().as_secs_f64(),
            r,
        );
    }
    // The thread-scaling rows (WORKLOADS.md `threads`), every resource but
    // `cuda`, whose cuMemAlloc/cuMemFree would take minutes at 32 threads.
    if name != "cuda" && wanted("threads") {
        for t in [1usize, 2, 4, 16, 32] {
            let (secs, total) = threads(mr, gpu, t);
            row(name, "threads", &format!("t={t} n=20000 max=1MiB"), secs, total);
        }
    }
}

/// `t` threads share `mr`, thread `i` on its own stream running `random`
/// (n=20000, max=1 MiB, max_usage=1000 MiB, seed 1000+i); the clock runs
/// until every thread joined and every stream is synchronised.
fn threads(mr: &dyn MemoryResource, gpu: bool, t: usize) -> (f64, Outcome) {
    let streams = Streams::new(gpu, t);
    let t0 = Instant::now();
    let total = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..t)
            .map(|i| {
                let st = streams.get(i);
                scope.spawn(move || random_allocations(mr, &[st], 20_000, MIB, 1000 * MIB, 1000 + i as u64))
            })
            .collect();
        handles.into_iter().fold(Outcome::default(), |acc, h| {
            let r = h.join().expect("worker thread");
            Outcome {
                ops: acc.ops + r.ops,
                failed: acc.failed + r.failed,
            }
        })
    });
    streams.sync();
    (t0.elapsed().as_secs_f64(), total)
}

/// Builds the row `name` with the one resource factory, [`rmm_replay::by_name`]
/// (`statistics_pool` is the adaptor over the `pool` row's pool,
/// `<row>_unchecked` the same resource with frees trusted), sized as
/// WORKLOADS.md says: the pool starts at half the free memory, the arena
/// takes all of it but 64 MiB.
fn build(name: &str, gpu: bool, sim_capacity: usize) -> Option<SharedResource> {
    let opts = if gpu {
        let free = rmm::device::available_device_memory().map_or(0, |(free, _)| free);
        ByNameOptions::default()
            .pool_initial_size(free / 2)
            .arena_size(free.saturating_sub(64 * MIB))
    } else {
        ByNameOptions::default()
            .simulate(true)
            .simulated_size(sim_capacity)
            .pool_initial_size(sim_capacity / 2)
            .arena_size(sim_capacity - 64 * MIB)
    };
    match by_name::resource(name, &opts) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("alloc_workloads: cannot build {name}: {e}");
            None
        }
    }
}

fn main() {
    let mut wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if wanted.is_empty() {
        if let Ok(v) = std::env::var("RMM_BENCH_RESOURCES") {
            wanted = v.split_whitespace().map(str::to_string).collect();
        }
    }
    let gpu = rmm::device::is_available();
    // A simulated device the size of an H200's free memory.
    let sim_capacity = 140 * 1024 * MIB;
    let all: &[&str] = if gpu {
        &[
            "cuda",
            "cuda_async",
            "cuda_async_managed",
            "pool",
            "binning",
            "arena",
            "vmpool",
            "statistics_pool",
            "tracking_pool",
            "pool_unchecked",
            "arena_unchecked",
            "statistics_pool_unchecked",
        ]
    } else {
        eprintln!(
            "alloc_workloads: no GPU; running pool, binning, arena and the adaptor rows over a simulated \
             device of {} GiB (bookkeeping cost only)",
            sim_capacity >> 30
        );
        &[
            "pool",
            "binning",
            "arena",
            "statistics_pool",
            "tracking_pool",
            "pool_unchecked",
            "arena_unchecked",
            "statistics_pool_unchecked",
        ]
    };
    println!("{}", rmm_tools::report::csv::alloc_header());
    for &name in all {
        if !wanted.is_empty() && !wanted.iter().any(|w| w == name) {
            continue;
        }
        if let Some(mr) = build(name, gpu, sim_capacity) {
            run_all(name, mr.inner(), gpu);
        }
    }
}
