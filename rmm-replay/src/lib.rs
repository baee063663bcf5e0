//! Memory-event logs and resources by name, for the programs and benchmarks
//! around the `rmm` crate (as RMM keeps its replay benchmark, log parser and
//! simulated resource under its benchmarks): the log parser ([`memlog`]), the
//! replay engine ([`replay`]) and the one factory of resources by name
//! ([`by_name`]), used by `tools/` (rmm-replay, rmm-report, rmm-demo), the
//! benchmarks and the Python package.
//!
//! | item | what it is |
//! |---|---|
//! | [`memlog`], [`parse_log`] | the one reader of RMM's CSV memory-event log |
//! | [`replay()`], [`ReplayReport`] | replays a log's events against a resource |
//! | [`replay_from_snapshot`] | the same, starting from a snapshot's live allocations (docs/snapshots.md) |
//! | [`by_name::resource`] | builds a resource or adaptor stack from a name such as `statistics_pool` |
//! | [`sizes::parse_size_str`] | the one parser of sizes written with a unit (`"1GiB"`), as the Python package takes them |
//!
//!
//! A log is the CSV that [`LoggingAdaptor`](rmm::mr::LoggingAdaptor) or
//! RMM's `logging_resource_adaptor` writes; [`memlog`] is its one parser
//! (here and in `rmm-report timeline`), and [`parse_log`] returns its events.
//!
//! [`replay()`] runs the events against a resource with one thread per logged
//! thread, each doing its own events, and a shared event index with a
//! condition variable keeping the original global order (as RMM's replay
//! does). Every event is replayed with the synchronous calls on the default
//! stream. It reports the time taken, the peak of requested bytes, the
//! allocations that failed and, for resources that report their free blocks
//! ([`MemoryResource::free_block_stats`](rmm::mr::MemoryResource::free_block_stats)), the fragmentation at the peak.
//!
//! ```
//! use rmm::mr::SimulatedMemoryResource;
//! use rmm_replay::{parse_log, replay};
//! let log = "Thread,Time,Action,Pointer,Size,Stream\n\
//!            1,10:00:00.000001,allocate,0x7f0000000000,1000,0x0\n\
//!            2,10:00:00.000002,allocate,0x7f0000000400,3000,0x0\n\
//!            1,10:00:00.000003,free,0x7f0000000000,1000,0x0\n\
//!            2,10:00:00.000004,free,0x7f0000000400,3000,0x0\n";
//! let events = parse_log(log.as_bytes())?;
//! let report = replay(&events, &SimulatedMemoryResource::new(1 << 30));
//! assert_eq!((report.threads, report.peak_bytes, report.failed_allocations), (2, 4000, 0));
//! # Ok::<(), rmm::Error>(())
//! ```

pub mod by_name;
mod engine;
pub mod memlog;
pub mod sizes;

pub use engine::{parse_log, replay, replay_from_snapshot, snapshot_allocations, ReplayReport};
pub use memlog::{Action, Event, LogError, MemoryLog};
