//! The conformance suite over every resource, linked once: the base
//! resources (`resources::`) and the sub-allocators (`suballocators::`),
//! each with their own tests. A filter such as `resources::` runs what the
//! `resources` binary ran.
//!
//! The other test binaries of rmm stay binaries of their own because each
//! needs a process to itself: `adaptors`, `misuse` and `logger` install the
//! process's one `log` logger; `containers`, `per_device`, `multi_device`
//! and `soak` change the per-device current resources; `foundation`'s
//! driver-pool checks must not run beside another suite's out-of-memory
//! tests (a failed device-wide allocation trims every pool of the
//! process); `ipc` runs itself as a second process; `stress_parallel`
//! loads the driver from many threads at once.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod resources;
mod suballocators;
