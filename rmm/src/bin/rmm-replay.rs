//! `rmm-replay`: replays a memory-event log (written by `LoggingAdaptor` or
//! RMM's `logging_resource_adaptor`) against one or more resources and
//! reports time, peak bytes, failures and fragmentation at the peak.
//!
//! ```text
//! rmm-replay --file LOG.csv [--resource simulated,cuda,...] [--size GiB] [--verbose]
//! ```

use std::fs::File;
use std::io::BufReader;
use std::process::ExitCode;

use rmm::replay::{make_resource, parse_log, replay, RESOURCE_NAMES};

const USAGE: &str =
    "usage: rmm-replay -f|--file LOG.csv [-r|--resource NAME[,NAME...]] [-s|--size GiB] [-v|--verbose]

Replays a memory-event log (Thread,Time,Action,Pointer,Size,Stream) with one
thread per logged thread, in the logged order.

  -f, --file PATH      the log (required)
  -r, --resource LIST  resources to replay against, comma separated (default: simulated)
  -s, --size GiB       size of the simulated device (default: 80)
  -v, --verbose        debug log on stderr (RMM_DEBUG_LOG_FILE / RMM_DEBUG_LOG_LEVEL otherwise)
  -h, --help           this text";

struct Args {
    file: String,
    resources: Vec<String>,
    size_gib: f64,
    verbose: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut file = None;
    let mut resources = vec!["simulated".to_string()];
    let mut size_gib = 80.0;
    let mut verbose = false;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "-f" | "--file" => file = Some(value()?),
            "-r" | "--resource" => {
                resources = value()?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect();
            }
            "-s" | "--size" => {
                let v = value()?;
                size_gib = v
                    .parse()
                    .ok()
                    .filter(|g: &f64| g.is_finite() && *g > 0.0)
                    .ok_or_else(|| format!("--size {v:?} is not a positive number of GiB"))?;
            }
            "-v" | "--verbose" => verbose = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let file = file.ok_or("--file is required")?;
    if resources.is_empty() {
        return Err(format!("--resource needs a name: {}", RESOURCE_NAMES.join(", ")));
    }
    Ok(Some(Args {
        file,
        resources,
        size_gib,
        verbose,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("rmm-replay: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
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
    let size = (args.size_gib * (1u64 << 30) as f64) as usize;
    let mut status = ExitCode::SUCCESS;
    for name in &args.resources {
        println!("== {} on {name}", args.file);
        match make_resource(name, size) {
            Ok(mr) => println!("{}\n", replay(&events, &mr)),
            Err(e) => {
                eprintln!("rmm-replay: {name}: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    status
}
