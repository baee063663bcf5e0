//! Kernel benchmark: prints the CSV of `shared/anchors/KERNELS.md`
//! (`impl,kernel,params,seconds,throughput,unit`, impl `rmm-rs`) for the
//! rows fill/copy u32 n=2^28 and sort u32/u64/f32 n=2^20/2^24/2^28, plus
//! project-only rows (sort_pairs, other sort key types, reductions, scan,
//! sequence). Each row is the best of N repetitions timed with CUDA events
//! around one call, after one untimed warm-up call.
//!
//! Temporary storage comes from an `ExecPolicy` over a `PoolMemoryResource`
//! (over cuMemAlloc, 8 GiB initial), warmed up by the warm-up call, as
//! KERNELS.md asks; the data buffers come from a `CudaAsyncMemoryResource`.
//!
//! Without a GPU it says so on stderr and exits 0.
//!
//! Run: `cargo bench --bench kernels` (or the built binary on the GPU machine).
//! A filter argument keeps only the rows whose kernel name contains it
//! (`cargo bench --bench kernels -- scan`; the built binary takes it the
//! same way), for quick experiments on one kernel.

use rayon::prelude::*;
use rmm::exec_policy::ExecPolicy;
use rmm::launch::Event;
use rmm::mr::{CudaAsyncMemoryResource, CudaMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions};
use rmm::{CudaStream, CudaStreamView, DevicePtr, DeviceSpan, DeviceSpanMut};
use rmm_suite::sort::{sort_keys_copy, sort_pairs_copy, Order, RadixKey};
use rmm_suite::{copy, fill, reduce, scan, sequence};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

struct Timer<'s> {
    start: Event,
    stop: Event,
    stream: CudaStreamView<'s>,
}

impl<'s> Timer<'s> {
    fn new(stream: CudaStreamView<'s>) -> Res<Self> {
        Ok(Timer {
            start: Event::timing()?,
            stop: Event::timing()?,
            stream,
        })
    }

    /// Best seconds of `reps` timed calls after one warm-up call.
    fn best(&self, reps: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
        f()?;
        self.stream.synchronize()?;
        let mut best = f64::INFINITY;
        for _ in 0..reps {
            self.start.record(self.stream)?;
            f()?;
            self.stop.record(self.stream)?;
            self.stop.synchronize()?;
            let ms = self.stop.elapsed_ms_since(&self.start)? as f64;
            best = best.min(ms / 1e3);
        }
        Ok(best)
    }

    /// Unless the filter leaves `kernel` out: times `f` (best of 20) and
    /// prints its row as GB/s for `bytes` moved per call; says whether it ran.
    fn gb_row(&self, kernel: &str, params: &str, bytes: usize, f: impl FnMut() -> Res<()>) -> Res<bool> {
        if !wanted(kernel) {
            return Ok(false);
        }
        let sec = self.best(20, f)?;
        row(kernel, params, sec, bytes as f64 / sec / 1e9, "GB/s");
        Ok(true)
    }
}

/// Whether the rows of `kernel` run: no filter argument, or the kernel's
/// name contains it (arguments starting with `-`, such as cargo's `--bench`,
/// are not filters).
fn wanted(kernel: &str) -> bool {
    match std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        Some(filter) => kernel.contains(filter.as_str()),
        None => true,
    }
}

fn row(kernel: &str, params: &str, seconds: f64, throughput: f64, unit: &str) {
    println!("rmm-rs,{kernel},{params},{seconds:.6},{throughput:.2},{unit}");
}

/// A device buffer from the benchmark's resource.
struct Buf<'m> {
    ptr: DevicePtr,
    bytes: usize,
    mr: &'m CudaAsyncMemoryResource,
    stream: CudaStreamView<'m>,
}

