//! Skipping tests that need a GPU.
//!
//! A GPU test starts with [`require_gpu!`](crate::require_gpu). Without a
//! GPU it prints `RMM-SKIP: <test>` to stderr and returns early, so the test
//! counts as skipped (the bundle runner counts those lines); with the
//! environment variable `RMM_REQUIRE_GPU=1` it fails instead, so a run on a
//! GPU machine can never pass by skipping. Every skip also appends a line to
//! the `RMM_SKIP_LOG` file when that is set (`scripts/test.sh` counts them:
//! the test harness hides a passing test's output, so a skip would otherwise
//! read as a pass).
#![forbid(unsafe_code)]

use crate::env;

/// The marker printed for a skipped test.
pub const SKIP_MARKER: &str = "RMM-SKIP:";

/// Reports a skipped test: the marker on stderr and a line in the
/// `RMM_SKIP_LOG` file when that is set.
///
/// ```no_run
/// rmm_testing::report_skip("a_test", "its program is not built");
/// ```
pub fn report_skip(test: &str, why: &str) {
    eprintln!("{SKIP_MARKER} {test} ({why})");
    if let Some(path) = env::skip_log() {
        use std::io::Write;
        // One short append per skip: lines from parallel tests stay whole.
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(mut f) => {
                let _ = f.write_all(format!("{test} ({why})\n").as_bytes());
            }
            Err(e) => eprintln!("rmm: could not append to {}: {e}", path.to_string_lossy()),
        }
    }
}

/// True when `device_count` is at least one. Otherwise prints the skip
/// marker for `test` (with `why_none`'s reason, or "no device") and returns
/// false, or panics when `RMM_REQUIRE_GPU=1`. [`gpu_available!`](crate::gpu_available)
/// calls it with what `rmm::device` reports.
///
/// ```
/// assert!(rmm_testing::gpu_available_or_skip("a_test", 1, || None));
/// ```
///
/// # Panics
/// When `device_count` is 0 and `RMM_REQUIRE_GPU=1`.
pub fn gpu_available_or_skip(
    test: &str,
    device_count: usize,
    why_none: impl FnOnce() -> Option<String>,
) -> bool {
    if device_count > 0 {
        return true;
    }
    let why = why_none().unwrap_or_else(|| "no device".into());
    if env::require_gpu() {
        panic!("{test}: no usable GPU ({why}) and {}=1", env::REQUIRE_GPU);
    }
    report_skip(test, &format!("no GPU: {why}"));
    false
}

/// True when `have >= n` GPUs are usable. Otherwise prints the skip marker
/// and returns false, or panics when `RMM_REQUIRE_GPUS` is `n` or more.
///
/// ```
/// assert!(rmm_testing::gpus_available_or_skip(2, "a_test", 2));
/// ```
///
/// # Panics
/// When `have < n` and `RMM_REQUIRE_GPUS >= n`.
pub fn gpus_available_or_skip(n: usize, test: &str, have: usize) -> bool {
    if have >= n {
        return true;
    }
    let required = env::require_gpus();
    if required >= n {
        panic!(
            "{test}: needs {n} GPUs, found {have}, and {}={required}",
            env::REQUIRE_GPUS
        );
    }
    report_skip(test, &format!("needs {n} GPUs, found {have}"));
    false
}

/// True when a GPU is usable (asking `::rmm::device`); otherwise reports
/// the skip of the test named by the argument and is false (see
/// [`gpu_available_or_skip`]).
///
/// ```no_run
/// if rmm_testing::gpu_available!("example (GPU half)") {
///     // ... GPU work ...
/// }
/// ```
#[macro_export]
macro_rules! gpu_available {
    ($name:expr) => {
        $crate::gpu_available_or_skip($name, ::rmm::device::device_count(), || {
            ::rmm::device::init_driver().err().map(|e| e.to_string())
        })
    };
}

/// Returns from the enclosing test unless a GPU is usable (see the module
/// docs); the test's name is its module path unless given.
///
/// ```
/// fn fills_on_the_gpu() {
///     rmm_testing::require_gpu!();
///     // ... GPU work ...
/// }
/// # fills_on_the_gpu();
/// ```
#[macro_export]
macro_rules! require_gpu {
    () => {
        if !$crate::gpu_available!(module_path!()) {
            return;
        }
    };
    ($name:expr) => {
        if !$crate::gpu_available!($name) {
            return;
        }
    };
}

/// Returns from the enclosing test unless `n` GPUs are usable; see
/// [`gpus_available_or_skip`].
///
/// ```
/// fn copies_between_two_gpus() {
///     rmm_testing::require_gpus!(2);
///     // ... work on two GPUs ...
/// }
/// # copies_between_two_gpus();
/// ```
#[macro_export]
macro_rules! require_gpus {
    ($n:expr) => {
        if !$crate::gpus_available_or_skip($n, module_path!(), ::rmm::device::device_count()) {
            return;
        }
    };
}
