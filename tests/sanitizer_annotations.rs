//! compute-sanitizer's memcheck sees a write one element past the end of a
//! pool, fixed-size, binning or arena allocation (also when one is nested
//! in another, as binning over a pool), because those resources
//! annotate their memory with NVTX's memory API (`rmm::nvtx`); without the
//! annotations (`RMM_NVTX=0`) the same write lands inside the resource's
//! upstream chunk and goes unreported.
//!
//! The test runs this binary's ignored probe under `compute-sanitizer
//! --tool memcheck` once per resource with annotations and once without,
//! and reads memcheck's reports. The probe allocates 1000 bytes (250
//! `u32`; every resource hands out a larger block), fills the 250 elements
//! (in bounds: no report), then fills 251.

use std::process::Command;

use rmm::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CudaMemoryResource, FixedSizeMemoryResource,
    FixedSizeOptions, MemoryResource, PoolMemoryResource, PoolOptions, SharedResource,
};
use rmm::CudaStream;
use rmm_suite::fill::fill_raw;

/// The variable naming the probe's resource.
const PROBE_VAR: &str = "RMM_NVTX_PROBE";
/// The four sub-allocators over `cuMemAlloc`, and two nested the way RMM
/// builds them (binning's bins over a pool, a pool over a pool): the inner
/// one's chunk lies in the outer one's heap.
const KINDS: [&str; 6] = [
    "pool",
    "fixed_size",
    "binning",
    "arena",
    "binning_over_pool",
    "pool_over_pool",
];
const BYTES: usize = 1000;

fn resource(kind: &str) -> SharedResource {
    let cuda = CudaMemoryResource::new();
    let pool = || {
        PoolMemoryResource::new(
            CudaMemoryResource::new(),
            PoolOptions::default().initial_pool_size(1 << 26),
        )
    };
    match kind {
        "binning_over_pool" => {
            SharedResource::new(BinningMemoryResource::with_fixed_bins(pool().unwrap(), 10, 16).unwrap())
        }
        "pool_over_cuda_async" => SharedResource::new(
            PoolMemoryResource::new(
                rmm::mr::CudaAsyncMemoryResource::new().unwrap(),
                PoolOptions::default().initial_pool_size(1 << 24),
            )
            .unwrap(),
        ),
        "pool_over_pool" => SharedResource::new(
            PoolMemoryResource::new(pool().unwrap(), PoolOptions::default().initial_pool_size(1 << 24))
                .unwrap(),
        ),
        "pool" => SharedResource::new(
            PoolMemoryResource::new(cuda, PoolOptions::default().initial_pool_size(1 << 24)).unwrap(),
        ),
        "fixed_size" => SharedResource::new(
            FixedSizeMemoryResource::new(cuda, FixedSizeOptions::default().block_size(4096)).unwrap(),
        ),
        "binning" => SharedResource::new(BinningMemoryResource::with_fixed_bins(cuda, 10, 16).unwrap()),
        "arena" => SharedResource::new(
            ArenaMemoryResource::new(cuda, ArenaOptions::default().arena_size(64 << 20)).unwrap(),
        ),
        other => panic!("unknown probe resource {other}"),
    }
}

/// Run by the test below under compute-sanitizer, one resource per process
/// (memcheck stops the context at the first invalid access).
#[test]
#[ignore = "a probe: compute_sanitizer_sees_writes_past_suballocations runs it under compute-sanitizer"]
fn probe_write_past_the_end() {
    let Ok(kind) = std::env::var(PROBE_VAR) else {
        eprintln!("{PROBE_VAR} names no resource; nothing to do");
        return;
    };
    let mr = resource(&kind);
    let s = CudaStream::new().unwrap();
    let p = mr.allocate(BYTES, 256, s.view()).unwrap();
    println!(
        "RMM-PROBE {kind} allocation {:#x} end {:#x} annotations {}",
        p.addr(),
        p.addr() + BYTES as u64,
        rmm::nvtx::memory_annotations_active()
    );
    // SAFETY: 250 u32 are the allocation's 1000 bytes.
    unsafe { fill_raw::<u32>(p, BYTES / 4, 7, s.view()).unwrap() };
    s.synchronize().unwrap();
    println!("RMM-PROBE in bounds done");
    // The bug under test: one element past the end, inside the resource's block.
    // SAFETY: not safe on purpose; the block behind the allocation is at
    // least 1024 bytes, so the write hits memory the resource owns.
    unsafe { fill_raw::<u32>(p, BYTES / 4 + 1, 7, s.view()).unwrap() };
    let _ = s.synchronize();
    println!("RMM-PROBE past the end done");
}

