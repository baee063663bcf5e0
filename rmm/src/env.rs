//! Every environment variable the library reads at run time, read here and
//! nowhere else (the Python package reads them through this module too).
//!
//! | variable | default | effect |
//! |---|---|---|
//! | `RMM_LOG_FILE` | unset | the file a [`LoggingAdaptor`](crate::mr::LoggingAdaptor) made without a file name writes its CSV event log to (RMM's variable; Python's `enable_logging` and `LoggingResourceAdaptor` use it the same way) |
//! | `RMM_DEBUG_LOG_FILE` | unset: stderr | the file [`logger::init`](crate::logger::init) writes the debug log to |
//! | `RMM_DEBUG_LOG_LEVEL` | `info` | the debug log's level: `trace`, `debug`, `info`, `warn`, `error` or `off` |
//! | `RMM_NVTX` | on | `0`, `off` or `false`: no memory annotations for compute-sanitizer even under a tool that takes them ([`nvtx`](crate::nvtx)) |
//! | `NVTX_INJECTION64_PATH` | unset | set by a tool such as compute-sanitizer: the NVTX tool library the memory annotations go to |
//! | `RMM_LAZY_CONTEXTS` | unset | `1`: each device's primary context is made at its first use instead of every device's at the first use of any |
//! | `RMM_BIASED_LOCKS` | on | `0`, `off` or `false`: the allocators' per-stream locks are never biased to a thread (each lock then costs an atomic compare-exchange; for comparisons, and for systems whose `membarrier` misbehaves) |
//!
//! Each reader asks the environment when it is called; what reads it when
//! (once per process, or at each construction) is said at the reader. The
//! constants name every variable; [`log_file`] is public because a caller
//! that builds its own logging (the Python package's `enable_logging`)
//! resolves `RMM_LOG_FILE` the way [`LoggingAdaptor`](crate::mr::LoggingAdaptor) does.
//! The variables of the test suites are in the `rmm-testing` crate; the
//! README's "Environment variables" table lists both.
//!
//! ```
//! // Unset (as in an ordinary doc test), RMM_LOG_FILE names no file.
//! if std::env::var_os(rmm::env::LOG_FILE).is_none() {
//!     assert_eq!(rmm::env::log_file(), None);
//! }
//! ```
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;

/// `RMM_LOG_FILE`: the event log file of a [`LoggingAdaptor`](crate::mr::LoggingAdaptor)
/// made without one.
pub const LOG_FILE: &str = "RMM_LOG_FILE";
/// `RMM_DEBUG_LOG_FILE`: the debug log's file.
pub const DEBUG_LOG_FILE: &str = "RMM_DEBUG_LOG_FILE";
/// `RMM_DEBUG_LOG_LEVEL`: the debug log's level.
pub const DEBUG_LOG_LEVEL: &str = "RMM_DEBUG_LOG_LEVEL";
/// `RMM_NVTX`: `0`, `off` or `false` turns the memory annotations off.
pub const NVTX: &str = "RMM_NVTX";
/// `NVTX_INJECTION64_PATH`: the NVTX tool library (set by the tool).
pub const NVTX_INJECTION64_PATH: &str = "NVTX_INJECTION64_PATH";
/// `RMM_LAZY_CONTEXTS`: `1` makes each device's primary context at its first use.
pub const LAZY_CONTEXTS: &str = "RMM_LAZY_CONTEXTS";
/// `RMM_BIASED_LOCKS`: `0`, `off` or `false` keeps the per-stream locks unbiased.
pub const BIASED_LOCKS: &str = "RMM_BIASED_LOCKS";

/// The file `RMM_LOG_FILE` names; `None` when it is unset or empty. Read
/// at each call (each logging adaptor made without a file name).
pub fn log_file() -> Option<PathBuf> {
    std::env::var_os(LOG_FILE)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The file `RMM_DEBUG_LOG_FILE` names; `None` when it is unset (an empty
/// value is a file name the logger cannot create, and it says so).
pub(crate) fn debug_log_file() -> Option<PathBuf> {
    std::env::var_os(DEBUG_LOG_FILE).map(PathBuf::from)
}

/// The level name `RMM_DEBUG_LOG_LEVEL` holds, unparsed (the logger
/// parses it and names a bad one); `None` when unset.
pub(crate) fn debug_log_level() -> Option<String> {
    std::env::var(DEBUG_LOG_LEVEL).ok()
}

/// Whether `RMM_NVTX` turns the memory annotations off (`0`, `off` or
/// `false`, in any case). Read once, when the annotations first attach.
pub(crate) fn nvtx_disabled() -> bool {
    switched_off(NVTX)
}

/// Whether `RMM_BIASED_LOCKS` turns lock biasing off (`0`, `off` or
/// `false`, in any case). Read once, when a lock is first about to be
/// biased.
pub(crate) fn biased_locks_disabled() -> bool {
    switched_off(BIASED_LOCKS)
}

/// Whether the variable `name` is `0`, `off` or `false`, in any case.
fn switched_off(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "0" | "off" | "false"))
}

/// The tool library `NVTX_INJECTION64_PATH` names, when set.
pub(crate) fn nvtx_injection_path() -> Option<OsString> {
    std::env::var_os(NVTX_INJECTION64_PATH)
}

/// Whether `RMM_LAZY_CONTEXTS=1`: each device's primary context made at its
/// first use. Read once, at the driver's initialisation.
pub(crate) fn lazy_contexts() -> bool {
    matches!(std::env::var(LAZY_CONTEXTS).as_deref(), Ok("1"))
}