impl<'m> Buf<'m> {
    fn new(mr: &'m CudaAsyncMemoryResource, bytes: usize, stream: CudaStreamView<'m>) -> Res<Self> {
        Ok(Buf {
            ptr: mr.allocate(bytes, 256, stream)?,
            bytes,
            mr,
            stream,
        })
    }
    fn upload<T: Copy>(mr: &'m CudaAsyncMemoryResource, data: &[T], stream: CudaStreamView<'m>) -> Res<Self> {
        let b = Buf::new(mr, std::mem::size_of_val(data), stream)?;
        // SAFETY: `b` holds the bytes; `data` outlives the copy (synchronised).
        unsafe {
            rmm::launch::memcpy_async(b.ptr, rmm::DevicePtr::new(data.as_ptr() as u64), b.bytes, stream)?
        };
        stream.synchronize()?;
        Ok(b)
    }
    fn download<T: Copy + Default>(&self, n: usize) -> Res<Vec<T>> {
        let mut v = vec![T::default(); n];
        // SAFETY: `v` holds `n` elements within the buffer; synchronised.
        unsafe {
            rmm::launch::memcpy_async(
                rmm::DevicePtr::new(v.as_mut_ptr() as u64),
                self.ptr,
                n * std::mem::size_of::<T>(),
                self.stream,
            )?
        };
        self.stream.synchronize()?;
        Ok(v)
    }
    fn span<T>(&self) -> DeviceSpan<'_, T> {
        // SAFETY: the buffer holds `bytes / size_of::<T>()` elements for the borrow.
        unsafe { DeviceSpan::from_raw_parts(self.ptr, self.bytes / std::mem::size_of::<T>()) }
    }
    fn span_mut<T>(&mut self) -> DeviceSpanMut<'_, T> {
        // SAFETY: as `span`, borrowed exclusively.
        unsafe { DeviceSpanMut::from_raw_parts(self.ptr, self.bytes / std::mem::size_of::<T>()) }
    }
}

impl Drop for Buf<'_> {
    fn drop(&mut self) {
        let _ = self.stream.synchronize();
        // SAFETY: allocated in `new` with these arguments; the stream is idle.
        unsafe { self.mr.deallocate(self.ptr, self.bytes, 256, self.stream) };
    }
}

/// One SplitMix64 step from `z`.
fn splitmix(z: u64) -> u64 {
    rmm_testing::SplitMix64(z).next()
}

fn random_u64(n: usize, seed: u64) -> Vec<u64> {
    (0..n)
        .into_par_iter()
        .map(|i| splitmix(seed ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D)))
        .collect()
}

fn normal_f32(n: usize, seed: u64) -> Vec<f32> {
    (0..n)
        .into_par_iter()
        .map(|i| {
            let a = splitmix(seed ^ (2 * i as u64));
            let b = splitmix(seed ^ (2 * i as u64 + 1));
            let u = ((a >> 11) as f64 / (1u64 << 53) as f64).max(1e-300);
            let v = (b >> 11) as f64 / (1u64 << 53) as f64;
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        })
        .collect()
}

trait BenchKey: RadixKey + Default + PartialOrd + std::fmt::Debug {
    const NAME: &'static str;
    fn keys(n: usize, seed: u64) -> Vec<Self>;
}
impl BenchKey for u32 {
    const NAME: &'static str = "u32";
    fn keys(n: usize, seed: u64) -> Vec<Self> {
        random_u64(n, seed).into_par_iter().map(|x| x as u32).collect()
    }
}
impl BenchKey for u64 {
    const NAME: &'static str = "u64";
    fn keys(n: usize, seed: u64) -> Vec<Self> {
        random_u64(n, seed)
    }
}
impl BenchKey for f32 {
    const NAME: &'static str = "f32";
    fn keys(n: usize, seed: u64) -> Vec<Self> {
        normal_f32(n, seed)
    }
}
impl BenchKey for i32 {
    const NAME: &'static str = "i32";
    fn keys(n: usize, seed: u64) -> Vec<Self> {
        random_u64(n, seed).into_par_iter().map(|x| x as i32).collect()
    }
}
impl BenchKey for f64 {
    const NAME: &'static str = "f64";
    fn keys(n: usize, seed: u64) -> Vec<Self> {
        normal_f32(n, seed).into_par_iter().map(|x| x as f64).collect()
    }
}