fn sanitizer() -> Option<String> {
    if let Ok(p) = std::env::var("COMPUTE_SANITIZER") {
        return Some(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("compute-sanitizer"))
            .find(|c| c.is_file())
    });
    on_path
        .or_else(|| {
            Some("/usr/local/cuda/bin/compute-sanitizer".into()).filter(|p: &std::path::PathBuf| p.is_file())
        })
        .map(|p| p.to_string_lossy().into_owned())
}

struct Report {
    errors: usize,
    output: String,
}

/// Sub-allocators whose memory the tool takes no heap in (a driver pool's):
/// not annotated, so the write goes unreported, and no NVTX call is refused.
const UNANNOTATED: [&str; 1] = ["pool_over_cuda_async"];

fn memcheck_probe(sanitizer: &str, kind: &str, annotations: bool) -> Report {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(sanitizer);
    cmd.args(["--tool", "memcheck", "--report-api-errors", "no"])
        .arg(&exe)
        .args([
            "--exact",
            "probe_write_past_the_end",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(PROBE_VAR, kind);
    if !annotations {
        cmd.env(rmm::env::NVTX, "0");
    }
    let out = cmd.output().expect("compute-sanitizer runs");
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let errors = output
        .lines()
        .find_map(|l| l.split("ERROR SUMMARY:").nth(1))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no ERROR SUMMARY in memcheck's output for {kind}:\n{output}"));
    assert!(
        !output.contains("Warning: Call to nvtx"),
        "{kind}: the tool refused an annotation:\n{output}"
    );
    Report { errors, output }
}

/// The probe's first line (the test harness may print its name before it
/// on the same line).
fn probe_line<'a>(output: &'a str, kind: &str) -> &'a str {
    let start = format!("RMM-PROBE {kind} allocation");
    output
        .lines()
        .find_map(|l| l.find(&start).map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("the probe for {kind} did not start:\n{output}"))
}

#[test]
fn compute_sanitizer_sees_writes_past_suballocations() {
    rmm_testing::require_gpu!();
    if std::env::var_os("NVTX_INJECTION64_PATH").is_some()
        || std::env::var_os("CUDA_INJECTION64_PATH").is_some()
    {
        rmm_testing::report_skip(
            "compute_sanitizer_sees_writes_past_suballocations",
            "already under a CUDA tool; it runs compute-sanitizer itself",
        );
        return;
    }
    let Some(sanitizer) = sanitizer() else {
        rmm_testing::report_skip(
            "compute_sanitizer_sees_writes_past_suballocations",
            "compute-sanitizer not found (set COMPUTE_SANITIZER or PATH)",
        );
        return;
    };
    let reports: Vec<(&str, Report, Report)> = std::thread::scope(|scope| {
        let handles: Vec<_> = KINDS
            .iter()
            .map(|&kind| {
                let sanitizer = &sanitizer;
                scope.spawn(move || {
                    (
                        kind,
                        memcheck_probe(sanitizer, kind, true),
                        memcheck_probe(sanitizer, kind, false),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for kind in UNANNOTATED {
        let r = memcheck_probe(&sanitizer, kind, true);
        assert!(
            r.output.contains("RMM-PROBE past the end done"),
            "{kind}:\n{}",
            r.output
        );
        assert_eq!(
            r.errors, 0,
            "{kind}: not annotated, nothing reported:\n{}",
            r.output
        );
    }
    for (kind, with, without) in &reports {
        let line = probe_line(&with.output, kind);
        assert!(
            line.ends_with("annotations true"),
            "{kind}: the tool took no annotations:\n{}",
            with.output
        );
        assert!(
            with.output.contains("RMM-PROBE in bounds done"),
            "{kind}:\n{}",
            with.output
        );
        let end = line.split_whitespace().nth(5).unwrap().to_string();
        assert_eq!(
            with.errors, 1,
            "{kind}: with annotations memcheck reports exactly the one write past the end:\n{}",
            with.output
        );
        assert!(
            with.output.contains("Invalid __global__ write of size 4"),
            "{kind}:\n{}",
            with.output
        );
        assert!(
            with.output.contains(&format!("Access to {end} is out of bounds")),
            "{kind}: the report names the first byte past the allocation ({end}):\n{}",
            with.output
        );
        assert!(probe_line(&without.output, kind).ends_with("annotations false"));
        assert!(
            without.output.contains("RMM-PROBE past the end done"),
            "{kind}:\n{}",
            without.output
        );
        assert_eq!(
            without.errors, 0,
            "{kind}: without annotations the write stays inside the resource's memory:\n{}",
            without.output
        );
        println!(
            "{kind}: memcheck errors with annotations {}, without {}",
            with.errors, without.errors
        );
    }
}
