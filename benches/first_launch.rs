//! The first kernel launch of a process: how long the first call of each
//! kernel family (fill, copy through the copy kernel, sequence, reduce,
//! scan, sort) takes in a fresh
//! process with the driver's compile cache off (`CUDA_CACHE_DISABLE=1`),
//! once with the image the crate picks (`RMM_KERNEL_IMAGE=auto`: the cubin
//! of the device's architecture where the build made one) and once forced
//! onto the PTX (`RMM_KERNEL_IMAGE=ptx`: the driver compiles the module).
//!
//! Each row is one child process (this program run with `--child FAMILY`):
//! it makes its context and buffers first (not timed), then times the first
//! call of the family up to its stream's synchronisation (module load, every
//! kernel's lookup, the launch), then a second call the same way.
//!
//! Prints CSV: `family,requested,loaded,first_ms,second_ms,process_ms` (the
//! last: the child's whole life, context creation included), and a summary
//! line with the slowest first call of each image. Benchmarks are not
//! tests: nothing here passes or fails on a timing. Without a GPU it says
//! so and exits 0 (1 with `RMM_REQUIRE_GPU=1`).
//!
//! Run: `cargo bench --bench first_launch` (or the built binary).

use std::process::{Command, ExitCode};
use std::time::Instant;

use rmm::exec_policy::ExecPolicy;
use rmm::mr::CudaMemoryResource;
use rmm::{CudaStream, DeviceUvector};
use rmm_suite::kernels::Kernels;
use rmm_suite::sort::{sort_keys, Order};
use rmm_suite::{containers, copy, reduce, scan, sequence};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const FAMILIES: [&str; 6] = ["fill", "copy", "sequence", "reduce", "scan", "sort"];
const IMAGES: [&str; 2] = ["auto", "ptx"];

/// One call of `family` over `n` elements, up to its stream's end.
fn call(
    family: &str,
    a: &mut DeviceUvector<u32>,
    b: &mut DeviceUvector<u32>,
    policy: &ExecPolicy,
) -> Res<()> {
    let s = policy.stream();
    match family {
        "fill" => containers::fill(a, 7u32, s)?,
        "copy" => {
            // SAFETY: both vectors are live, distinct and of `a.size_bytes()`
            // bytes, and stay allocated until the stream's synchronisation below.
            unsafe { copy::copy_bytes_kernel(b.data(), a.data(), a.size_bytes(), s)? }
        }
        "sequence" => sequence::sequence(a.as_span_mut(), 3u32, 5, policy)?,
        "reduce" => {
            reduce::sum(a.as_span(), policy)?;
        }
        "scan" => scan::exclusive_scan(a.as_span(), b.as_span_mut(), policy)?,
        "sort" => sort_keys(a.as_span_mut(), Order::Descending, policy)?,
        other => return Err(format!("unknown family {other}").into()),
    }
    s.synchronize()?;
    Ok(())
}

/// The child: times the first and the second call of `family`.
fn child(family: &str) -> Res<()> {
    let stream = CudaStream::new()?;
    let n = 1 << 16;
    let mr = CudaMemoryResource::new();
    let mut a = DeviceUvector::<u32>::with_resource(n, stream.view(), mr)?;
    let mut b = DeviceUvector::<u32>::with_resource(n, stream.view(), mr)?;
    let policy = ExecPolicy::new(stream.view(), mr);
    stream.synchronize()?;
    let t = Instant::now();
    call(family, &mut a, &mut b, &policy)?;
    let first = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    call(family, &mut a, &mut b, &policy)?;
    let second = t.elapsed().as_secs_f64() * 1e3;
    let loaded = Kernels::current()?.image;
    println!("RESULT {family} {loaded:?} {first:.2} {second:.3}");
    Ok(())
}

/// Runs one child and returns its `loaded first_ms second_ms process_ms`.
fn row(family: &str, image: &str) -> Res<(String, f64, f64, f64)> {
    let t = Instant::now();
    let out = Command::new(std::env::current_exe()?)
        .args(["--child", family])
        .env("CUDA_CACHE_DISABLE", "1")
        .env("RMM_KERNEL_IMAGE", image)
        .output()?;
    let process = t.elapsed().as_secs_f64() * 1e3;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .ok_or_else(|| {
            format!(
                "{family} ({image}): no result ({}); stderr: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })?;
    let f: Vec<&str> = line.split_whitespace().collect();
    Ok((f[1].to_string(), f[2].parse()?, f[3].parse()?, process))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        return match child(args.get(i + 1).map(String::as_str).unwrap_or("")) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("first_launch child: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if !rmm::device::is_available() {
        eprintln!("first_launch: skipped, no GPU");
        let required = std::env::var_os("RMM_REQUIRE_GPU").is_some_and(|v| v == "1");
        return if required {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    println!("family,requested,loaded,first_ms,second_ms,process_ms");
    let mut failed = false;
    for image in IMAGES {
        let mut slowest = 0f64;
        for family in FAMILIES {
            match row(family, image) {
                Ok((loaded, first, second, process)) => {
                    println!("{family},{image},{loaded},{first:.2},{second:.3},{process:.0}");
                    slowest = slowest.max(first);
                }
                Err(e) => {
                    eprintln!("first_launch: {e}");
                    failed = true;
                }
            }
        }
        println!("# slowest first call with RMM_KERNEL_IMAGE={image}: {slowest:.2} ms");
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