fn check_sorted<K: BenchKey>(out: &Buf<'_>, n: usize, what: &str) -> Res<()> {
    let v: Vec<K> = out.download(n)?;
    if let Some(i) = (1..n).find(|&i| v[i - 1] > v[i]) {
        return Err(format!("{what}: output not sorted at {i}: {:?} > {:?}", v[i - 1], v[i]).into());
    }
    Ok(())
}

fn bench_sort<K: BenchKey>(
    mr: &CudaAsyncMemoryResource,
    policy: &ExecPolicy,
    timer: &Timer,
    log_n: u32,
    pairs: bool,
) -> Res<()> {
    if !wanted(if pairs { "sort_pairs" } else { "sort" }) {
        return Ok(());
    }
    let n = 1usize << log_n;
    let s = policy.stream();
    let host = K::keys(n, 42 + log_n as u64);
    let keys = Buf::upload(mr, &host, s)?;
    drop(host);
    let mut out = Buf::new(mr, n * std::mem::size_of::<K>(), s)?;
    let params = format!("{} n=2^{log_n}", K::NAME);
    if pairs {
        let vals_host: Vec<u32> = (0..n as u32).collect();
        let vals = Buf::upload(mr, &vals_host, s)?;
        let mut vals_out = Buf::new(mr, n * 4, s)?;
        let sec = timer.best(5, || {
            sort_pairs_copy::<K>(
                keys.span(),
                vals.span(),
                out.span_mut(),
                vals_out.span_mut(),
                Order::Ascending,
                policy,
            )?;
            Ok(())
        })?;
        check_sorted::<K>(&out, n, &params)?;
        row("sort_pairs", &params, sec, n as f64 / sec / 1e9, "Gkeys/s");
    } else {
        let sec = timer.best(5, || {
            sort_keys_copy::<K>(keys.span(), out.span_mut(), Order::Ascending, policy)?;
            Ok(())
        })?;
        check_sorted::<K>(&out, n, &params)?;
        row("sort", &params, sec, n as f64 / sec / 1e9, "Gkeys/s");
    }
    Ok(())
}

