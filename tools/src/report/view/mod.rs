//! `rmm-report view`: one self-contained HTML page of a memory-event log or
//! a snapshot, to explore in a browser offline (docs/viewer.md).
//!
//! The page carries its data, script and style inline (no network, no
//! external script or font). It draws bytes in use over time (zoom and pan),
//! the allocations as address-by-time rectangles with their details on
//! hover, the allocator's state at a clicked moment (live blocks, bytes in
//! use, largest gap), the failed allocations with their out-of-memory
//! reports, and a second run overlaid for comparison.
//!
//! | Module | What |
//! |---|---|
//! | [`encode`] | varint columns and base64, the page's compact data |
//! | `run` | a log or snapshot as the page's columns and header ([`ViewRun`]) |
//! | `json` | snapshots and out-of-memory reports: schema checks, matching reports to failures |
//! | `page` | the HTML: template, style, scripts and data |
//!
//! Size: a log of `E` events with `A` allocations costs about
//! `4/3 * (2 E + 10 A)` bytes of page (measured 2026-12-02: 10^6 events,
//! half of them allocations, 9.1 MB; 10^7 events 90.5 MB; docs/viewer.md);
//! the bound is `4/3 * (20 E + 60 A)` bytes (every varint at its longest)
//! plus the names, failures and reports.
//!
//! ```
//! use rmm_tools::report::csv::parse_memlog;
//! use rmm_tools::report::view::{render_page, ViewRun};
//! let log = parse_memlog(
//!     "Thread,Time,Action,Pointer,Size,Stream\n\
//!      1,10:00:00.000001,allocate,0x1000,256,0x0\n\
//!      1,10:00:00.000002,free,0x1000,256,0x0\n", "log.csv").unwrap();
//! let run = ViewRun::from_log("log.csv", &log).unwrap();
//! let html = render_page("demo", &[run]);
//! assert!(html.starts_with("<!DOCTYPE html>") && !html.contains("http://") && !html.contains("https://"));
//! ```
#![forbid(unsafe_code)]

pub mod encode;
mod json;
mod page;
mod run;

use std::path::Path;

pub use json::{attach_reports, check_schema, read_json};
pub use page::render_page;
pub use run::ViewRun;

use crate::report::csv::read_memlog_file;
use crate::report::ReportError;

/// Reads an input of the viewer: a snapshot (JSON, `rmm-snapshot`) when the
/// file starts with `{`, else a memory-event log (CSV).
pub fn load_run(path: &Path) -> Result<ViewRun, ReportError> {
    let name = path.display().to_string();
    let head = std::fs::read(path).map_err(|error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    let first = head.iter().find(|b| !b.is_ascii_whitespace()).copied();
    drop(head);
    if first == Some(b'{') {
        let value = read_json(path)?;
        ViewRun::from_snapshot(&name, &value)
    } else {
        let log = read_memlog_file(path)?;
        ViewRun::from_log(&name, &log)
    }
}
