//! [`OomReport`]: the report every [`Error::OutOfMemory`] carries, built
//! on the failure path only, and how resources attach it.
//!
//! The layer whose `allocate` first returns the error builds the report
//! (the request and every layer from itself down); each layer above that
//! passes the error on puts its own state in front. Nothing of this runs
//! when an allocation succeeds.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use super::layer::{BlockState, LayerState};
use super::snapshot::{hex, walk, Snapshot};
use crate::error::Error;
use crate::mr::MemoryResource;
use crate::stream::CudaStreamView;

/// The schema name of a report's JSON.
pub const OOM_REPORT_SCHEMA: &str = "rmm-oom-report";
/// The version of the report JSON this crate writes.
pub const OOM_REPORT_VERSION: u64 = 1;
/// Blocks of each state (free, used) a report keeps per layer: the largest.
pub const REPORT_BLOCKS: usize = 32;
/// Live allocation sites a report names: the largest by bytes.
pub const REPORT_SITES: usize = 8;

/// The allocation that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OomRequest {
    /// Bytes asked for.
    pub size: usize,
    /// Alignment asked for.
    pub alignment: usize,
    /// The raw stream handle.
    pub stream: usize,
}

/// Live allocations from one call stack (or of unknown origin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSite {
    /// The call stack, one frame a line; `None`: not captured.
    pub backtrace: Option<Vec<String>>,
    /// Bytes live from it.
    pub bytes: usize,
    /// Allocations live from it.
    pub count: usize,
}

/// What explains an out-of-memory error: the request, the layer that
/// refused it, each layer's state (top first) and the largest live sites
/// of a tracking adaptor in the stack. `Display` prints it readably;
/// [`to_json`](Self::to_json) writes schema `rmm-oom-report`.
///
/// ```
/// use rmm::mr::{LimitingAdaptor, MemoryResource, SimulatedMemoryResource};
/// let mr = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), 4096);
/// let e = mr.allocate(8192, 256, rmm::CudaStreamView::DEFAULT).unwrap_err();
/// let report = e.oom_report().expect("out-of-memory errors carry a report");
/// assert_eq!(report.request.size, 8192);
/// assert_eq!(report.failed_layer, "limiting");
/// assert_eq!(report.snapshot.layers[0].limit_bytes, Some(4096));
/// assert!(e.to_string().contains("limiting"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomReport {
    /// The request as the caller made it (the outermost layer's; a layer
    /// under it may have been asked more, e.g. an aligning adaptor's).
    pub request: OomRequest,
    /// The name of the layer that refused it.
    pub failed_layer: String,
    /// The stack at the failure, top first, blocks cut to the largest
    /// [`REPORT_BLOCKS`] free and used ones per layer.
    pub snapshot: Snapshot,
    /// The largest live sites of a tracking adaptor, by bytes.
    pub largest_live_sites: Vec<LiveSite>,
    observed: Observed,
}

/// Set once the observers saw the report; no part of its value.
#[derive(Debug, Default)]
struct Observed(AtomicBool);

impl Clone for Observed {
    fn clone(&self) -> Self {
        Observed(AtomicBool::new(self.0.load(Ordering::Relaxed)))
    }
}
impl PartialEq for Observed {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Observed {}

impl OomReport {
    /// The report of `layer` refusing `request`: its state and that of
    /// every layer under it.
    pub fn capture(layer: &dyn MemoryResource, request: OomRequest) -> OomReport {
        let mut layers = walk(layer);
        let failed_layer = layers.first().map(|l| l.name.clone()).unwrap_or_default();
        for l in &mut layers {
            l.cut_blocks(REPORT_BLOCKS);
        }
        let mut report = OomReport {
            request,
            failed_layer,
            snapshot: Snapshot::of_layers(layers, layer.device().map(|d| d.0)),
            largest_live_sites: Vec::new(),
            observed: Observed::default(),
        };
        report.update_sites();
        report
    }