fn run() -> Res<()> {
    let s = CudaStream::non_blocking()?;
    let stream = s.view();
    let mr = CudaAsyncMemoryResource::new()?;
    let pool = PoolMemoryResource::new(
        CudaMemoryResource::new(),
        PoolOptions::default().initial_pool_size(8 << 30),
    )?;
    let policy = ExecPolicy::new(stream, pool);
    let timer = Timer::new(stream)?;
    println!("{}", rmm_tools::report::csv::kernel_header());

    let n: usize = 1 << 28;
    {
        let a = Buf::new(&mr, n * 4, stream)?;
        let mut b = Buf::new(&mr, n * 4, stream)?;
        // The input of every later row, whichever rows the filter keeps.
        // SAFETY: `a` holds `n` u32.
        unsafe { fill::fill_raw::<u32>(a.ptr, n, 7, stream)? };
        timer.gb_row("fill", "u32 n=2^28", n * 4, || {
            // SAFETY: `a` holds `n` u32.
            unsafe { fill::fill_raw::<u32>(a.ptr, n, 7, stream)? };
            Ok(())
        })?;
        timer.gb_row("copy", "u32 n=2^28", 2 * n * 4, || {
            // SAFETY: `a` and `b` hold `n` u32 each and are disjoint.
            unsafe { copy::copy_raw::<u32>(b.ptr, a.ptr, n, stream)? };
            Ok(())
        })?;
        // Project-only rows over the same buffers: the Rust copy kernel
        // beside the driver's copy (the default above).
        timer.gb_row("copy_kernel", "u32 n=2^28", 2 * n * 4, || {
            // SAFETY: as above.
            unsafe { copy::copy_bytes_kernel(b.ptr, a.ptr, n * 4, stream)? };
            Ok(())
        })?;
        timer.gb_row("sequence", "u32 n=2^28", n * 4, || {
            Ok(sequence::sequence::<u32>(b.span_mut(), 0, 1, &policy)?)
        })?;
        // The anchor rows: the result stays on the device, as CuPy's
        // `sum()` and `max()` leave it; then the host-value API (a copy to
        // the host and a stream synchronisation more), project-only.
        let mut out = Buf::new(&mr, 256, stream)?;
        if timer.gb_row("reduce_sum", "u32 n=2^28", n * 4, || {
            Ok(reduce::sum_into::<u32>(a.span(), out.span_mut(), &policy)?)
        })? {
            let got: Vec<u32> = out.download(1)?;
            if got[0] != 7u32.wrapping_mul(n as u32) {
                return Err(format!(
                    "reduce_sum: {} instead of {}",
                    got[0],
                    7u32.wrapping_mul(n as u32)
                )
                .into());
            }
        }
        timer.gb_row("reduce_max", "f32 n=2^28", n * 4, || {
            Ok(reduce::max_into::<f32>(a.span(), out.span_mut(), &policy)?)
        })?;
        timer.gb_row("reduce_sum_host", "u32 n=2^28", n * 4, || {
            reduce::sum::<u32>(a.span(), &policy)?;
            Ok(())
        })?;
        timer.gb_row("reduce_max_host", "f32 n=2^28", n * 4, || {
            reduce::max::<f32>(a.span(), &policy)?;
            Ok(())
        })?;
        if timer.gb_row("exclusive_scan", "u32 n=2^28", 2 * n * 4, || {
            Ok(scan::exclusive_scan::<u32>(a.span(), b.span_mut(), &policy)?)
        })? {
            let got: Vec<u32> = b.download(5)?;
            if got != [0, 7, 14, 21, 28] {
                return Err(format!("exclusive_scan of sevens gave {got:?}").into());
            }
        }
    }
    {
        let m = n / 2;
        let a = Buf::new(&mr, m * 8, stream)?;
        let mut b = Buf::new(&mr, m * 8, stream)?;
        // SAFETY: `a` holds `m` u64.
        unsafe { fill::fill_raw::<u64>(a.ptr, m, 7, stream)? };
        if timer.gb_row("exclusive_scan", "u64 n=2^27", 2 * m * 8, || {
            Ok(scan::exclusive_scan::<u64>(a.span(), b.span_mut(), &policy)?)
        })? {
            let got: Vec<u64> = b.download(4)?;
            if got != [0, 7, 14, 21] {
                return Err(format!("exclusive_scan of u64 sevens gave {got:?}").into());
            }
        }
    }

    for log_n in [20, 24, 28] {
        bench_sort::<u32>(&mr, &policy, &timer, log_n, false)?;
    }
    for log_n in [20, 24, 28] {
        bench_sort::<u64>(&mr, &policy, &timer, log_n, false)?;
    }
    for log_n in [20, 24, 28] {
        bench_sort::<f32>(&mr, &policy, &timer, log_n, false)?;
    }
    // Project-only sort rows.
    bench_sort::<i32>(&mr, &policy, &timer, 28, false)?;
    bench_sort::<f64>(&mr, &policy, &timer, 26, false)?;
    for log_n in [24, 28] {
        bench_sort::<u32>(&mr, &policy, &timer, log_n, true)?;
    }
    bench_sort::<u64>(&mr, &policy, &timer, 26, true)?;
    Ok(())
}

fn main() {
    if !rmm::device::is_available() {
        eprintln!("kernels bench: no usable GPU here; nothing measured (run it on the GPU machine)");
        return;
    }
    if let Err(e) = run() {
        eprintln!("kernels bench failed: {e}");
        std::process::exit(1);
    }
}
