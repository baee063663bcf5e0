//! The allocator demo (`bash scripts/demo.sh`): one realistic mixed workload
//! over several memory resources, timed, with a summary table and charts.
//!
//! ```text
//! rmm-demo [--steps N] [--out DIR] [--simulated]
//! ```
//!
//! The workload has three phases, sizes log-uniform within each:
//!
//! 1. **scratch**: bursts of 1-8 short-lived temporaries of 256 B .. 64 KiB,
//!    freed in reverse order (what kernels draw through an `ExecPolicy`);
//! 2. **large**: a few buffers of 64 MiB .. 1 GiB, up to half of the usage
//!    cap, that stay live through the next phase;
//! 3. **mixed**: random allocations of 256 B .. 64 MiB (55% allocations while
//!    under the cap, else a random victim is freed); everything is freed at
//!    the end.
//!
//! With a GPU it runs `cuda` (cudaMalloc, fewer steps: each call costs tens
//! of microseconds), `cuda_async` (the driver's pool), `pool` (a coalescing
//! pool over cudaMalloc, 25% of free memory up front, at most 16 GiB),
//! `binning` (bins of 256 KiB .. 4 MiB over such a pool) and `arena`.
//! Without a GPU it says so on its first lines and runs `pool`, `binning`
//! and `arena` over the simulated resource (addresses only, so the timings
//! are bookkeeping cost only), plus the simulated resource alone.
//!
//! Into the output folder (default `demo-out/`) it writes `results.csv`
//! (the benchmark CSV format of `shared/anchors/WORKLOADS.md`, one row per
//! resource and phase), `ns_per_op.svg` (bar chart), `pool_events.csv` (the
//! event log of a second, untimed pool run wrapped in a `LoggingAdaptor`),
//! `pool_timeline.svg` (that log rendered as a memory timeline) and
//! `pool_view.html` (that log as `rmm-report view`'s interactive page). Resources
//! come from the one factory, `rmm_replay::by_name`; charts come
//! from `rmm_tools::report`. Failed allocations are counted, never fatal.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rmm::mr::{LoggingAdaptor, MemoryResource, SharedResource};
use rmm::{CudaStream, CudaStreamView, DevicePtr};
use rmm_replay::by_name::{self, ByNameOptions};
use rmm_tools::report::charts::alloc_chart_svg;
use rmm_tools::report::csv::{alloc_header, read_memlog_file, AllocRow};
use rmm_tools::report::points::alloc_points;
use rmm_tools::report::timeline::{render_svg, Timeline, TimelineOptions};
use rmm_tools::report::view::{render_page, ViewRun};
use rmm_tools::report::{human_bytes, write_text, ReportError};

/// One kibibyte.
const KIB: usize = 1 << 10;
/// One mebibyte.
const MIB: usize = 1 << 20;
/// One gibibyte.
const GIB: usize = 1 << 30;
/// Alignment of every request (the CUDA allocation alignment).
const ALIGN: usize = 256;
/// Workload steps (allocations) per resource unless `--steps` says otherwise.
const DEFAULT_STEPS: usize = 200_000;
/// At most this many steps in the logged pool run (its event log grows by
/// about 75 bytes per operation).
const LOGGED_MAX_STEPS: usize = 400_000;
/// At most this many steps over cudaMalloc (about 40-50 us per call on an H200).
const CUDA_MAX_STEPS: usize = 10_000;
/// The free memory of the simulated device (about an 80 GB GPU).
const SIMULATED_FREE: usize = 80 * GIB;
/// Names of the phases, as in the CSV's `workload` column.
const PHASES: [&str; 3] = ["scratch", "large", "mixed"];
/// The CSV's `params` column of each phase, then of the whole run.
const PHASE_PARAMS: [&str; 4] = [
    "256B-64KiB bursts",
    "64MiB-1GiB held",
    "256B-64MiB random",
    "3 phases",
];

