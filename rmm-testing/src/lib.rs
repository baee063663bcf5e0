//! Test support for the rmm workspace (development only, never published):
//! what the tests, examples, benchmarks and programs around the `rmm` crate
//! share, kept out of the library's public API.
//!
//! | item | what it is |
//! |---|---|
//! | [`require_gpu!`], [`require_gpus!`], [`gpu_available!`] | skip a GPU test on a machine without one (or fail, with `RMM_REQUIRE_GPU=1`) |
//! | [`report_skip`] | report any other skipped test the same way |
//! | [`Watchdog`], [`Progress`] | a stall watchdog for multi-threaded tests (thread dumps, then abort) |
//! | [`error_log_count`] | the error-level log records of the calling thread |
//! | [`LiveRanges`] | the address ranges a test holds, refusing overlaps and unknown frees |
//! | [`SplitMix64`] | the random generator of the anchors' workloads |
//! | [`env`](mod@env) | the test-only environment variables, read in one place |
//!
//! The crate does not depend on `rmm`, so that `rmm`'s own unit tests can use
//! it as a dev-dependency without a second copy of `rmm`: the macros ask
//! `::rmm::device` at the call site (inside `rmm`'s unit tests, `::rmm` is the
//! crate itself through `extern crate self as rmm`).
//!
//! ```no_run
//! fn fills_on_the_gpu() {
//!     rmm_testing::require_gpu!();
//!     // ... GPU work ...
//! }
//! # fills_on_the_gpu();
//! ```
#![forbid(unsafe_code)]

pub mod env;
mod error_log;
mod live_ranges;
mod rng;
mod skip;
mod watchdog;

pub use error_log::error_log_count;
pub use live_ranges::LiveRanges;
pub use rng::SplitMix64;
pub use skip::{gpu_available_or_skip, gpus_available_or_skip, report_skip, SKIP_MARKER};
pub use watchdog::{Progress, Watchdog};