    /// Puts `layer`'s state in front (a layer above the failed one that
    /// passes the error on), `request` being what that layer was asked: the
    /// report's request is the outermost layer's, the caller's.
    pub(crate) fn push_outer(&mut self, mut layer: LayerState, request: OomRequest) {
        self.request = request;
        layer.cut_blocks(REPORT_BLOCKS);
        if let Some(live) = layer.live_allocations.take() {
            self.snapshot.live_allocations = live;
            self.update_sites();
        }
        self.snapshot.layers.insert(0, layer);
    }

    fn update_sites(&mut self) {
        let mut by_site: HashMap<Option<Vec<String>>, (usize, usize)> = HashMap::new();
        for a in &self.snapshot.live_allocations {
            let e = by_site.entry(a.backtrace.clone()).or_default();
            e.0 += a.size;
            e.1 += 1;
        }
        let mut sites: Vec<LiveSite> = by_site
            .into_iter()
            .map(|(backtrace, (bytes, count))| LiveSite {
                backtrace,
                bytes,
                count,
            })
            .collect();
        sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.count.cmp(&a.count)));
        sites.truncate(REPORT_SITES);
        self.largest_live_sites = sites;
    }

    /// True the first time it is called on this report (and its clones
    /// made before): the observers' once-per-failure gate.
    pub(crate) fn first_observation(&self) -> bool {
        !self.observed.0.swap(true, Ordering::AcqRel)
    }

    /// The JSON text (schema `rmm-oom-report`, docs/snapshots.md).
    pub fn to_json(&self) -> String {
        let sites: Vec<Value> = self
            .largest_live_sites
            .iter()
            .map(|s| json!({ "backtrace": s.backtrace, "bytes": s.bytes, "count": s.count }))
            .collect();
        json!({
            "schema": OOM_REPORT_SCHEMA,
            "version": OOM_REPORT_VERSION,
            "time": self.snapshot.time,
            "unix_time_ns": self.snapshot.unix_time_ns,
            "request": {
                "size": self.request.size,
                "alignment": self.request.alignment,
                "stream": hex(self.request.stream as u64),
            },
            "failed_layer": self.failed_layer,
            "snapshot": self.snapshot.to_value(),
            "largest_live_sites": sites,
        })
        .to_string()
    }
}

/// `1234567` → `1234567 B (1.18 MiB)`.
fn bytes(n: usize) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{n} B ({v:.2} {})", UNITS[u])
    }
}

fn opt_bytes(n: Option<usize>) -> String {
    n.map_or_else(|| "?".to_string(), bytes)
}

fn write_layer(f: &mut fmt::Formatter<'_>, i: usize, l: &LayerState, failed: bool) -> fmt::Result {
    let mark = if failed { "  <- refused the request" } else { "" };
    writeln!(f, "  [{i}] {} ({}){mark}", l.name, l.type_name)?;
    match (l.reserved_bytes, l.used_bytes) {
        (Some(r), used) => writeln!(f, "      reserved {}, in use {}", bytes(r), opt_bytes(used))?,
        (None, Some(used)) => writeln!(f, "      in use {}", bytes(used))?,
        (None, None) => {}
    }
    if let Some(limit) = l.limit_bytes {
        writeln!(f, "      limit {}", bytes(limit))?;
    }
    if let Some(free) = l.free_bytes {
        match (l.largest_free_block, l.fragmentation()) {
            (Some(largest), Some(frag)) => writeln!(
                f,
                "      free {}, largest free block {}, fragmentation {frag:.3}",
                bytes(free),
                bytes(largest)
            )?,
            _ => writeln!(f, "      free {}", bytes(free))?,
        }
    }
    if let Some(by) = l.free_bytes_by_stream.as_ref().filter(|b| !b.is_empty()) {
        let parts: Vec<String> = by
            .iter()
            .map(|(s, n)| format!("stream {s:#x}: {}", bytes(*n)))
            .collect();
        writeln!(f, "      free by stream: {}", parts.join(", "))?;
    }
    if let Some(c) = &l.counters {
        writeln!(
            f,
            "      counters: {} in {} allocations (peak {}, {} allocations)",
            bytes(c.current_bytes.max(0) as usize),
            c.current_count,
            bytes(c.peak_bytes.max(0) as usize),
            c.peak_count
        )?;
    }
    if let Some(g) = l.graph_memory.filter(|g| g.pools > 0) {
        writeln!(
            f,
            "      graph memory: {} pools, reserved {}, live {}",
            g.pools,
            bytes(g.reserved_bytes),
            bytes(g.live_bytes)
        )?;
    }
    if let Some(blocks) = &l.blocks {
        let free = blocks.iter().filter(|b| b.state == BlockState::Free).count();
        writeln!(
            f,
            "      blocks kept in the report: {free} free, {} used",
            blocks.len() - free
        )?;
    }
    Ok(())
}