/// The allocator demo: one mixed workload (scratch bursts, large held
/// buffers, random churn) over several memory resources, timed, with a
/// summary table, a CSV and charts. Without a GPU it says so and runs over
/// the simulated resource.
#[derive(Parser, Debug)]
#[command(name = "rmm-demo", version)]
struct Args {
    /// Workload steps (allocations) per resource (cudaMalloc runs at most
    /// 10000: each call costs tens of microseconds).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STEPS, value_parser = positive_steps)]
    steps: usize,
    /// Folder for results.csv, ns_per_op.svg, pool_events.csv, pool_timeline.svg and pool_view.html.
    #[arg(long, value_name = "DIR", default_value = "demo-out")]
    out: PathBuf,
    /// Run over the simulated resource even when a GPU is present.
    #[arg(long)]
    simulated: bool,
}

/// A positive whole number of steps.
fn positive_steps(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{text}` is not a positive whole number"))
}

/// SplitMix64 (the generator of the anchors' workloads).
use rmm_testing::SplitMix64 as Rng;

/// How many steps each phase takes and the cap on live bytes.
#[derive(Debug, Clone, Copy)]
struct Plan {
    scratch: usize,
    large: usize,
    mixed: usize,
    cap: usize,
}

impl Plan {
    /// Splits `steps`: a few large buffers (1/200, 8..=64), the rest half scratch, half mixed.
    fn new(steps: usize, cap: usize) -> Plan {
        let large = (steps / 200).clamp(8, 64).min(steps);
        let rest = steps - large;
        Plan {
            scratch: rest / 2,
            large,
            mixed: rest - rest / 2,
            cap,
        }
    }

    /// All steps of the plan.
    fn steps(&self) -> usize {
        self.scratch + self.large + self.mixed
    }
}

/// Operations, time and failures of one phase.
#[derive(Debug, Default, Clone, Copy)]
struct PhaseStats {
    ops: u64,
    seconds: f64,
    failed: u64,
}

impl PhaseStats {
    /// Nanoseconds per allocate or deallocate call.
    fn ns_per_op(&self) -> f64 {
        self.seconds * 1e9 / self.ops.max(1) as f64
    }
}

/// The outcome of one workload run.
#[derive(Debug, Default)]
struct RunStats {
    phases: [PhaseStats; 3],
    /// Most bytes the workload held at once.
    peak: usize,
    /// The first error that was not an out-of-memory, if any.
    error: Option<String>,
}

impl RunStats {
    /// The three phases added up.
    fn total(&self) -> PhaseStats {
        self.phases.iter().fold(PhaseStats::default(), |a, p| PhaseStats {
            ops: a.ops + p.ops,
            seconds: a.seconds + p.seconds,
            failed: a.failed + p.failed,
        })
    }
}

/// Advances a progress bar in batches, so that drawing costs nothing measurable.
struct Ticker<'a> {
    bar: &'a ProgressBar,
    pending: u64,
}

impl Ticker<'_> {
    /// Counts `n` steps done.
    fn add(&mut self, n: usize) {
        self.pending += n as u64;
        if self.pending >= 512 {
            self.flush();
        }
    }

    /// Moves the bar by the steps not shown yet.
    fn flush(&mut self) {
        self.bar.inc(self.pending);
        self.pending = 0;
    }
}

/// Issues the workload's calls and keeps its counters.
struct Driver<'a> {
    mr: &'a dyn MemoryResource,
    stream: CudaStreamView<'a>,
    gpu: bool,
    rng: Rng,
    usage: usize,
    peak: usize,
    ops: u64,
    failed: u64,
    error: Option<String>,
}

impl Driver<'_> {
    /// Allocates `size` bytes; a failure is counted and gives `None`.
    fn alloc(&mut self, size: usize) -> Option<DevicePtr> {
        self.ops += 1;
        match self.mr.allocate(size, ALIGN, self.stream) {
            Ok(p) => {
                self.usage += size;
                self.peak = self.peak.max(self.usage);
                Some(p)
            }
            Err(e) => {
                self.failed += 1;
                if !e.is_out_of_memory() && self.error.is_none() {
                    self.error = Some(format!("allocate({size}): {e}"));
                }
                None
            }
        }
    }

    /// Frees what [`alloc`](Self::alloc) returned for `size`.
    fn free(&mut self, p: DevicePtr, size: usize) {
        // SAFETY: `p` came from `self.mr.allocate(size, ALIGN, self.stream)`,
        // is freed once, and the workload never uses the memory.
        unsafe { self.mr.deallocate(p, size, ALIGN, self.stream) };
        self.usage -= size;
        self.ops += 1;
    }

    /// Waits for the stream (GPU only), keeping the first error.
    fn sync(&mut self) {
        if self.gpu {
            if let Err(e) = self.stream.synchronize() {
                self.error
                    .get_or_insert_with(|| format!("stream synchronize: {e}"));
            }
        }
    }

    /// Frees a random element of `live`, returning its size.
    fn free_random(&mut self, live: &mut Vec<(DevicePtr, usize)>) -> usize {
        let i = self.rng.below(live.len());
        let (p, s) = live.swap_remove(i);
        self.free(p, s);
        s
    }
}

/// Runs the three phases over `mr`, timing each (stream synchronised at the
/// end of each phase on a GPU).
fn run_workload(
    mr: &dyn MemoryResource,
    stream: CudaStreamView,
    gpu: bool,
    plan: &Plan,
    seed: u64,
    bar: &ProgressBar,
) -> RunStats {
    let mut d = Driver {
        mr,
        stream,
        gpu,
        rng: Rng(seed),
        usage: 0,
        peak: 0,
        ops: 0,
        failed: 0,
        error: None,
    };
    let mut tick = Ticker { bar, pending: 0 };
    let mut stats = RunStats::default();
    let mark = |d: &Driver, start: Instant, ops: u64, failed: u64| PhaseStats {
        ops: d.ops - ops,
        seconds: start.elapsed().as_secs_f64(),
        failed: d.failed - failed,
    };

    // Phase 1: bursts of scratch temporaries, freed in reverse order.
    bar.set_message("scratch: bursts of small temporaries");
    let (start, ops, failed) = (Instant::now(), d.ops, d.failed);
    let mut burst: Vec<(DevicePtr, usize)> = Vec::with_capacity(8);
    let mut done = 0;
    while done < plan.scratch {
        let k = (1 + d.rng.below(8)).min(plan.scratch - done);
        for _ in 0..k {
            let size = d.rng.log_uniform(256, 64 * KIB);
            if let Some(p) = d.alloc(size) {
                burst.push((p, size));
            }
        }
        while let Some((p, s)) = burst.pop() {
            d.free(p, s);
        }
        done += k;
        tick.add(k);
    }
    d.sync();
    stats.phases[0] = mark(&d, start, ops, failed);
    tick.flush();

    // Phase 2: a few large buffers, held into phase 3.
    bar.set_message("large: a few big buffers");
    let (start, ops, failed) = (Instant::now(), d.ops, d.failed);
    let large_cap = plan.cap / 2;
    let mut large: Vec<(DevicePtr, usize)> = Vec::new();
    let mut large_usage = 0;
    for _ in 0..plan.large {
        let size = d.rng.log_uniform(64 * MIB, GIB).min(large_cap.max(1));
        while large_usage + size > large_cap && !large.is_empty() {
            large_usage -= d.free_random(&mut large);
        }
        if let Some(p) = d.alloc(size) {
            large.push((p, size));
            large_usage += size;
        }
        tick.add(1);
    }
    d.sync();
    stats.phases[1] = mark(&d, start, ops, failed);
    tick.flush();

    // Phase 3: random allocations and frees under the rest of the cap.
    bar.set_message("mixed: random allocate/free");
    let (start, ops, failed) = (Instant::now(), d.ops, d.failed);
    let mixed_cap = plan.cap.saturating_sub(large_usage);
    let mut live: Vec<(DevicePtr, usize)> = Vec::new();
    let mut usage = 0;
    for _ in 0..plan.mixed {
        let size = d.rng.log_uniform(256, 64 * MIB);
        tick.add(1);
        if live.is_empty() || (d.rng.below(100) < 55 && usage + size <= mixed_cap) {
            if let Some(p) = d.alloc(size) {
                live.push((p, size));
                usage += size;
                continue;
            }
        }
        if !live.is_empty() {
            usage -= d.free_random(&mut live);
        }
    }
    for (p, s) in live.drain(..).chain(large.drain(..)) {
        d.free(p, s);
    }
    d.sync();
    stats.phases[2] = mark(&d, start, ops, failed);
    tick.flush();

    stats.peak = d.peak;
    stats.error = d.error;
    stats
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
fn progress_bar(len: usize, prefix: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(len as u64), target);
    let style = ProgressStyle::with_template("{prefix:>14} [{bar:32}] {pos:>7}/{len:7} {msg}")
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(prefix.to_string());
    bar
}

/// Builds a resource; called right before its run, so that only one
/// resource holds device memory at a time.
type Builder = Box<dyn Fn() -> rmm::Result<SharedResource>>;

/// A resource of the demo.
struct Candidate {
    /// The name used in the table and the CSV (`cuda`, `pool`, ...).
    name: &'static str,
    /// What it is, printed before its run.
    what: String,
    /// Workload steps for it.
    plan: Plan,
    build: Builder,
}

/// The sizes the resources are configured with, from the free memory.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    /// Cap on the bytes the workload holds at once.
    cap: usize,
    /// Initial size of the pools.
    pool: usize,
    /// Size of the arena.
    arena: usize,
}

impl Sizes {
    /// Cap 1/8 of `free` (at most 8 GiB), pools 1/4 (at most 16 GiB), arena 1/2 (at most 32 GiB).
    fn from_free(free: usize) -> Sizes {
        let round = |b: usize| rmm::align::align_down(b, ALIGN);
        Sizes {
            cap: round((free / 8).min(8 * GIB)),
            pool: round((free / 4).min(16 * GIB)),
            arena: round((free / 2).min(32 * GIB)).max(MIB),
        }
    }
}

/// A builder of the resource `name` from the one factory, [`rmm_replay::by_name`].
fn by_name(name: &'static str, opts: ByNameOptions) -> Builder {
    Box::new(move || by_name::resource(name, &opts))
}

/// The GPU resources: cuda (fewer steps), cuda_async, pool, binning, arena.
fn gpu_candidates(steps: usize, sizes: Sizes) -> Vec<Candidate> {
    let plan = Plan::new(steps, sizes.cap);
    let (pool, arena) = (sizes.pool, sizes.arena);
    let opts = ByNameOptions::default().pool_initial_size(pool).arena_size(arena);
    vec![
        Candidate {
            name: "cuda",
            what: "CudaMemoryResource: cudaMalloc / cudaFree for every request".into(),
            plan: Plan::new(steps.min(CUDA_MAX_STEPS), sizes.cap),
            build: by_name("cuda", opts.clone()),
        },
        Candidate {
            name: "cuda_async",
            what: "CudaAsyncMemoryResource: cudaMallocAsync, the driver's stream-ordered pool".into(),
            plan,
            build: by_name("cuda_async", opts.clone()),
        },
        Candidate {
            name: "pool",
            what: format!(
                "PoolMemoryResource over cudaMalloc, initial {}",
                human_bytes(pool as f64)
            ),
            plan,
            build: by_name("pool", opts.clone()),
        },
        Candidate {
            name: "binning",
            what: format!(
                "BinningMemoryResource, bins 256 KiB .. 4 MiB, over a pool of {}",
                human_bytes(pool as f64)
            ),
            plan,
            build: by_name("binning", opts.clone()),
        },
        Candidate {
            name: "arena",
            what: format!(
                "ArenaMemoryResource over cudaMalloc, arena {}",
                human_bytes(arena as f64)
            ),
            plan,
            build: by_name("arena", opts),
        },
    ]
}

/// The resources over the simulated device, and the simulated resource alone.
fn simulated_candidates(steps: usize, sizes: Sizes) -> Vec<Candidate> {
    let plan = Plan::new(steps, sizes.cap);
    let (pool, arena) = (sizes.pool, sizes.arena);
    let opts = ByNameOptions::default()
        .simulate(true)
        .simulated_size(SIMULATED_FREE)
        .pool_initial_size(pool)
        .arena_size(arena);
    vec![
        Candidate {
            name: "simulated",
            what: format!(
                "SimulatedMemoryResource alone: a {} device, addresses only",
                human_bytes(SIMULATED_FREE as f64)
            ),
            plan,
            build: by_name("simulated", opts.clone()),
        },
        Candidate {
            name: "pool",
            what: format!(
                "PoolMemoryResource over simulated, initial {}",
                human_bytes(pool as f64)
            ),
            plan,
            build: by_name("pool", opts.clone()),
        },
        Candidate {
            name: "binning",
            what: format!(
                "BinningMemoryResource, bins 256 KiB .. 4 MiB, over a simulated pool of {}",
                human_bytes(pool as f64)
            ),
            plan,
            build: by_name("binning", opts.clone()),
        },
        Candidate {
            name: "arena",
            what: format!(
                "ArenaMemoryResource over simulated, arena {}",
                human_bytes(arena as f64)
            ),
            plan,
            build: by_name("arena", opts),
        },
    ]
}

/// One row of the summary.
struct Measured {
    name: &'static str,
    stats: RunStats,
}

/// Where the run happens: a GPU with a stream, or the simulated device.
enum Target {
    Gpu(CudaStream),
    Simulated,
}

impl Target {
    /// The stream the workload runs on (the default one when simulated).
    fn stream(&self) -> CudaStreamView<'_> {
        match self {
            Target::Gpu(s) => s.view(),
            Target::Simulated => CudaStreamView::DEFAULT,
        }
    }

    /// True on a real GPU.
    fn is_gpu(&self) -> bool {
        matches!(self, Target::Gpu(_))
    }
}

/// Decides where to run and prints the first lines saying so.
fn choose_target(args: &Args) -> (Target, Sizes) {
    let simulated = |why: &str| {
        println!("rmm-demo: NO GPU USED: {why}.");
        println!(
            "Running pool, binning and arena over the simulated resource (a {} device that hands out",
            human_bytes(SIMULATED_FREE as f64)
        );
        println!("addresses without memory), plus the simulated resource alone.");
        println!("Timings are the allocators' bookkeeping cost only, not GPU allocation cost.");
        (Target::Simulated, Sizes::from_free(SIMULATED_FREE))
    };
    if args.simulated {
        return simulated("--simulated was given");
    }
    if let Err(e) = rmm::device::init_driver() {
        return simulated(&format!("no usable GPU ({e})"));
    }
    if !rmm::device::is_available() {
        return simulated("the CUDA driver reports no device on this machine");
    }
    let (free, total) = match rmm::device::available_device_memory() {
        Ok(m) => m,
        Err(e) => {
            return simulated(&format!(
                "a GPU is present but its memory cannot be queried ({e})"
            ))
        }
    };
    let stream = match CudaStream::new() {
        Ok(s) => s,
        Err(e) => return simulated(&format!("a GPU is present but creating a stream failed ({e})")),
    };
    println!(
        "rmm-demo: GPU found: {} device(s); device 0 has {} free of {}.",
        rmm::device::device_count(),
        human_bytes(free as f64),
        human_bytes(total as f64)
    );
    (Target::Gpu(stream), Sizes::from_free(free))
}

/// Prints the summary table; `base` is the baseline's name and ns/op.
fn print_table(rows: &[Measured], base: Option<(&str, f64)>) {
    println!();
    println!(
        "{:<12} {:>9} {:>9} {:>10} {:>9} {:>11} {:>9}",
        "resource", "ops", "time s", "ns/op", "speed-up", "peak bytes", "failures"
    );
    for m in rows {
        let t = m.stats.total();
        let ns = t.ns_per_op();
        let speed = base.map_or("-".to_string(), |(_, b)| format!("{:.1}x", b / ns));
        println!(
            "{:<12} {:>9} {:>9.3} {:>10.1} {:>9} {:>11} {:>9}",
            m.name,
            t.ops,
            t.seconds,
            ns,
            speed,
            human_bytes(m.stats.peak as f64),
            t.failed
        );
    }
    match base {
        Some((name, _)) => {
            println!("speed-up: {name} ns/op divided by the resource's ns/op (higher is better)")
        }
        None => println!("speed-up: not shown (the baseline resource did not run)"),
    }
    println!(
        "peak bytes: most bytes the workload held at once; failures: allocations that returned an error"
    );
    for m in rows {
        if let Some(e) = &m.stats.error {
            println!("{}: first error that was not out-of-memory: {e}", m.name);
        }
    }
}

/// The benchmark-CSV rows of the measurements: one per resource and phase,
/// plus one for the whole run.
fn csv_rows(rows: &[Measured], impl_name: &str) -> Vec<AllocRow> {
    let mut out = Vec::new();
    for m in rows {
        let total = m.stats.total();
        let all = m.stats.phases.iter().chain(std::iter::once(&total));
        for (i, p) in all.enumerate() {
            out.push(AllocRow {
                impl_name: impl_name.to_string(),
                resource: m.name.to_string(),
                workload: PHASES.get(i).copied().unwrap_or("all").to_string(),
                params: PHASE_PARAMS[i].to_string(),
                seconds: p.seconds,
                ns_per_op: p.ns_per_op(),
                failed: p.failed,
                line: out.len() + 2,
            });
        }
    }
    out
}

/// Writes `results.csv` and `ns_per_op.svg`; returns the paths written.
fn write_results(out: &Path, rows: &[AllocRow]) -> Result<Vec<PathBuf>, ReportError> {
    let mut csv = format!("{}\n", alloc_header());
    for r in rows {
        csv.push_str(&format!(
            "{},{},{},{},{:.6},{:.1},{}\n",
            r.impl_name, r.resource, r.workload, r.params, r.seconds, r.ns_per_op, r.failed
        ));
    }
    let csv_path = out.join("results.csv");
    write_text(&csv_path, &csv)?;
    let (points, _) = alloc_points(rows);
    let chart_path = out.join("ns_per_op.svg");
    write_text(&chart_path, &alloc_chart_svg(&points)?)?;
    Ok(vec![csv_path, chart_path])
}

/// Runs the pool once more behind a `LoggingAdaptor` logging to
/// `pool_events.csv`, then renders the log as `pool_timeline.svg` and
/// `pool_view.html`.
fn pool_timeline(pool: &Candidate, target: &Target, out: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let log_path = out.join("pool_events.csv");
    let svg_path = out.join("pool_timeline.svg");
    let view_path = out.join("pool_view.html");
    let mr = (pool.build)().map_err(|e| format!("cannot build the pool: {e}"))?;
    let logged = LoggingAdaptor::to_file(mr, &log_path, false).map_err(|e| e.to_string())?;
    let plan = if pool.plan.steps() > LOGGED_MAX_STEPS {
        println!(
            "pool timeline: logging a run of {LOGGED_MAX_STEPS} steps (not {}) to keep the log small",
            pool.plan.steps()
        );
        Plan::new(LOGGED_MAX_STEPS, pool.plan.cap)
    } else {
        pool.plan
    };
    let bar = progress_bar(plan.steps(), "pool (logged)");
    let stats = run_workload(&logged, target.stream(), target.is_gpu(), &plan, 42, &bar);
    bar.finish_and_clear();
    logged.flush().map_err(|e| e.to_string())?;
    if logged.write_errors() > 0 {
        return Err(format!(
            "{} log line(s) could not be written",
            logged.write_errors()
        ));
    }
    drop(logged);
    if let Some(e) = stats.error {
        println!("pool (logged): {e}");
    }
    let events = read_memlog_file(&log_path).map_err(|e| e.to_string())?;
    let timeline = Timeline::from_log(&events);
    let opts = TimelineOptions {
        title: format!("Memory timeline: {}, mixed workload", pool.what),
        ..TimelineOptions::default()
    };
    let (svg, _) = render_svg(&timeline, &opts).map_err(|e| e.to_string())?;
    write_text(&svg_path, &svg).map_err(|e| e.to_string())?;
    let run = ViewRun::from_log(&log_path.display().to_string(), &events).map_err(|e| e.to_string())?;
    let page = render_page(&format!("Memory view: {}, mixed workload", pool.what), &[run]);
    write_text(&view_path, &page).map_err(|e| e.to_string())?;
    let s = timeline.stats();
    println!(
        "pool timeline: {} events, peak {} in use, {} allocation failure(s)",
        s.events,
        human_bytes(s.peak_bytes as f64),
        s.failures
    );
    Ok(vec![log_path, svg_path, view_path])
}

/// Runs the demo: 0 on success, 1 when results could not be written, 2 on a usage error.
fn main() -> ExitCode {
    let args = Args::parse();
    let (target, sizes) = choose_target(&args);
    let candidates = if target.is_gpu() {
        gpu_candidates(args.steps, sizes)
    } else {
        simulated_candidates(args.steps, sizes)
    };
    println!(
        "Workload: {} steps per resource in 3 phases (scratch bursts 256 B-64 KiB, large buffers 64 MiB-1 GiB,",
        args.steps
    );
    println!(
        "mixed random 256 B-64 MiB; sizes log-uniform), at most {} live; output folder {}",
        human_bytes(sizes.cap as f64),
        args.out.display()
    );
    println!();

    let started = Instant::now();
    let mut measured = Vec::new();
    for c in &candidates {
        let steps_note = if c.plan.steps() < args.steps {
            format!(" ({} steps: capped)", c.plan.steps())
        } else {
            String::new()
        };
        println!("{:<12} {}{steps_note}", c.name, c.what);
        let mr = match (c.build)() {
            Ok(mr) => mr,
            Err(e) => {
                println!("{:<12} skipped: cannot build it: {e}", c.name);
                continue;
            }
        };
        // An untimed warm-up, then the timed run.
        let warm = Plan::new((c.plan.steps() / 10).max(1), c.plan.cap);
        let hidden = ProgressBar::hidden();
        let _ = run_workload(mr.inner(), target.stream(), target.is_gpu(), &warm, 99, &hidden);
        let bar = progress_bar(c.plan.steps(), c.name);
        let stats = run_workload(mr.inner(), target.stream(), target.is_gpu(), &c.plan, 42, &bar);
        bar.finish_and_clear();
        drop(mr);
        measured.push(Measured { name: c.name, stats });
    }

    let base_name = if target.is_gpu() { "cuda" } else { "simulated" };
    let base = measured
        .iter()
        .find(|m| m.name == base_name)
        .map(|m| (base_name, m.stats.total().ns_per_op()));
    print_table(&measured, base);
    if !target.is_gpu() {
        println!("(simulated device: timings are bookkeeping cost only, no GPU memory was allocated)");
    }
    println!();

    let mut ok = true;
    let impl_name = if target.is_gpu() { "rmm-rs" } else { "rmm-rs-sim" };
    let mut written = Vec::new();
    if measured.is_empty() {
        println!("no resource ran: no results to write");
        ok = false;
    } else {
        match write_results(&args.out, &csv_rows(&measured, impl_name)) {
            Ok(paths) => written.extend(paths),
            Err(e) => {
                println!("writing the results failed: {e}");
                ok = false;
            }
        }
    }
    match candidates.iter().find(|c| c.name == "pool") {
        Some(pool) => match pool_timeline(pool, &target, &args.out) {
            Ok(paths) => written.extend(paths),
            Err(e) => {
                println!("pool timeline failed: {e}");
                ok = false;
            }
        },
        None => println!("no pool configured: no timeline"),
    }
    for p in &written {
        println!("wrote {}", p.display());
    }
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use rmm::mr::{PoolMemoryResource, PoolOptions, SimulatedMemoryResource};

    /// Parses string literals as arguments.
    fn args(list: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(std::iter::once("rmm-demo").chain(list.iter().copied()))
    }

    #[test]
    fn arguments() {
        Args::command().debug_assert();
        let a = args(&[]).unwrap();
        assert_eq!(
            (a.steps, a.out, a.simulated),
            (DEFAULT_STEPS, PathBuf::from("demo-out"), false)
        );
        let a = args(&["--steps", "7", "--out=x/y", "--simulated"]).unwrap();
        assert_eq!((a.steps, a.out, a.simulated), (7, PathBuf::from("x/y"), true));
        let help = args(&["--help"]).unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        assert!(help.to_string().contains("--simulated"));
        for bad in [
            &["--steps"][..],
            &["--steps", "0"],
            &["--steps", "x"],
            &["--what"],
            &["--simulated=1"],
        ] {
            assert!(args(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn plan_covers_every_step() {
        for steps in [1, 2, 9, 100, 12_345, 1_000_000] {
            let p = Plan::new(steps, GIB);
            assert_eq!(p.steps(), steps);
            assert!(p.large >= 1);
        }
    }

    #[test]
    fn log_uniform_stays_in_range() {
        let mut rng = Rng(1);
        let sizes: Vec<usize> = (0..10_000).map(|_| rng.log_uniform(256, 64 * MIB)).collect();
        assert!(sizes.iter().all(|&s| (256..=64 * MIB).contains(&s)));
        // Log-uniform: about as many below 128 KiB (the geometric middle) as above.
        let below = sizes.iter().filter(|&&s| s < 128 * KIB).count();
        assert!((4000..6000).contains(&below), "{below}");
    }

    #[test]
    fn out_of_memory_is_counted_not_fatal() {
        // A device far smaller than the workload's cap: many allocations fail.
        let sim = SimulatedMemoryResource::new(256 * MIB);
        let plan = Plan::new(5000, 8 * GIB);
        let stats = run_workload(
            &sim,
            CudaStreamView::DEFAULT,
            false,
            &plan,
            42,
            &ProgressBar::hidden(),
        );
        let total = stats.total();
        assert!(total.failed > 0);
        assert!(stats.error.is_none(), "{:?}", stats.error);
        assert_eq!(sim.allocated_bytes(), 0, "everything freed");
        assert_eq!(sim.bad_frees(), 0);
        assert!(stats.peak <= 256 * MIB);
    }

    #[test]
    fn same_seed_same_workload() {
        let run = || {
            let pool = PoolMemoryResource::new(
                SimulatedMemoryResource::new(SIMULATED_FREE),
                PoolOptions::default().initial_pool_size(GIB),
            )
            .unwrap();
            let plan = Plan::new(3000, 2 * GIB);
            let s = run_workload(
                &pool,
                CudaStreamView::DEFAULT,
                false,
                &plan,
                42,
                &ProgressBar::hidden(),
            );
            (s.phases.map(|p| (p.ops, p.failed)), s.peak)
        };
        let (a, b) = (run(), run());
        assert_eq!(a, b);
        assert!(a.0.iter().all(|&(ops, failed)| ops > 0 && failed == 0));
    }

    #[test]
    fn csv_rows_per_phase_and_total() {
        let stats = RunStats {
            phases: [
                PhaseStats {
                    ops: 10,
                    seconds: 1e-6,
                    failed: 0,
                },
                PhaseStats {
                    ops: 4,
                    seconds: 2e-6,
                    failed: 1,
                },
                PhaseStats {
                    ops: 6,
                    seconds: 1e-6,
                    failed: 0,
                },
            ],
            peak: 0,
            error: None,
        };
        let rows = csv_rows(&[Measured { name: "pool", stats }], "x");
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[3].workload, "all");
        assert!((rows[3].ns_per_op - 200.0).abs() < 1e-9);
        assert_eq!(rows[3].failed, 1);
    }
}
