//! Criterion micro-benchmarks of the memory resources.
//!
//! * `alloc_free/<resource>/<size>`: one allocate and its deallocate, for
//!   256 B, 64 KiB, 1 MiB and 64 MiB;
//! * `uvector_u32/<resource>/<n>`: a `DeviceUvector<u32>` of n elements
//!   created and dropped (uninitialised: no kernel, no copy);
//! * `scratch/<resource>/<size>`: temporary storage drawn through an
//!   `ExecPolicy` and dropped (what the kernels do).
//!
//! Resources over a simulated device (`sim`, `pool-sim`, `binning-sim`,
//! `arena-sim`: addresses only, so this is bookkeeping cost) always run;
//! `sim` alone stops at 4 MiB requests, as it never reuses addresses. The
//! GPU resources (`cuda`, `cuda_async`, `pool`, `binning`, `arena`, all over
//! cudaMalloc) run only when a GPU is present; otherwise they are skipped
//! with a note on stderr. On a GPU each timed batch ends with a stream
//! synchronisation, so stream-ordered frees are paid for.
//!
//! ```text
//! cargo bench --bench micro                  # everything, ~2 s per benchmark
//! cargo bench --bench micro -- --quick       # a quick estimate
//! cargo bench --bench micro -- alloc_free/pool-sim
//! ```

use std::cell::Cell;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{MemoryResource, SharedResource};
use rmm::{CudaStream, CudaStreamView, DeviceUvector};
use rmm_replay::by_name::{self, ByNameOptions};

/// One kibibyte.
const KIB: usize = 1 << 10;
/// One mebibyte.
const MIB: usize = 1 << 20;
/// One gibibyte.
const GIB: usize = 1 << 30;
/// Alignment of every request (the CUDA allocation alignment).
const ALIGN: usize = 256;
/// The simulated device's size.
const SIMULATED_CAPACITY: usize = 80 * GIB;
/// Sizes of the allocate/free pairs, with their labels.
const PAIR_SIZES: [(usize, &str); 4] = [
    (256, "256B"),
    (64 * KIB, "64KiB"),
    (MIB, "1MiB"),
    (64 * MIB, "64MiB"),
];
/// Element counts of the `DeviceUvector<u32>` benchmarks.
const UVECTOR_LENS: [(usize, &str); 2] = [(1 << 10, "1Ki"), (1 << 20, "1Mi")];
/// Byte sizes of the scratch benchmarks.
const SCRATCH_SIZES: [(usize, &str); 2] = [(64 * KIB, "64KiB"), (16 * MIB, "16MiB")];

/// Builds one resource (called right before each benchmark, so that only one
/// resource holds device memory at a time).
type Builder = Box<dyn Fn() -> rmm::Result<SharedResource>>;

/// A candidate without a size limit.
fn candidate(name: &'static str, build: impl Fn() -> rmm::Result<SharedResource> + 'static) -> Candidate {
    Candidate {
        name,
        build: Box::new(build),
        max_bytes: usize::MAX,
    }
}

/// A candidate built by the one resource factory, [`rmm_replay::by_name`].
fn by_name(label: &'static str, name: &'static str, opts: ByNameOptions) -> Candidate {
    candidate(label, move || by_name::resource(name, &opts))
}

/// The resources over the simulated device.
fn simulated_resources() -> Vec<Candidate> {
    let opts = ByNameOptions::default()
        .simulate(true)
        .simulated_size(SIMULATED_CAPACITY)
        .pool_initial_size(4 * GIB)
        .arena_size(8 * GIB);
    vec![
        Candidate {
            max_bytes: 4 * MIB,
            ..by_name("sim", "simulated", opts.clone())
        },
        by_name("pool-sim", "pool", opts.clone()),
        by_name("binning-sim", "binning", opts.clone()),
        by_name("arena-sim", "arena", opts),
    ]
}

/// The GPU resources, sized from the free memory (the pool 1/4 of it, at
/// most 4 GiB; the arena 1/2, at most 8 GiB). One exists at a time.
fn gpu_resources(free: usize) -> Vec<Candidate> {
    let round = |b: usize| rmm::align::align_down(b, ALIGN);
    let opts = ByNameOptions::default()
        .pool_initial_size(round((free / 4).min(4 * GIB)))
        .arena_size(round((free / 2).min(8 * GIB)));
    vec![
        by_name("cuda", "cuda", opts.clone()),
        by_name("cuda_async", "cuda_async", opts.clone()),
        by_name("pool", "pool", opts.clone()),
        by_name("binning", "binning", opts.clone()),
        by_name("arena", "arena", opts),
    ]
}

/// The stream the benchmarks run on: a real one on a GPU.
struct Stream {
    stream: Option<CudaStream>,
}

impl Stream {
    /// The stream's view (the default stream when simulated).
    fn view(&self) -> CudaStreamView<'_> {
        self.stream
            .as_ref()
            .map_or(CudaStreamView::DEFAULT, CudaStream::view)
    }

    /// Waits for the stream's work (GPU only); reports a failure once per call.
    fn sync(&self) {
        if let Some(s) = &self.stream {
            if let Err(e) = s.synchronize() {
                eprintln!("micro: stream synchronize failed: {e}");
            }
        }
    }
}

