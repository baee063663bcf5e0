//! The crate's debug logger (RMM's `rmm::default_logger()`).
//!
//! `rmm` reports through the [`log`] facade: failures inside resources and
//! adaptors at `error`, pool growth and similar at `debug`, per-call detail
//! at `trace`. Any `log` backend shows them; [`init`] installs a small one
//! of the crate's own that writes RMM-style lines
//!
//! ```text
//! [     3][14:02:07:123456][error ] LimitingAdaptor: exceeded memory limit ...
//! ```
//!
//! (`[thread][time][level] message`; thread is the small per-thread id of
//! [`thread_id`], time is UTC) to the file named by `RMM_DEBUG_LOG_FILE`
//! when set, else to stderr, at the level named by `RMM_DEBUG_LOG_LEVEL`
//! (`trace`, `debug`, `info`, `warn`, `error`, `off`; default `info`; both
//! read through [`crate::env`](mod@crate::env)).
//!
//! ```
//! rmm::logger::init_with(log::LevelFilter::Warn, None)?;
//! log::warn!("visible on stderr");
//! // A process installs at most one logger; a second attempt is an error.
//! assert!(rmm::logger::init().is_err());
//! # Ok::<(), rmm::Error>(())
//! ```
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use log::{LevelFilter, Log, Metadata, Record};

use crate::env;
use crate::error::{Error, Result};

/// A small, stable integer naming the calling thread (1 for the first thread
/// that asks, 2 for the next, ...). Used in the debug log and in the
/// [`LoggingAdaptor`](crate::mr::LoggingAdaptor)'s `Thread` column.
pub fn thread_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    ID.with(|id| *id)
}

/// The UTC time of day of `t` as `HH:MM:SS` plus `sep` and microseconds
/// (`%H:%M:%S.%f` with `sep = '.'`).
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_micros(((13 * 60 + 5) * 60 + 9) * 1_000_000 + 42);
/// assert_eq!(rmm::logger::format_time(t, '.'), "13:05:09.000042");
/// ```
pub fn format_time(t: SystemTime, sep: char) -> String {
    let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs() % 86_400;
    format!(
        "{:02}:{:02}:{:02}{sep}{:06}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        since.subsec_micros()
    )
}

/// Parses a level name (`trace`, `debug`, `info`, `warn`/`warning`,
/// `error`/`err`, `critical`, `off`; any case).
///
/// ```
/// use log::LevelFilter;
/// assert_eq!(rmm::logger::parse_level(" Debug "), Some(LevelFilter::Debug));
/// assert_eq!(rmm::logger::parse_level("loud"), None);
/// ```
pub fn parse_level(name: &str) -> Option<LevelFilter> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "trace" => LevelFilter::Trace,
        "debug" => LevelFilter::Debug,
        "info" => LevelFilter::Info,
        "warn" | "warning" => LevelFilter::Warn,
        "error" | "err" | "critical" => LevelFilter::Error,
        "off" => LevelFilter::Off,
        _ => return None,
    })
}

/// One debug log line (without the newline).
fn format_line(
    thread: u64,
    time: SystemTime,
    level: log::Level,
    message: &std::fmt::Arguments<'_>,
) -> String {
    let level = level.as_str().to_ascii_lowercase();
    format!("[{thread:>6}][{}][{level:<6}] {message}", format_time(time, ':'))
}

struct DebugLogger {
    sink: Mutex<Box<dyn Write + Send>>,
}

impl Log for DebugLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let mut line = format_line(thread_id(), SystemTime::now(), record.level(), record.args());
        line.push('\n');
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        // A logger has nowhere to report its own failure: drop the line.
        let _ = sink.write_all(line.as_bytes()).and_then(|()| sink.flush());
    }

    fn flush(&self) {
        let _ = self.sink.lock().unwrap_or_else(|e| e.into_inner()).flush();
    }
}

/// Installs the debug logger as configured by `RMM_DEBUG_LOG_FILE` and
/// `RMM_DEBUG_LOG_LEVEL` (see the module docs).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown level name, [`Error::Io`]
/// when the file cannot be created, [`Error::Logic`] when a logger is
/// already installed.
pub fn init() -> Result<()> {
    let level = match env::debug_log_level() {
        Some(name) => parse_level(&name).ok_or_else(|| {
            Error::InvalidArgument(format!("{}={name:?} is not a log level", env::DEBUG_LOG_LEVEL))
        })?,
        None => LevelFilter::Info,
    };
    init_with(level, env::debug_log_file().as_deref())
}

/// Installs the debug logger at `level`, writing to `file` (truncated) or,
/// for `None`, to stderr.
///
/// # Errors
/// [`Error::Io`] when the file cannot be created; [`Error::Logic`] when a
/// logger is already installed.
pub fn init_with(level: LevelFilter, file: Option<&Path>) -> Result<()> {
    let sink: Box<dyn Write + Send> = match file {
        Some(path) => Box::new(
            File::create(path)
                .map_err(|e| Error::io(format!("cannot create debug log file {}", path.display()), &e))?,
        ),
        None => Box::new(io::stderr()),
    };
    // The logger lives for the rest of the process, as `log` requires.
    let logger: &'static DebugLogger = Box::leak(Box::new(DebugLogger {
        sink: Mutex::new(sink),
    }));
    log::set_logger(logger).map_err(|e| Error::Logic(format!("cannot install the rmm debug logger: {e}")))?;
    log::set_max_level(level);
    Ok(())
}

/// Changes the level of whatever logger is installed.
pub fn set_level(level: LevelFilter) {
    log::set_max_level(level);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn line_format() {
        let t = UNIX_EPOCH + Duration::from_micros(86_400_000_000 * 3 + 3_723_000_007);
        let line = format_line(7, t, log::Level::Warn, &format_args!("hello {}", 5));
        assert_eq!(line, "[     7][01:02:03:000007][warn  ] hello 5");
    }

    #[test]
    fn thread_ids_are_stable_and_distinct() {
        let here = thread_id();
        assert_eq!(here, thread_id());
        let there = std::thread::spawn(thread_id).join().unwrap();
        assert_ne!(here, there);
    }

    #[test]
    fn levels() {
        assert_eq!(parse_level("TRACE"), Some(LevelFilter::Trace));
        assert_eq!(parse_level("warning"), Some(LevelFilter::Warn));
        assert_eq!(parse_level("off"), Some(LevelFilter::Off));
        assert_eq!(parse_level(""), None);
    }
}
