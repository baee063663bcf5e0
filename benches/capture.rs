//! Graph replay against eager launches: a small pipeline (a sort of 2^16
//! `u32` keys into a second buffer, then an exclusive scan of the sorted
//! keys, scratch from the policy) run eagerly, one call after another, and
//! captured once into a graph and replayed. Prints, per scratch resource:
//!
//! | column | what |
//! |---|---|
//! | `eager_ns` | wall time per pipeline over `REPS` eager pipelines (host launch cost included), one synchronisation at the end |
//! | `graph_ns` | wall time per pipeline over `REPS` launches of the graph, one synchronisation at the end |
//! | `eager_peak` | peak scratch bytes of the eager pipelines (a statistics adaptor over the scratch resource) |
//! | `graph_reserved` | bytes the captured pipeline keeps reserved while its graph exists (after its launches, less what it was before the capture): for `cuda_async` the driver's graph memory (`CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT`); for the pool the bytes it holds off its shared free lists (`pool_size - free_bytes`: the graph's private pool, carved from the pool or grown from its upstream) |
//!
//! Both ways the outputs are checked against the CPU once. A benchmark,
//! not a test: the figures decide nothing. Without a GPU it says so on
//! stderr and exits 0.
//!
//! Run: `cargo bench --bench capture` (or the built binary on the GPU
//! machine); `REPS` (default 2000) pipelines are timed each way.

use std::time::Instant;

use cudarc::driver::sys as cu;
use rayon::prelude::*;
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{
    CudaAsyncMemoryResource, CudaMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions,
    StatisticsAdaptor,
};
use rmm::{CudaStream, DeviceUvector};
use rmm_suite::scan::exclusive_scan;
use rmm_suite::sort::{sort_keys_copy, Order};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const LOG_N: u32 = 16;

/// The pipeline's buffers (outside any capture, from `cuMemAlloc`).
struct Buffers {
    keys: DeviceUvector<u32>,
    sorted: DeviceUvector<u32>,
    prefix: DeviceUvector<u32>,
}

impl Buffers {
    fn new(host: &[u32], s: &CudaStream) -> Res<Buffers> {
        let n = host.len();
        let zeros = vec![0u32; n];
        let on = |d: &[u32]| DeviceUvector::from_slice_with_resource(d, s.view(), CudaMemoryResource::new());
        Ok(Buffers {
            keys: on(host)?,
            sorted: on(&zeros)?,
            prefix: on(&zeros)?,
        })
    }

    /// Sort, then scan, on the policy's stream.
    fn pipeline(&mut self, policy: &ExecPolicy) -> rmm::Result<()> {
        sort_keys_copy(
            self.keys.as_span(),
            self.sorted.as_span_mut(),
            Order::Ascending,
            policy,
        )?;
        exclusive_scan(self.sorted.as_span(), self.prefix.as_span_mut(), policy)
    }

    /// Compares the outputs with the CPU's.
    fn check(&self, host: &[u32], s: &CudaStream, what: &str) -> Res<()> {
        let mut want = host.to_vec();
        want.par_sort_unstable();
        if self.sorted.copy_to_host(s.view())? != want {
            return Err(format!("{what}: the keys are not sorted").into());
        }
        let mut acc = 0u32;
        let prefix: Vec<u32> = want
            .iter()
            .map(|&k| {
                let before = acc;
                acc = acc.wrapping_add(k);
                before
            })
            .collect();
        if self.prefix.copy_to_host(s.view())? != prefix {
            return Err(format!("{what}: the scan is wrong").into());
        }
        Ok(())
    }
}

/// The driver's graph memory reserved on the current device, in bytes.
fn graph_reserved_bytes() -> Res<u64> {
    let device = rmm::device::current_device()?.value();
    let mut value: u64 = 0;
    // SAFETY: rmm made the primary context current (the buffers exist);
    // the attribute is a 64-bit value written to `value`.
    let r = unsafe {
        cu::cuDeviceGetGraphMemAttribute(
            device,
            cu::CUgraphMem_attribute::CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
            (&mut value as *mut u64).cast(),
        )
    };
    if r != cu::CUresult::CUDA_SUCCESS {
        return Err(format!("cuDeviceGetGraphMemAttribute: {r:?}").into());
    }
    Ok(value)
}

