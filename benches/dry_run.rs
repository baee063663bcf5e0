//! Dry runs of the sort (`u32` keys, `u32` key-value pairs) and the
//! exclusive scan (`u32`) at 2^20 to 2^30 elements beside the GPU.
//!
//! Per algorithm and size it prints one row of a Markdown table:
//!
//! | column | what |
//! |---|---|
//! | `dry peak` | peak scratch bytes of the call under a dry-run policy over simulated memory ([`DryRun::report`]) |
//! | `allocs` | scratch allocations of the dry run |
//! | `smallest pool` | the smallest `PoolMemoryResource` (initial = maximum size) the dry run fits in, by bisection |
//! | `GPU peak` | peak scratch bytes of the same call on the GPU, its scratch through a statistics adaptor over `cuMemAlloc` |
//! | `GPU allocs` | scratch allocations on the GPU |
//! | `pool on GPU` | the same call on the GPU with its scratch from a real pool of the smallest size (`fits`), and of 256 bytes less (`-256 fails` when it runs out of memory) |
//!
//! The dry-run columns need no GPU. With one, sizes whose inputs, scratch
//! and pool do not fit in free device memory are skipped, and so are the
//! rest once 50 s have gone by (the GPU part takes about 10 s on an H200).
//! Exits 1 when a GPU column disagrees with the dry run. Not a timing: no
//! figure here is a time.
//!
//! Run: `cargo bench --bench dry_run` (or the built binary, e.g.
//! `.gpu-bundle/tools/bench-dry_run` from `scripts/gpu-bundle.sh`, on the
//! GPU machine).

use std::time::{Duration, Instant};

use rmm::dry_run::{DryRun, ScratchReport};
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{
    CudaMemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource, StatisticsAdaptor,
};
use rmm::{CudaStream, DeviceUvector, Result};
use rmm_suite::scan::exclusive_scan;
use rmm_suite::sequence::sequence;
use rmm_suite::sort::{sort_keys, sort_pairs, Order};

type Res<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Sizes: 2^20 to 2^30 elements.
const LOG2_SIZES: std::ops::RangeInclusive<u32> = 20..=30;
/// After this long on the GPU the remaining sizes are skipped there.
const GPU_BUDGET: Duration = Duration::from_secs(50);
/// Free device memory kept beyond what a size needs.
const HEADROOM: usize = 512 << 20;

#[derive(Clone, Copy, Debug)]
enum Algorithm {
    SortKeys,
    SortPairs,
    ExclusiveScan,
}

impl Algorithm {
    const ALL: [Algorithm; 3] = [
        Algorithm::SortKeys,
        Algorithm::SortPairs,
        Algorithm::ExclusiveScan,
    ];

    fn name(self) -> &'static str {
        match self {
            Algorithm::SortKeys => "sort_keys u32",
            Algorithm::SortPairs => "sort_pairs u32",
            Algorithm::ExclusiveScan => "exclusive_scan u32",
        }
    }

    /// The call, on buffers `a` and `b` of equal length: the same code in a
    /// dry run and on the GPU.
    fn call(self, a: &mut DeviceUvector<u32>, b: &mut DeviceUvector<u32>, policy: &ExecPolicy) -> Result<()> {
        match self {
            Algorithm::SortKeys => sort_keys(a.as_span_mut(), Order::Ascending, policy),
            Algorithm::SortPairs => sort_pairs(a.as_span_mut(), b.as_span_mut(), Order::Ascending, policy),
            Algorithm::ExclusiveScan => exclusive_scan(a.as_span(), b.as_span_mut(), policy),
        }
    }
}

/// The dry run of `algorithm` on `n` elements of simulated memory.
fn dry_run(algorithm: Algorithm, n: usize) -> Result<ScratchReport> {
    let data = SimulatedMemoryResource::new(usize::MAX);
    let stream = rmm::CudaStreamView::DEFAULT;
    let mut a = DeviceUvector::<u32>::with_resource(n, stream, data.clone())?;
    let mut b = DeviceUvector::<u32>::with_resource(n, stream, data)?;
    DryRun::default().report(|policy| algorithm.call(&mut a, &mut b, policy))
}

/// What the GPU said for one row.
enum Gpu {
    Measured {
        peak: usize,
        allocations: usize,
        pool_fits: bool,
        smaller_fails: bool,
    },
    Skipped(String),
}

