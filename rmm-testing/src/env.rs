//! The test-only environment variables: each one's name and reader. The
//! library's own variables are in `rmm::env`; the README's "Environment
//! variables" table lists both, these marked test-only.
//!
//! | variable | default | effect |
//! |---|---|---|
//! | `RMM_REQUIRE_GPU` | unset | `1`: a GPU test without a GPU fails instead of skipping |
//! | `RMM_REQUIRE_GPUS` | 0 | `n`: a test that needs up to `n` GPUs fails instead of skipping when fewer are present |
//! | `RMM_SKIP_LOG` | unset | a file to which every skipped test appends one line (`scripts/test.sh` counts them) |
//! | `RMM_EU_STACK` | unset | elfutils' `eu-stack`, with which the [`Watchdog`](crate::Watchdog) dumps every thread's stack |
//! | `RMM_TEST_MAX_LOG2` | unset | `k`: the kernel tests skip sizes above `2^k` (for runs under compute-sanitizer) |
//! | `RMM_SOAK_SECONDS` | 60 | how long `rmm/tests` soak test runs |
//! | `RMM_SOAK_THREADS` | 32 | how many threads the soak test runs |
//! | `RMM_FAULT_OPS` | 10^6 (release), 10^5 (debug) | operations per stack of the fault-injection model tests (`rmm/tests/faults_model/`) |
//!
//! ```
//! // Unset (as in an ordinary `cargo test`), each reads as its default.
//! if std::env::var_os(rmm_testing::env::SOAK_SECONDS).is_none() {
//!     assert_eq!(rmm_testing::env::soak_seconds(), 60);
//! }
//! ```
#![forbid(unsafe_code)]

use std::ffi::OsString;

/// `RMM_REQUIRE_GPU`: `1` turns a GPU test's skip into a failure.
pub const REQUIRE_GPU: &str = "RMM_REQUIRE_GPU";
/// `RMM_REQUIRE_GPUS`: the number of GPUs a run must have.
pub const REQUIRE_GPUS: &str = "RMM_REQUIRE_GPUS";
/// `RMM_SKIP_LOG`: the file every skipped test appends a line to.
pub const SKIP_LOG: &str = "RMM_SKIP_LOG";
/// `RMM_EU_STACK`: the `eu-stack` program for thread dumps (its
/// `libdw.so.1` and `libelf.so.1` beside it).
pub const EU_STACK: &str = "RMM_EU_STACK";
/// `RMM_TEST_MAX_LOG2`: the largest kernel test size, as a power of two.
pub const TEST_MAX_LOG2: &str = "RMM_TEST_MAX_LOG2";
/// `RMM_SOAK_SECONDS`: the soak test's duration.
pub const SOAK_SECONDS: &str = "RMM_SOAK_SECONDS";
/// `RMM_SOAK_THREADS`: the soak test's thread count.
pub const SOAK_THREADS: &str = "RMM_SOAK_THREADS";

/// `RMM_FAULT_OPS`: operations per stack of the fault-injection model tests.
pub const FAULT_OPS: &str = "RMM_FAULT_OPS";

/// Whether `RMM_REQUIRE_GPU` is `1`.
pub fn require_gpu() -> bool {
    std::env::var(REQUIRE_GPU).is_ok_and(|v| v == "1")
}

/// `RMM_REQUIRE_GPUS` (0 when unset or not a number).
pub fn require_gpus() -> usize {
    parsed(REQUIRE_GPUS).unwrap_or(0)
}

/// `RMM_SKIP_LOG`, when set.
pub fn skip_log() -> Option<OsString> {
    std::env::var_os(SKIP_LOG)
}

/// `RMM_EU_STACK`, when set.
pub fn eu_stack() -> Option<OsString> {
    std::env::var_os(EU_STACK)
}

/// `RMM_TEST_MAX_LOG2`, when set to a number.
pub fn test_max_log2() -> Option<u32> {
    parsed(TEST_MAX_LOG2)
}

/// `RMM_SOAK_SECONDS` (default 60).
pub fn soak_seconds() -> u64 {
    parsed(SOAK_SECONDS).unwrap_or(60)
}

/// `RMM_SOAK_THREADS` (default 32).
pub fn soak_threads() -> usize {
    parsed(SOAK_THREADS).unwrap_or(32)
}

/// `RMM_FAULT_OPS` (default 10^6 in an optimised build, 10^5 in a debug
/// build, where each operation is about ten times slower).
pub fn fault_ops() -> u64 {
    let default = if cfg!(debug_assertions) {
        100_000
    } else {
        1_000_000
    };
    parsed(FAULT_OPS).unwrap_or(default)
}

fn parsed<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}
