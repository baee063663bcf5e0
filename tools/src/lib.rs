//! # rmm-tools: the programs around the `rmm` crate
//!
//! The library crates hold no program code; this package holds the programs
//! and what only they need:
//!
//! | Program | What |
//! |---|---|
//! | `rmm-demo` | the allocator demo (`bash scripts/demo.sh`): a mixed workload over several resources, a table, a CSV and charts |
//! | `rmm-report` | benchmark charts (`charts`) and memory timelines (`timeline`) as SVG; the interactive memory page (`view`, one HTML file) |
//! | `rmm-replay` | replays a memory-event log against resources made by name |
//!
//! | Module | What |
//! |---|---|
//! | [`report`] | CSV readers, charts and the memory timeline behind `rmm-report` and `rmm-demo` |
//!
//! The memory-event log parser, the replay engine and the resource-by-name
//! factory live in the `rmm-replay` crate, which the benchmarks and the
//! Python package use too.

#![forbid(unsafe_code)]

pub mod report;