impl fmt::Display for OomReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.request;
        writeln!(
            f,
            "out-of-memory report ({} UTC): request {}, alignment {}, stream {:#x}; refused by {}",
            self.snapshot.time,
            bytes(r.size),
            r.alignment,
            r.stream,
            self.failed_layer
        )?;
        let mut failed_seen = false;
        for (i, l) in self.snapshot.layers.iter().enumerate() {
            let failed = !failed_seen && l.name == self.failed_layer;
            failed_seen |= failed;
            write_layer(f, i, l, failed)?;
        }
        if !self.largest_live_sites.is_empty() {
            writeln!(f, "  largest live allocation sites:")?;
            for s in &self.largest_live_sites {
                writeln!(f, "    {} in {} allocations", bytes(s.bytes), s.count)?;
                match &s.backtrace {
                    Some(frames) => {
                        for frame in frames.iter().take(12) {
                            writeln!(f, "        {frame}")?;
                        }
                    }
                    None => writeln!(f, "        (no backtrace captured)")?,
                }
            }
        }
        Ok(())
    }
}

/// The error `e` as it leaves `layer`'s `allocate` for a request of
/// `bytes` with `alignment` on `stream`: an out-of-memory error gets a
/// report ([`OomReport::capture`] when it has none, else `layer` in front);
/// any other error is returned as it is. Only failure paths call it.
pub(crate) fn through(
    layer: &dyn MemoryResource,
    e: Error,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) -> Error {
    match e {
        Error::OutOfMemory {
            requested,
            reason,
            report,
        } => {
            let report = match report {
                None => Arc::new(OomReport::capture(
                    layer,
                    OomRequest {
                        size: bytes,
                        alignment,
                        stream: stream.as_raw(),
                    },
                )),
                Some(mut r) => {
                    let request = OomRequest {
                        size: bytes,
                        alignment,
                        stream: stream.as_raw(),
                    };
                    Arc::make_mut(&mut r).push_outer(layer.layer_state(), request);
                    r
                }
            };
            Error::OutOfMemory {
                requested,
                reason,
                report: Some(report),
            }
        }
        other => other,
    }
}

/// `result.map_err(|e| through(layer, e, ..))` for `allocate` bodies.
pub(crate) trait ReportOom {
    /// Attaches or extends the out-of-memory report of an error.
    fn report_oom(
        self,
        layer: &dyn MemoryResource,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView,
    ) -> Self;
}

impl<T> ReportOom for crate::error::Result<T> {
    fn report_oom(
        self,
        layer: &dyn MemoryResource,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView,
    ) -> Self {
        self.map_err(|e| through(layer, e, bytes, alignment, stream))
    }
}

/// Runs an `allocate` body `f` of `layer` and passes its error through
/// [`through`]: the one line every resource's `allocate` wraps itself in.
#[inline]
pub(crate) fn reported<T>(
    layer: &dyn MemoryResource,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
    f: impl FnOnce() -> crate::error::Result<T>,
) -> crate::error::Result<T> {
    f().report_oom(layer, bytes, alignment, stream)
}