/// The scratch resource of one row and what it reports.
trait Scratch: MemoryResource + Clone + 'static {
    const NAME: &'static str;
    /// Bytes the resource itself holds from the driver.
    fn held_bytes(&self) -> Res<u64>;
    /// Peak bytes handed out (the statistics adaptor's).
    fn peak_bytes(&self) -> i64;
}

impl Scratch for StatisticsAdaptor<CudaAsyncMemoryResource> {
    const NAME: &'static str = "cuda_async";
    fn held_bytes(&self) -> Res<u64> {
        graph_reserved_bytes()
    }
    fn peak_bytes(&self) -> i64 {
        self.bytes_counter().peak
    }
}

impl Scratch for StatisticsAdaptor<PoolMemoryResource<CudaMemoryResource>> {
    const NAME: &'static str = "pool";
    fn held_bytes(&self) -> Res<u64> {
        let pool = self.upstream();
        Ok(pool.pool_size().saturating_sub(pool.free_bytes()) as u64)
    }
    fn peak_bytes(&self) -> i64 {
        self.bytes_counter().peak
    }
}

/// Seconds per pipeline of `reps` calls of `f`, one synchronisation at the end.
fn per_call(s: &CudaStream, reps: usize, mut f: impl FnMut() -> rmm::Result<()>) -> Res<f64> {
    f()?;
    s.synchronize()?;
    let t0 = Instant::now();
    for _ in 0..reps {
        f()?;
    }
    s.synchronize()?;
    Ok(t0.elapsed().as_secs_f64() / reps as f64)
}

fn bench<R: Scratch>(scratch: R, host: &[u32], reps: usize) -> Res<()> {
    let s = CudaStream::non_blocking()?;
    let policy = ExecPolicy::new(s.view(), scratch.clone());
    let mut b = Buffers::new(host, &s)?;
    let eager = per_call(&s, reps, || b.pipeline(&policy))?;
    b.check(host, &s, "eager")?;
    let eager_peak = scratch.peak_bytes();

    let before = scratch.held_bytes()?;
    let graph = policy.capture(|p| b.pipeline(p))?;
    let replay = per_call(&s, reps, || {
        // SAFETY: the buffers outlive the graph (dropped below) and only
        // the graph's launches use them until the check after the
        // synchronisation.
        unsafe { graph.launch(s.view()) }
    })?;
    let reserved = scratch.held_bytes()?.saturating_sub(before);
    b.check(host, &s, "graph")?;
    println!(
        "{:<11} {:>5} {:>10.0} {:>10.0} {:>8.2} {:>12} {:>15}",
        R::NAME,
        format!("2^{LOG_N}"),
        eager * 1e9,
        replay * 1e9,
        eager / replay,
        eager_peak,
        reserved
    );
    drop(graph);
    s.synchronize()?;
    Ok(())
}

fn run() -> Res<()> {
    let reps: usize = match std::env::var("REPS") {
        Ok(v) => v.parse()?,
        Err(_) => 2000,
    };
    let n = 1usize << LOG_N;
    let mut r = rmm_testing::SplitMix64(2026);
    let host: Vec<u32> = (0..n).map(|_| r.next() as u32).collect();
    println!("sort of 2^{LOG_N} u32 keys + exclusive scan, {reps} pipelines each way");
    println!(
        "{:<11} {:>5} {:>10} {:>10} {:>8} {:>12} {:>15}",
        "scratch", "n", "eager_ns", "graph_ns", "speedup", "eager_peak", "graph_reserved"
    );
    bench(
        StatisticsAdaptor::new(CudaAsyncMemoryResource::new()?),
        &host,
        reps,
    )?;
    let pool = PoolMemoryResource::new(
        CudaMemoryResource::new(),
        PoolOptions::default().initial_pool_size(64 << 20),
    )?;
    bench(StatisticsAdaptor::new(pool), &host, reps)?;
    Ok(())
}

fn main() {
    if !rmm::device::is_available() {
        eprintln!("capture bench: no usable GPU here; nothing measured (run it on the GPU machine)");
        return;
    }
    if let Err(e) = run() {
        eprintln!("capture bench failed: {e}");
        std::process::exit(1);
    }
}
