//! `rmm-replay`: replays a memory-event log (written by `LoggingAdaptor` or
//! RMM's `logging_resource_adaptor`) against one or more resources and
//! reports time, peak bytes, failures and fragmentation at the peak.
//!
//! ```text
//! rmm-replay --file LOG.csv [--resource simulated,cuda,...] [--size GiB] [--snapshot SNAPSHOT.json] [--verbose]
//! ```
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::BufReader;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};
use rmm_replay::by_name::{self, known_names, ByNameOptions};
use rmm_replay::{parse_log, replay, replay_from_snapshot};

/// Replays a memory-event log (Thread,Time,Action,Pointer,Size,Stream, as
/// RMM's logging adaptor or ours writes it) with one thread per logged
/// thread, in the logged order, and reports time, peak bytes, failures and
/// fragmentation at the peak.
#[derive(Parser, Debug)]
#[command(name = "rmm-replay", version)]
struct Args {
    /// The memory-event log.
    #[arg(short, long, value_name = "PATH")]
    file: String,
    /// Resources to replay against, comma separated (see the list below).
    #[arg(
        short,
        long,
        value_name = "NAME[,NAME...]",
        value_delimiter = ',',
        default_value = "simulated",
        long_help = resource_help()
    )]
    resource: Vec<String>,
    /// Size of the simulated device in GiB.
    #[arg(short, long, value_name = "GiB", default_value_t = 80.0, value_parser = positive_gib)]
    size: f64,
    /// Start from this snapshot (`rmm::mr::snapshot` JSON, docs/snapshots.md):
    /// its live allocations are made before the log's events.
    #[arg(long, value_name = "PATH")]
    snapshot: Option<String>,
    /// Debug log on stderr (RMM_DEBUG_LOG_FILE / RMM_DEBUG_LOG_LEVEL otherwise).
    #[arg(short, long)]
    verbose: bool,
}

/// The `--resource` help with the factory's names.
fn resource_help() -> String {
    format!(
        "Resources to replay against, comma separated. Known: {}",
        known_names()
    )
}

/// A positive, finite number of GiB.
fn positive_gib(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|g| g.is_finite() && *g > 0.0)
        .ok_or_else(|| format!("{text:?} is not a positive number of GiB"))
}

fn main() -> ExitCode {
    let mut args = Args::parse();
    args.resource = args
        .resource
        .iter()
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
        .collect();
    if args.resource.is_empty() {
        Args::command()
            .error(
                ErrorKind::InvalidValue,
                format!("--resource needs a name: {}", known_names()),
            )
            .exit();
    }
    let logger = if args.verbose {
        rmm::logger::init_with(log::LevelFilter::Debug, None)
    } else {
        rmm::logger::init()
    };
    if let Err(e) = logger {
        eprintln!("rmm-replay: {e}");
    }
    let events = match File::open(&args.file)
        .map_err(|e| format!("cannot open {}: {e}", args.file))
        .and_then(|f| parse_log(BufReader::new(f)).map_err(|e| format!("{}: {e}", args.file)))
    {
        Ok(ev) => ev,
        Err(e) => {
            eprintln!("rmm-replay: {e}");
            return ExitCode::FAILURE;
        }
    };
    let snapshot = match args.snapshot.as_deref().map(|path| {
        std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {path}: {e}"))
            .and_then(|t| rmm::mr::Snapshot::from_json(&t).map_err(|e| format!("{path}: {e}")))
    }) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            eprintln!("rmm-replay: {e}");
            return ExitCode::FAILURE;
        }
    };
    let size = (args.size * (1u64 << 30) as f64) as usize;
    let mut status = ExitCode::SUCCESS;
    for name in &args.resource {
        println!("== {} on {name}", args.file);
        match by_name::resource(name, &ByNameOptions::default().simulated_size(size)) {
            Ok(mr) => match &snapshot {
                Some(snap) => println!("{}\n", replay_from_snapshot(snap, &events, &mr)),
                None => println!("{}\n", replay(&events, &mr)),
            },
            Err(e) => {
                eprintln!("rmm-replay: {name}: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}