/// Times `iters` runs of `f`, then synchronises the stream.
fn timed(stream: &Stream, iters: u64, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    stream.sync();
    start.elapsed()
}

/// A resource to benchmark.
struct Candidate {
    name: &'static str,
    build: Builder,
    /// Largest request benchmarked (the simulated device alone never reuses
    /// addresses, so large requests would exhaust its range).
    max_bytes: usize,
}

/// A freshly built resource on which one allocation of `bytes` succeeds, or
/// `None` after printing why the benchmark `id` is skipped.
fn fresh(res: &Candidate, bytes: usize, stream: &Stream, id: &str) -> Option<SharedResource> {
    if bytes > res.max_bytes {
        eprintln!(
            "micro: skipping {id}: larger than {} bytes on this resource",
            res.max_bytes
        );
        return None;
    }
    let mr = match (res.build)() {
        Ok(mr) => mr,
        Err(e) => {
            eprintln!("micro: skipping {id}: cannot build {}: {e}", res.name);
            return None;
        }
    };
    match mr.allocate(bytes, ALIGN, stream.view()) {
        Ok(p) => {
            // SAFETY: `p` was just allocated from `mr` with these arguments and is unused.
            unsafe { mr.deallocate(p, bytes, ALIGN, stream.view()) };
            stream.sync();
            Some(mr)
        }
        Err(e) => {
            eprintln!("micro: skipping {id}: a trial allocation of {bytes} bytes failed: {e}");
            None
        }
    }
}

/// Reports allocations that failed while benchmark `id` ran (its timing then
/// includes failed calls).
fn report_failures(id: &str, failures: &Cell<u64>) {
    if failures.get() > 0 {
        eprintln!(
            "micro: warning: {} allocation(s) failed during {id}; its time includes them",
            failures.get()
        );
    }
}

/// Every benchmark over one resource, each on a freshly built instance.
fn bench_resource(c: &mut Criterion, res: &Candidate, stream: &Stream) {
    let (name, s) = (res.name, stream.view());
    let failures = Cell::new(0u64);
    let mut group = c.benchmark_group("alloc_free");
    for (bytes, label) in PAIR_SIZES {
        let id = format!("alloc_free/{name}/{label}");
        let Some(mr) = fresh(res, bytes, stream, &id) else {
            continue;
        };
        failures.set(0);
        group.bench_function(BenchmarkId::new(name, label), |b| {
            b.iter_custom(|iters| {
                timed(stream, iters, || match mr.allocate(black_box(bytes), ALIGN, s) {
                    // SAFETY: `p` came from `mr` with these arguments and is unused.
                    Ok(p) => unsafe { mr.deallocate(black_box(p), bytes, ALIGN, s) },
                    Err(_) => failures.set(failures.get() + 1),
                })
            });
        });
        report_failures(&id, &failures);
    }
    group.finish();

    let mut group = c.benchmark_group("uvector_u32");
    for (n, label) in UVECTOR_LENS {
        let id = format!("uvector_u32/{name}/{label}");
        let Some(mr) = fresh(res, n * 4, stream, &id) else {
            continue;
        };
        failures.set(0);
        group.bench_function(BenchmarkId::new(name, label), |b| {
            b.iter_custom(|iters| {
                timed(stream, iters, || {
                    match DeviceUvector::<u32>::with_resource(black_box(n), s, mr.clone()) {
                        Ok(v) => drop(black_box(v)),
                        Err(_) => failures.set(failures.get() + 1),
                    }
                })
            });
        });
        report_failures(&id, &failures);
    }
    group.finish();

    let mut group = c.benchmark_group("scratch");
    for (bytes, label) in SCRATCH_SIZES {
        let id = format!("scratch/{name}/{label}");
        let Some(mr) = fresh(res, bytes, stream, &id) else {
            continue;
        };
        let policy = ExecPolicy::new(s, mr);
        failures.set(0);
        group.bench_function(BenchmarkId::new(name, label), |b| {
            b.iter_custom(|iters| {
                timed(stream, iters, || match policy.scratch::<u8>(black_box(bytes)) {
                    Ok(t) => drop(black_box(t)),
                    Err(_) => failures.set(failures.get() + 1),
                })
            });
        });
        report_failures(&id, &failures);
    }
    group.finish();
}

/// The simulated resources, then the GPU resources when a GPU is present.
fn benches(c: &mut Criterion) {
    let sim_stream = Stream { stream: None };
    for res in simulated_resources() {
        bench_resource(c, &res, &sim_stream);
    }
    if !rmm::device::is_available() {
        eprintln!(
            "micro: no GPU found: skipping the GPU resources (cuda, cuda_async, pool, binning, arena); \
             the *-sim benchmarks measure bookkeeping cost only"
        );
        return;
    }
    let free = match rmm::device::available_device_memory() {
        Ok((free, _)) => free,
        Err(e) => {
            eprintln!("micro: skipping the GPU resources: cannot query device memory: {e}");
            return;
        }
    };
    let stream = match CudaStream::new() {
        Ok(s) => Stream { stream: Some(s) },
        Err(e) => {
            eprintln!("micro: skipping the GPU resources: cannot create a stream: {e}");
            return;
        }
    };
    for res in gpu_resources(free) {
        bench_resource(c, &res, &stream);
    }
}

criterion_group! {
    name = micro;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(50);
    targets = benches
}
criterion_main!(micro);