/// `algorithm` on `n` elements of device memory: the scratch peak through a
/// statistics adaptor, then the call with scratch from a pool of the dry
/// run's smallest size and of 256 bytes less.
fn on_gpu(algorithm: Algorithm, n: usize, dry: &ScratchReport, stream: &CudaStream) -> Res<Gpu> {
    let need = 8 * n + dry.peak_scratch_bytes.max(dry.smallest_pool_bytes) + HEADROOM;
    let (free, _) = rmm::device::available_device_memory()?;
    if need > free {
        return Ok(Gpu::Skipped(format!("needs {need} bytes, {free} free")));
    }
    let device = CudaMemoryResource::new();
    let plain = ExecPolicy::new(stream.view(), device);
    let mut a = DeviceUvector::<u32>::with_resource(n, stream.view(), device)?;
    let mut b = DeviceUvector::<u32>::with_resource(n, stream.view(), device)?;
    sequence(a.as_span_mut(), n as u32, u32::MAX, &plain)?; // n, n - 1, ..., 1
    sequence(b.as_span_mut(), 0, 1, &plain)?;

    let stats = StatisticsAdaptor::new(device);
    algorithm.call(&mut a, &mut b, &ExecPolicy::new(stream.view(), stats.clone()))?;
    stream.synchronize()?;
    let (peak, allocations) = (stats.bytes_counter().peak, stats.allocations_counter().total);

    let in_pool = |bytes: usize, a: &mut DeviceUvector<u32>, b: &mut DeviceUvector<u32>| -> Res<bool> {
        let options = PoolOptions::default()
            .initial_pool_size(bytes)
            .maximum_pool_size(bytes);
        let pool = PoolMemoryResource::new(device, options)?;
        let ran = algorithm.call(a, b, &ExecPolicy::new(stream.view(), pool));
        stream.synchronize()?;
        match ran {
            Ok(()) => Ok(true),
            Err(e) if e.is_out_of_memory() => Ok(false),
            Err(e) => Err(e.into()),
        }
    };
    let pool_fits = in_pool(dry.smallest_pool_bytes, &mut a, &mut b)?;
    let smaller_fails = match dry.smallest_pool_bytes.checked_sub(256) {
        Some(smaller) => !in_pool(smaller, &mut a, &mut b)?,
        None => true,
    };
    Ok(Gpu::Measured {
        peak: usize::try_from(peak)?,
        allocations: usize::try_from(allocations)?,
        pool_fits,
        smaller_fails,
    })
}

/// Prints one row; returns whether the GPU agreed with the dry run (true
/// when it was not asked).
fn print_row(algorithm: Algorithm, log2: u32, dry: &ScratchReport, gpu: &Gpu) -> bool {
    let (gpu_cells, agrees) = match gpu {
        Gpu::Measured {
            peak,
            allocations,
            pool_fits,
            smaller_fails,
        } => {
            let agrees = *peak == dry.peak_scratch_bytes
                && *allocations == dry.scratch_allocations
                && *pool_fits
                && *smaller_fails;
            let pool = match (pool_fits, smaller_fails) {
                (true, true) => "fits, -256 fails".to_string(),
                (fits, fails) => format!("MISMATCH: fits {fits}, -256 fails {fails}"),
            };
            let mark = |same: bool| if same { "" } else { " (MISMATCH)" };
            let peak = format!("{peak}{}", mark(*peak == dry.peak_scratch_bytes));
            let allocations = format!("{allocations}{}", mark(*allocations == dry.scratch_allocations));
            (format!("{peak} | {allocations} | {pool}"), agrees)
        }
        Gpu::Skipped(why) => (format!("- | - | skipped: {why}"), true),
    };
    println!(
        "| {} | 2^{log2} | {} | {} | {} | {gpu_cells} |",
        algorithm.name(),
        dry.peak_scratch_bytes,
        dry.scratch_allocations,
        dry.smallest_pool_bytes
    );
    agrees
}

fn run() -> Res<bool> {
    let stream = if rmm::device::is_available() {
        Some(CudaStream::new()?)
    } else {
        eprintln!("dry_run bench: no usable GPU here; the GPU columns stay empty");
        None
    };
    println!("| algorithm | n | dry peak | allocs | smallest pool | GPU peak | GPU allocs | pool on GPU |");
    println!("|---|---|---:|---:|---:|---:|---:|---|");
    let started = Instant::now();
    let mut all_agree = true;
    for algorithm in Algorithm::ALL {
        for log2 in LOG2_SIZES {
            let n = 1usize << log2;
            let dry = dry_run(algorithm, n)?;
            let gpu = match &stream {
                None => Gpu::Skipped("no GPU".into()),
                Some(_) if started.elapsed() > GPU_BUDGET => Gpu::Skipped("time budget spent".into()),
                Some(s) => on_gpu(algorithm, n, &dry, s)?,
            };
            all_agree &= print_row(algorithm, log2, &dry, &gpu);
        }
    }
    eprintln!("dry_run bench: {:.1} s", started.elapsed().as_secs_f64());
    Ok(all_agree)
}

fn main() {
    match run() {
        Ok(true) => {}
        Ok(false) => {
            eprintln!("dry_run bench: the GPU disagreed with the dry run (rows marked above)");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("dry_run bench failed: {e}");
            std::process::exit(1);
        }
    }
}
