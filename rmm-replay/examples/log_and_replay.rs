//! A logged run, replayed.
//!
//! ```sh
//! cargo run -p rmm-replay --example log_and_replay
//! ```
//!
//! Two threads allocate and free random sizes through a `LoggingAdaptor`,
//! which writes RMM's CSV event log; `rmm_replay` parses that log and
//! replays it, thread by thread in the logged order, against other
//! resources built by name (`rmm_replay::by_name`), reporting time, peak bytes,
//! failures and fragmentation at the peak. On a GPU the logged run uses
//! `cuMemAlloc` and the replays include the GPU pool and binning resources;
//! without a GPU the logged run and every replay use the simulated resource
//! (addresses only). `cargo test` runs this example too (its GPU half is
//! then counted as a skipped GPU test, or fails under `RMM_REQUIRE_GPU=1`).

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use rmm::mr::{CudaMemoryResource, LoggingAdaptor, MemoryResource, SimulatedMemoryResource};
use rmm::{CudaStreamView, DevicePtr, Error, Result};
use rmm_replay::by_name::{self, ByNameOptions};
use rmm_replay::{parse_log, replay};
use rmm_testing::SplitMix64;

fn main() -> Result<()> {
    run()
}

/// The whole example: log a run, then replay the log.
fn run() -> Result<()> {
    let path = std::env::temp_dir().join(format!("rmm-example-log-{}.csv", std::process::id()));
    let result = log_then_replay(&path);
    let _ = std::fs::remove_file(&path);
    result
}

fn log_then_replay(path: &Path) -> Result<()> {
    let gpu = rmm_testing::gpu_available!("example log_and_replay (GPU half)");
    let replay_on: &[&str] = if gpu {
        println!("log_and_replay: running on the GPU (logged run over cuMemAlloc)");
        logged_run(LoggingAdaptor::to_file(CudaMemoryResource::new(), path, false)?)?;
        &["pool", "binning", "arena", "simulated-pool"]
    } else {
        println!("log_and_replay: no GPU, running over the simulated resource (addresses only)");
        logged_run(LoggingAdaptor::to_file(
            SimulatedMemoryResource::new(1 << 34),
            path,
            false,
        )?)?;
        &["simulated-pool", "simulated-binning", "simulated-arena"]
    };

    let file = File::open(path).map_err(|e| Error::io(format!("cannot open {}", path.display()), &e))?;
    let events = parse_log(BufReader::new(file))?;
    println!("  {} events logged to {}", events.len(), path.display());
    for name in replay_on {
        let mr = by_name::resource(name, &ByNameOptions::default())?;
        let report = replay(&events, mr.inner());
        println!("  replayed on {name}:");
        for line in report.to_string().lines() {
            println!("    {line}");
        }
        assert_eq!(report.failed_allocations, 0, "{name}: the replay fits");
        assert_eq!(
            report.unmatched_frees, 0,
            "{name}: every free matches an allocation"
        );
    }
    Ok(())
}

/// Two threads, each keeping up to 16 random-sized blocks (256 B to 4 MiB)
/// live, through the logging adaptor; the log is flushed at the end.
fn logged_run<U: MemoryResource>(mr: LoggingAdaptor<U>) -> Result<()> {
    let stream = CudaStreamView::DEFAULT;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2u64)
            .map(|seed| {
                let mr = &mr;
                scope.spawn(move || -> Result<()> {
                    let mut rng = SplitMix64(seed + 1);
                    let mut live: Vec<(DevicePtr, usize)> = Vec::new();
                    for _ in 0..500 {
                        if live.len() < 16 && (live.is_empty() || rng.below(2) == 0) {
                            let bytes = rng.log_uniform(256, 4 << 20);
                            live.push((mr.allocate(bytes, 256, stream)?, bytes));
                        } else {
                            let (p, bytes) = live.swap_remove(rng.below(live.len()));
                            // SAFETY: `p` came from this resource with these
                            // arguments and is freed once.
                            unsafe { mr.deallocate(p, bytes, 256, stream) };
                        }
                    }
                    for (p, bytes) in live {
                        // SAFETY: as above.
                        unsafe { mr.deallocate(p, bytes, 256, stream) };
                    }
                    Ok(())
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().expect("worker thread panicked"))
    })?;
    mr.flush()
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example; a GPU failure fails the test.
    #[test]
    fn example_runs() {
        super::run().unwrap();
    }
}
