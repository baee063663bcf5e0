//! Replays a memory-event log into a timeline, computes its statistics and
//! draws it as an SVG.
//!
//! The SVG has two panels that share the x axis (time, or event index):
//! * bytes in use after each event, as a step line;
//! * the address space: one rectangle per allocation spanning
//!   `[allocated, freed)` on x and `[address, address + size)` on y, with
//!   addresses relative to the lowest address seen, coloured by size or by
//!   thread, so that fragmentation shows as holes between live blocks.
//!
//! Frees of unknown pointers are counted (and not drawn), allocations never
//! freed extend to the end of the log, failed allocations are marked in red.
//! Large logs are reduced so the SVG stays small: the step line keeps the
//! first, lowest, highest and last sample of each horizontal bucket (so the
//! peak survives), and rectangles are snapped to the pixel grid, deduplicated,
//! and past a budget the smallest are merged into runs of a coarse occupancy
//! grid (drawn paler).
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;

use plotters::prelude::*;

use super::{human_bytes, ReportError};
use rmm::mr::FreeBlockStats;
use rmm_replay::memlog::{Action, MemoryLog};

/// One successful allocation and, if it was freed, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// The address.
    pub pointer: u64,
    /// The size as logged at allocation.
    pub size: u64,
    /// Index into [`Timeline::threads`].
    pub thread: usize,
    /// Index of the allocating event.
    pub start: usize,
    /// Index of the freeing event; `None` if never freed.
    pub end: Option<usize>,
    /// The log line of the allocation.
    pub line: usize,
}

/// A failed allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Index of the event.
    pub index: usize,
    /// The requested size.
    pub size: u64,
    /// Index into [`Timeline::threads`].
    pub thread: usize,
    /// The log line.
    pub line: usize,
}

/// A replayed memory-event log.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Number of events.
    pub events: usize,
    /// The distinct thread ids, in order of first appearance.
    pub threads: Vec<String>,
    /// Whether every event had a time.
    pub has_time: bool,
    /// Time of each event in seconds after the first event, made monotone
    /// (a time earlier than the previous event's, as can happen between
    /// threads, is raised to it; a jump back of more than 12 h is taken as
    /// midnight passing). Event indices when the log has no times.
    pub times: Vec<f64>,
    /// Bytes in use after each event.
    pub in_use: Vec<u64>,
    /// Every successful allocation, in log order.
    pub allocations: Vec<Allocation>,
    /// Every failed allocation, in log order.
    pub failures: Vec<Failure>,
    /// Log lines of frees whose pointer was not live.
    pub unknown_frees: Vec<usize>,
    /// Frees of a null pointer (ignored).
    pub null_frees: usize,
    /// Allocations that returned a pointer that was still live (the earlier
    /// one is then taken as freed at that point).
    pub reused_live: usize,
    /// Frees whose logged size differs from the allocation's (the
    /// allocation's size is used).
    pub size_mismatches: usize,
}

/// Fragmentation of a set of live blocks inside the address range they span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fragmentation {
    /// Lowest live address.
    pub low: u64,
    /// One past the highest live byte.
    pub high: u64,
    /// Bytes in `[low, high)` not covered by a live block.
    pub free_bytes: u64,
    /// The largest hole in `[low, high)`.
    pub largest_gap: u64,
    /// The number of holes in `[low, high)`.
    pub holes: usize,
}

impl Fragmentation {
    /// The holes as the free blocks of a resource would be reported.
    pub fn as_free_blocks(&self) -> FreeBlockStats {
        FreeBlockStats {
            free_bytes: usize::try_from(self.free_bytes).unwrap_or(usize::MAX),
            largest_free_block: usize::try_from(self.largest_gap).unwrap_or(usize::MAX),
            free_blocks: self.holes,
        }
    }

    /// The fragmentation of the holes, with the library's one definition,
    /// [`FreeBlockStats::fragmentation`] (`1 - largest_gap / free_bytes`, 0
    /// when there is no hole).
    ///
    /// ```
    /// use rmm_tools::report::timeline::fragmentation;
    /// // [0,10) [20,30) [35,40): holes of 10 and 5 bytes.
    /// let f = fragmentation(&[(20, 10), (0, 10), (35, 5)]);
    /// assert!((f.ratio() - (1.0 - 10.0 / 15.0)).abs() < 1e-12);
    /// ```
    pub fn ratio(&self) -> f64 {
        self.as_free_blocks().fragmentation()
    }
}

/// Computes the fragmentation of `(address, size)` blocks (overlaps are merged).
pub fn fragmentation(blocks: &[(u64, u64)]) -> Fragmentation {
    let mut sorted: Vec<(u64, u64)> = blocks.iter().filter(|b| b.1 > 0).copied().collect();
    sorted.sort_unstable();
    let Some(&(first, _)) = sorted.first() else {
        return Fragmentation {
            low: 0,
            high: 0,
            free_bytes: 0,
            largest_gap: 0,
            holes: 0,
        };
    };
    let mut end = first;
    let (mut free_bytes, mut largest_gap, mut holes) = (0u64, 0u64, 0usize);
    for &(addr, size) in &sorted {
        if addr > end {
            let gap = addr - end;
            free_bytes += gap;
            largest_gap = largest_gap.max(gap);
            holes += 1;
        }
        end = end.max(addr.saturating_add(size));
    }
    Fragmentation {
        low: first,
        high: end,
        free_bytes,
        largest_gap,
        holes,
    }
}

/// Summary statistics of a [`Timeline`].
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineStats {
    /// Number of events.
    pub events: usize,
    /// Number of distinct threads.
    pub threads: usize,
    /// Successful allocations.
    pub allocations: usize,
    /// Frees that matched a live allocation.
    pub frees: usize,
    /// Failed allocations.
    pub failures: usize,
    /// Frees of pointers that were not live.
    pub unknown_frees: usize,
    /// Allocations never freed.
    pub never_freed: usize,
    /// Bytes of the allocations never freed.
    pub never_freed_bytes: u64,
    /// The most bytes in use at once.
    pub peak_bytes: u64,
    /// The first event at which `peak_bytes` was reached (`None` without allocations).
    pub peak_event: Option<usize>,
    /// Its time in seconds after the first event, if the log has times.
    pub peak_time: Option<f64>,
    /// Seconds from the first to the last event, if the log has times.
    pub duration: Option<f64>,
    /// Lowest address allocated.
    pub address_base: Option<u64>,
    /// From the lowest address to one past the highest byte allocated.
    pub address_span: u64,
    /// Live allocations at the peak.
    pub live_at_peak: usize,
    /// Fragmentation of the live blocks at the peak.
    pub fragmentation_at_peak: Fragmentation,
}

impl fmt::Display for TimelineStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "events:            {} ({} thread(s))",
            self.events, self.threads
        )?;
        writeln!(
            f,
            "allocations:       {} ({} freed)",
            self.allocations, self.frees
        )?;
        writeln!(f, "failures:          {}", self.failures)?;
        writeln!(f, "unknown frees:     {}", self.unknown_frees)?;
        writeln!(
            f,
            "never freed:       {} ({})",
            self.never_freed,
            human_bytes(self.never_freed_bytes as f64)
        )?;
        write!(
            f,
            "peak bytes:        {} ({} B)",
            human_bytes(self.peak_bytes as f64),
            self.peak_bytes
        )?;
        match (self.peak_event, self.peak_time) {
            (Some(e), Some(t)) => writeln!(f, " at event {e}, {t:.6} s")?,
            (Some(e), None) => writeln!(f, " at event {e}")?,
            _ => writeln!(f)?,
        }
        if let Some(d) = self.duration {
            writeln!(f, "duration:          {d:.6} s")?;
        }
        if let Some(base) = self.address_base {
            writeln!(
                f,
                "address range:     {base:#x} + {}",
                human_bytes(self.address_span as f64)
            )?;
        }
        let frag = &self.fragmentation_at_peak;
        write!(
            f,
            "fragmentation:     {:.3} at peak ({} live blocks, {} free in the used range, largest hole {})",
            frag.ratio(),
            self.live_at_peak,
            human_bytes(frag.free_bytes as f64),
            human_bytes(frag.largest_gap as f64)
        )
    }
}

impl Timeline {
    /// Replays the events of a parsed log in log order.
    ///
    /// ```
    /// use rmm_tools::report::csv::parse_memlog;
    /// use rmm_tools::report::timeline::Timeline;
    /// let log = parse_memlog("Action,Pointer,Size\nalloc,0x10,8\nalloc,0x20,8\nfree,0x10,8\n", "l").unwrap();
    /// assert_eq!(Timeline::from_log(&log).in_use, vec![8, 16, 8]);
    /// ```
    pub fn from_log(log: &MemoryLog) -> Timeline {
        let events = &log.events;
        let threads = log.threads.clone();
        let has_time = !events.is_empty() && events.iter().all(|e| e.time.is_some());
        let mut times = Vec::with_capacity(events.len());
        let mut in_use = Vec::with_capacity(events.len());
        let mut allocations: Vec<Allocation> = Vec::new();
        let mut failures = Vec::new();
        let mut unknown_frees = Vec::new();
        let (mut null_frees, mut reused_live, mut size_mismatches) = (0, 0, 0);
        let mut live: HashMap<u64, usize> = HashMap::new();
        let mut bytes: u64 = 0;
        let (mut offset, mut last_raw, mut last_abs, mut first_abs) =
            (0.0f64, None::<f64>, 0.0f64, None::<f64>);

        for (index, event) in events.iter().enumerate() {
            let thread = event.thread;
            let size = event.size as u64;
            if has_time {
                let raw = event.time.unwrap_or(0.0);
                if let Some(prev) = last_raw {
                    if raw + 43_200.0 < prev {
                        offset += 86_400.0; // midnight
                    }
                }
                last_raw = Some(raw);
                let abs = (raw + offset).max(last_abs);
                last_abs = abs;
                let first = *first_abs.get_or_insert(abs);
                times.push(abs - first);
            } else {
                times.push(index as f64);
            }
            match (event.action, (event.pointer != 0).then_some(event.pointer)) {
                (Action::Allocate, Some(pointer)) => {
                    if let Some(previous) = live.remove(&pointer) {
                        reused_live += 1;
                        allocations[previous].end = Some(index);
                        bytes = bytes.saturating_sub(allocations[previous].size);
                    }
                    live.insert(pointer, allocations.len());
                    allocations.push(Allocation {
                        pointer,
                        size,
                        thread,
                        start: index,
                        end: None,
                        line: event.line,
                    });
                    bytes = bytes.saturating_add(size);
                }
                (Action::Allocate, None) | (Action::AllocateFailure, _) => failures.push(Failure {
                    index,
                    size,
                    thread,
                    line: event.line,
                }),
                (Action::Free, Some(pointer)) => match live.remove(&pointer) {
                    Some(a) => {
                        let allocation = &mut allocations[a];
                        allocation.end = Some(index);
                        if size != 0 && size != allocation.size {
                            size_mismatches += 1;
                        }
                        bytes = bytes.saturating_sub(allocation.size);
                    }
                    None => unknown_frees.push(event.line),
                },
                (Action::Free, None) => null_frees += 1,
            }
            in_use.push(bytes);
        }
        Timeline {
            events: events.len(),
            threads,
            has_time,
            times,
            in_use,
            allocations,
            failures,
            unknown_frees,
            null_frees,
            reused_live,
            size_mismatches,
        }
    }

    /// The allocations live right after event `index`.
    pub fn live_after(&self, index: usize) -> Vec<&Allocation> {
        self.allocations
            .iter()
            .filter(|a| a.start <= index && a.end.is_none_or(|e| e > index))
            .collect()
    }

    /// The first event at which the most bytes were in use, and that amount.
    pub fn peak(&self) -> Option<(usize, u64)> {
        let mut best: Option<(usize, u64)> = None;
        for (i, &b) in self.in_use.iter().enumerate() {
            if b > 0 && best.is_none_or(|(_, m)| b > m) {
                best = Some((i, b));
            }
        }
        best
    }

    /// Computes the summary statistics.
    pub fn stats(&self) -> TimelineStats {
        let peak = self.peak();
        let live = peak.map(|(i, _)| self.live_after(i)).unwrap_or_default();
        let blocks: Vec<(u64, u64)> = live.iter().map(|a| (a.pointer, a.size)).collect();
        let never: Vec<&Allocation> = self.allocations.iter().filter(|a| a.end.is_none()).collect();
        let base = self.allocations.iter().map(|a| a.pointer).min();
        let top = self
            .allocations
            .iter()
            .map(|a| a.pointer.saturating_add(a.size))
            .max();
        TimelineStats {
            events: self.events,
            threads: self.threads.len(),
            allocations: self.allocations.len(),
            frees: self.allocations.iter().filter(|a| a.end.is_some()).count() - self.reused_live,
            failures: self.failures.len(),
            unknown_frees: self.unknown_frees.len(),
            never_freed: never.len(),
            never_freed_bytes: never.iter().map(|a| a.size).sum(),
            peak_bytes: peak.map_or(0, |p| p.1),
            peak_event: peak.map(|p| p.0),
            peak_time: if self.has_time {
                peak.map(|p| self.times[p.0])
            } else {
                None
            },
            duration: if self.has_time {
                self.times.last().copied()
            } else {
                None
            },
            address_base: base,
            address_span: match (base, top) {
                (Some(b), Some(t)) => t - b,
                _ => 0,
            },
            live_at_peak: live.len(),
            fragmentation_at_peak: fragmentation(&blocks),
        }
    }
}

/// Maps addresses to offsets on the address axis: relative to the lowest
/// address, with gaps that no allocation ever touched and that are larger
/// than all the memory ever allocated collapsed to a thin band (so that
/// allocations in far-apart mappings, as `cudaMalloc` gives, stay visible).
#[derive(Debug, Clone, PartialEq)]
pub struct AddressMap {
    /// Start address of each stretch drawn without collapsing.
    starts: Vec<u64>,
    /// Offset on the axis of each stretch's start.
    offsets: Vec<f64>,
    /// Length of the axis.
    pub total: f64,
    /// Number of gaps collapsed.
    pub collapsed: usize,
    /// Offsets on the axis where gaps were collapsed (the middle of each band).
    pub collapsed_at: Vec<f64>,
}

impl AddressMap {
    /// Builds the map of a timeline's allocations; `collapse` allows collapsing gaps.
    pub fn new(allocations: &[Allocation], collapse: bool) -> AddressMap {
        let mut blocks: Vec<(u64, u64)> = allocations
            .iter()
            .map(|a| (a.pointer, a.pointer.saturating_add(a.size.max(1))))
            .collect();
        blocks.sort_unstable();
        let Some(&(base, _)) = blocks.first() else {
            return AddressMap {
                starts: vec![0],
                offsets: vec![0.0],
                total: 1.0,
                collapsed: 0,
                collapsed_at: Vec::new(),
            };
        };
        // The union of every address ever allocated.
        let mut union: Vec<(u64, u64)> = Vec::new();
        for (lo, hi) in blocks {
            match union.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => union.push((lo, hi)),
            }
        }
        let used: u64 = union.iter().map(|(lo, hi)| hi - lo).sum();
        let top = union.last().map_or(base, |u| u.1);
        let threshold = used.max(1);
        let band = (used as f64 * 0.02).max(1.0);
        let (mut starts, mut offsets, mut collapsed_at) = (vec![base], vec![0.0], Vec::new());
        let mut offset = 0.0;
        let mut stretch_start = base;
        for pair in union.windows(2) {
            let (end, next) = (pair[0].1, pair[1].0);
            if collapse && next - end > threshold {
                offset += (end - stretch_start) as f64;
                collapsed_at.push(offset + band / 2.0);
                offset += band;
                starts.push(next);
                offsets.push(offset);
                stretch_start = next;
            }
        }
        let total = (offset + (top - stretch_start) as f64).max(1.0);
        AddressMap {
            collapsed: collapsed_at.len(),
            starts,
            offsets,
            total,
            collapsed_at,
        }
    }

    /// The axis offset of an address (addresses below the first stretch map to 0).
    pub fn offset(&self, address: u64) -> f64 {
        let i = self.starts.partition_point(|s| *s <= address).saturating_sub(1);
        self.offsets[i] + address.saturating_sub(self.starts[i]) as f64
    }
}

/// What the x axis shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XAxis {
    /// Time if the log has times that advance, else event index.
    Auto,
    /// Seconds after the first event.
    Time,
    /// Event index.
    Index,
}

/// How rectangles are coloured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorBy {
    /// By thread when there are several threads, else by size.
    Auto,
    /// By log2 of the size (a blue-to-yellow gradient).
    Size,
    /// One colour per thread.
    Thread,
}

/// Options of [`render_svg`].
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineOptions {
    /// What the x axis shows.
    pub x_axis: XAxis,
    /// How rectangles are coloured.
    pub color_by: ColorBy,
    /// Width of the SVG in pixels.
    pub width: u32,
    /// Height of the SVG in pixels.
    pub height: u32,
    /// At most this many rectangles (past it the smallest are merged into grid runs).
    pub max_rects: usize,
    /// At most about this many points in the bytes-in-use line.
    pub max_points: usize,
    /// Title (the log's name, usually).
    pub title: String,
    /// Collapse address gaps larger than all memory ever allocated (see [`AddressMap`]).
    pub collapse_gaps: bool,
}

impl Default for TimelineOptions {
    fn default() -> Self {
        TimelineOptions {
            x_axis: XAxis::Auto,
            color_by: ColorBy::Auto,
            width: 1400,
            height: 900,
            max_rects: 20_000,
            max_points: 8_000,
            title: "memory timeline".into(),
            collapse_gaps: true,
        }
    }
}

/// What [`render_svg`] drew.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderInfo {
    /// The x axis used.
    pub x_axis: XAxis,
    /// The colouring used.
    pub color_by: ColorBy,
    /// Allocations (rectangles before any reduction).
    pub allocations: usize,
    /// Rectangles drawn for allocations (after snapping, deduplication and the budget).
    pub rects_drawn: usize,
    /// Allocations whose rectangles went into the occupancy-grid runs.
    pub merged: usize,
    /// Grid runs drawn for them.
    pub merged_runs: usize,
    /// Points of the bytes-in-use line.
    pub line_points: usize,
    /// Address gaps collapsed.
    pub collapsed_gaps: usize,
}

const VIRIDIS: [(f64, f64, f64); 5] = [
    (68.0, 1.0, 84.0),
    (59.0, 82.0, 139.0),
    (33.0, 145.0, 140.0),
    (94.0, 201.0, 98.0),
    (253.0, 231.0, 37.0),
];

/// Thread colours (no red: red marks failures).
const THREAD_COLORS: [(u8, u8, u8); 9] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

const SIZE_BUCKETS: usize = 16;

fn gradient(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0) * (VIRIDIS.len() - 1) as f64;
    let i = (t.floor() as usize).min(VIRIDIS.len() - 2);
    let f = t - i as f64;
    let (a, b) = (VIRIDIS[i], VIRIDIS[i + 1]);
    let mix = |x: f64, y: f64| (x + (y - x) * f).round().clamp(0.0, 255.0) as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn thread_color(i: usize) -> RGBColor {
    let (r, g, b) = THREAD_COLORS[i % THREAD_COLORS.len()];
    RGBColor(r, g, b)
}

fn chart_err<E: std::error::Error>(what: &str) -> impl Fn(E) -> ReportError + '_ {
    move |e| ReportError::Chart {
        what: what.into(),
        message: e.to_string(),
    }
}

/// A rectangle on the pixel grid of the address panel, with a colour index.
type PixelRect = (i64, i64, i64, i64, usize);

/// Samples of the step line: events kept after bucketing (first, min, max, last per bucket).
fn line_samples(xs: &[f64], ys: &[u64], max_points: usize) -> Vec<usize> {
    let n = xs.len();
    if n * 2 <= max_points.max(8) {
        return (0..n).collect();
    }
    let buckets = (max_points / 8).max(1);
    let (x0, x1) = (xs[0], xs[n - 1]);
    let width = if x1 > x0 { (x1 - x0) / buckets as f64 } else { 0.0 };
    let bucket_of = |x: f64| {
        if width > 0.0 {
            (((x - x0) / width) as usize).min(buckets - 1)
        } else {
            0
        }
    };
    let mut kept = Vec::new();
    let mut start = 0;
    while start < n {
        let b = bucket_of(xs[start]);
        let mut end = start + 1;
        // Without time spread, fall back to equal-count buckets.
        let limit = if width > 0.0 {
            n
        } else {
            (start + n.div_ceil(buckets)).min(n)
        };
        while end < limit && (width == 0.0 || bucket_of(xs[end]) == b) {
            end += 1;
        }
        let slice = &ys[start..end];
        let (mut lo, mut hi) = (0, 0);
        for (i, &y) in slice.iter().enumerate() {
            if y < slice[lo] {
                lo = i;
            }
            if y > slice[hi] {
                hi = i;
            }
        }
        let mut picks = [start, start + lo, start + hi, end - 1];
        picks.sort_unstable();
        for p in picks {
            if kept.last() != Some(&p) {
                kept.push(p);
            }
        }
        start = end;
    }
    kept
}

/// Draws the timeline as an SVG document.
pub fn render_svg(tl: &Timeline, opts: &TimelineOptions) -> Result<(String, RenderInfo), ReportError> {
    let duration = tl.times.last().copied().unwrap_or(0.0);
    let x_axis = match opts.x_axis {
        XAxis::Auto if tl.has_time && duration > 0.0 => XAxis::Time,
        XAxis::Auto => XAxis::Index,
        other => other,
    };
    let color_by = match opts.color_by {
        ColorBy::Auto if tl.threads.len() > 1 => ColorBy::Thread,
        ColorBy::Auto => ColorBy::Size,
        other => other,
    };
    let n = tl.events;
    let x_of = |i: usize| -> f64 {
        match x_axis {
            XAxis::Time => tl.times.get(i).copied().unwrap_or(duration),
            _ => i as f64,
        }
    };
    let (x0, mut x1) = (
        0.0f64,
        match x_axis {
            XAxis::Time => duration,
            _ => n as f64,
        },
    );
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let xs: Vec<f64> = (0..n).map(x_of).collect();
    let x_desc = match x_axis {
        XAxis::Time => "seconds after the first event",
        _ => "event index",
    };

    let stats = tl.stats();
    let map = AddressMap::new(&tl.allocations, opts.collapse_gaps);
    let span = map.total;
    let peak = stats.peak_bytes as f64;

    // Size colour buckets over log2 of the sizes present.
    let (lmin, lmax) = tl.allocations.iter().fold((f64::MAX, f64::MIN), |(lo, hi), a| {
        let l = (a.size.max(1) as f64).log2();
        (lo.min(l), hi.max(l))
    });
    let size_bucket = |size: u64| -> usize {
        if lmax <= lmin {
            return SIZE_BUCKETS / 2;
        }
        let t = ((size.max(1) as f64).log2() - lmin) / (lmax - lmin);
        ((t * (SIZE_BUCKETS - 1) as f64).round() as usize).min(SIZE_BUCKETS - 1)
    };
    let color_of = |index: usize| -> RGBColor {
        match color_by {
            ColorBy::Thread => thread_color(index),
            _ => gradient(index as f64 / (SIZE_BUCKETS - 1) as f64),
        }
    };

    let mut svg = String::new();
    let mut info = RenderInfo {
        x_axis,
        color_by,
        allocations: tl.allocations.len(),
        rects_drawn: 0,
        merged: 0,
        merged_runs: 0,
        line_points: 0,
        collapsed_gaps: map.collapsed,
    };
    let (bytes_div, bytes_unit) = binary_unit(peak);
    let (addr_div, addr_unit) = binary_unit(span);
    let mut legend: Vec<(LegendMark, String)> = vec![(LegendMark::Line(BLUE), "bytes in use".into())];
    {
        let root = SVGBackend::with_string(&mut svg, (opts.width.max(300), opts.height.max(300)))
            .into_drawing_area();
        root.fill(&WHITE).map_err(chart_err("timeline"))?;
        let (head, body) = root.split_vertically(56);
        head.draw(&Text::new(
            opts.title.clone(),
            (12, 8),
            ("sans-serif", 20).into_font(),
        ))
        .map_err(chart_err("timeline title"))?;
        let mut subtitle = format!(
            "peak {} | {} allocations, {} never freed | {} failed | {} unknown frees | {} thread(s) | fragmentation at peak {:.3}",
            human_bytes(peak),
            stats.allocations,
            stats.never_freed,
            stats.failures,
            stats.unknown_frees,
            stats.threads,
            stats.fragmentation_at_peak.ratio()
        );
        if let Some(b) = stats.address_base {
            subtitle.push_str(&format!(" | addresses relative to {b:#x}"));
        }
        if map.collapsed > 0 {
            subtitle.push_str(&format!(" | {} unused address gap(s) collapsed", map.collapsed));
        }
        head.draw(&Text::new(subtitle, (12, 34), ("sans-serif", 13).into_font()))
            .map_err(chart_err("timeline title"))?;
        let (body_width, body_height) = body.dim_in_pixel();
        let (main, legend_area) = body.split_horizontally(body_width.saturating_sub(LEGEND_WIDTH));
        let (top, bottom) = main.split_vertically(body_height * 35 / 100);

        // Panel 1: bytes in use.
        let mut c1 = ChartBuilder::on(&top)
            .caption("Bytes in use", ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0f64..(peak / bytes_div * 1.08).max(1e-9))
            .map_err(chart_err("bytes panel"))?;
        c1.configure_mesh()
            .x_desc(x_desc)
            .y_desc(format!("bytes in use ({bytes_unit})"))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(chart_err("bytes panel"))?;
        let samples = line_samples(&xs, &tl.in_use, opts.max_points);
        let mut points = Vec::with_capacity(samples.len() * 2 + 2);
        points.push((x0, 0.0));
        let mut prev = 0.0;
        for &i in &samples {
            let y = tl.in_use[i] as f64 / bytes_div;
            points.push((xs[i], prev));
            points.push((xs[i], y));
            prev = y;
        }
        points.push((x1, prev));
        info.line_points = points.len();
        c1.draw_series(LineSeries::new(points, BLUE.stroke_width(1)))
            .map_err(chart_err("bytes panel"))?;
        if !tl.failures.is_empty() {
            let (pw, _) = c1.plotting_area().dim_in_pixel();
            let sx = f64::from(pw.max(1)) / (x1 - x0);
            let mut seen = std::collections::HashSet::new();
            let marks: Vec<(f64, f64)> = tl
                .failures
                .iter()
                .filter(|f| seen.insert(((xs[f.index] - x0) * sx) as i64))
                .map(|f| {
                    (
                        xs[f.index],
                        if f.index > 0 {
                            tl.in_use[f.index - 1] as f64 / bytes_div
                        } else {
                            0.0
                        },
                    )
                })
                .collect();
            c1.draw_series(marks.into_iter().map(|p| Cross::new(p, 3, RED.stroke_width(1))))
                .map_err(chart_err("bytes panel"))?;
            legend.push((
                LegendMark::Cross(RED),
                format!("failed allocation ({})", tl.failures.len()),
            ));
        }

        // Panel 2: address space.
        let mut c2 = ChartBuilder::on(&bottom)
            .caption(
                "Address space: one rectangle per allocation, [allocated, freed) x [address, address + size)",
                ("sans-serif", 15),
            )
            .margin(8)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0f64..span * HEADROOM / addr_div)
            .map_err(chart_err("address panel"))?;
        c2.configure_mesh()
            .x_desc(x_desc)
            .y_desc(if map.collapsed > 0 {
                format!("address - lowest, gaps collapsed ({addr_unit})")
            } else {
                format!("address - lowest address ({addr_unit})")
            })
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(chart_err("address panel"))?;
        let (pw, ph) = c2.plotting_area().dim_in_pixel();
        let (pw, ph) = (i64::from(pw.max(1)), i64::from(ph.max(1)));
        let sx = pw as f64 / (x1 - x0);
        // Rectangles stay below `span`; failure ticks go into the headroom above.
        let sy = ph as f64 / (span * HEADROOM);
        let tick = ((ph as f64 * (1.0 - 1.0 / HEADROOM)) as i64).clamp(2, 12);
        let mut rects: Vec<PixelRect> = tl
            .allocations
            .iter()
            .map(|a| {
                let xs0 = xs[a.start];
                let xe = a.end.map_or(x1, |e| xs[e]);
                let px0 = (((xs0 - x0) * sx).floor() as i64).clamp(0, pw - 1);
                let px1 = (((xe - x0) * sx).ceil() as i64).clamp(px0 + 1, pw);
                let off = map.offset(a.pointer);
                let py0 = ((off * sy).floor() as i64).clamp(0, ph - 1);
                let py1 = (((off + a.size as f64) * sy).ceil() as i64).clamp(py0 + 1, ph);
                let color = match color_by {
                    ColorBy::Thread => a.thread,
                    _ => size_bucket(a.size),
                };
                (px0, px1, py0, py1, color)
            })
            .collect();
        rects.sort_unstable();
        rects.dedup();
        let mut leftover: Vec<PixelRect> = Vec::new();
        let budget = opts.max_rects.max(1);
        if rects.len() > budget {
            // Keep the largest; the rest become occupancy-grid runs.
            rects.sort_by_key(|r| std::cmp::Reverse((r.1 - r.0) * (r.3 - r.2)));
            leftover = rects.split_off(budget);
            info.merged = leftover.len();
        }
        info.rects_drawn = rects.len();
        let to_data = |px: i64, py: i64| (x0 + px as f64 / sx, py as f64 / sy / addr_div);
        c2.draw_series(rects.iter().map(|&(px0, px1, py0, py1, c)| {
            Rectangle::new([to_data(px0, py0), to_data(px1, py1)], color_of(c).filled())
        }))
        .map_err(chart_err("address panel"))?;
        if !leftover.is_empty() {
            let runs = occupancy_runs(&leftover, pw, ph, budget / 2);
            info.merged_runs = runs.len();
            c2.draw_series(runs.iter().map(|&(px0, px1, py0, py1, c)| {
                Rectangle::new(
                    [to_data(px0, py0), to_data(px1, py1)],
                    color_of(c).mix(0.75).filled(),
                )
            }))
            .map_err(chart_err("address panel"))?;
        }
        // Collapsed gaps: dashed grey lines.
        for &y in &map.collapsed_at {
            let y = y / addr_div;
            c2.draw_series(DashedLineSeries::new(
                vec![(x0, y), (x1, y)],
                6,
                4,
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(chart_err("address panel"))?;
        }
        if map.collapsed > 0 {
            legend.push((
                LegendMark::Line(RGBColor(128, 128, 128)),
                "unused address gap, collapsed".into(),
            ));
        }
        // Failures: short red ticks along the top of the address panel.
        let mut columns: Vec<i64> = tl
            .failures
            .iter()
            .map(|f| (((xs[f.index] - x0) * sx) as i64).clamp(0, pw - 1))
            .collect();
        columns.sort_unstable();
        columns.dedup();
        c2.draw_series(
            columns
                .iter()
                .map(|&px| Rectangle::new([to_data(px, ph - tick), to_data(px + 1, ph)], RED.filled())),
        )
        .map_err(chart_err("address panel"))?;
        if !columns.is_empty() {
            legend.push((LegendMark::Tick(RED), "failed allocation (top ticks)".into()));
        }
        // Legend of the colours.
        match color_by {
            ColorBy::Thread => {
                for (i, t) in tl.threads.iter().take(THREAD_COLORS.len()).enumerate() {
                    legend.push((LegendMark::Box(thread_color(i)), format!("thread {t}")));
                }
                if tl.threads.len() > THREAD_COLORS.len() {
                    legend.push((
                        LegendMark::Nothing,
                        format!(
                            "+{} threads (colours repeat)",
                            tl.threads.len() - THREAD_COLORS.len()
                        ),
                    ));
                }
            }
            _ if tl.allocations.is_empty() => {}
            _ => {
                let steps = if lmax > lmin { 6 } else { 1 };
                for k in 0..steps {
                    let t = if steps > 1 {
                        k as f64 / (steps - 1) as f64
                    } else {
                        0.5
                    };
                    let size = (lmin + t * (lmax - lmin)).exp2();
                    let bucket = if steps > 1 {
                        (t * (SIZE_BUCKETS - 1) as f64).round() as usize
                    } else {
                        SIZE_BUCKETS / 2
                    };
                    legend.push((
                        LegendMark::Box(color_of(bucket)),
                        format!("size {}", human_bytes(size)),
                    ));
                }
            }
        }
        if !leftover.is_empty() {
            legend.push((
                LegendMark::Nothing,
                format!("{} small blocks merged", leftover.len()),
            ));
            legend.push((LegendMark::Nothing, "into a grid (paler colours)".into()));
        }
        draw_legend(&legend_area, &legend)?;
        root.present().map_err(chart_err("timeline"))?;
    }
    Ok((svg, info))
}

const LEGEND_WIDTH: u32 = 250;

/// The address axis reaches this much past the span, for the failure ticks.
const HEADROOM: f64 = 1.03;

/// A legend entry's symbol.
enum LegendMark {
    Line(RGBColor),
    Cross(RGBColor),
    Tick(RGBColor),
    Box(RGBColor),
    Nothing,
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    entries: &[(LegendMark, String)],
) -> Result<(), ReportError> {
    let err = chart_err("legend");
    let font = ("sans-serif", 13).into_font();
    let mut y = 40;
    for (mark, label) in entries {
        match *mark {
            LegendMark::Line(c) => area.draw(&PathElement::new(vec![(8, y), (26, y)], c.stroke_width(2))),
            LegendMark::Cross(c) => area.draw(&Cross::new((17, y), 4, c.stroke_width(2))),
            LegendMark::Tick(c) => area.draw(&Rectangle::new([(16, y - 7), (18, y + 7)], c.filled())),
            LegendMark::Box(c) => {
                area.draw(&Rectangle::new([(8, y - 6), (26, y + 6)], c.filled()))
                    .map_err(&err)?;
                area.draw(&Rectangle::new([(8, y - 6), (26, y + 6)], BLACK.mix(0.3)))
            }
            LegendMark::Nothing => Ok(()),
        }
        .map_err(&err)?;
        area.draw(&Text::new(label.clone(), (34, y - 7), font.clone()))
            .map_err(&err)?;
        y += 20;
    }
    Ok(())
}

/// A binary unit that keeps axis numbers readable: (bytes per unit, name).
fn binary_unit(max: f64) -> (f64, &'static str) {
    const UNITS: [(f64, &str); 5] = [
        (1_099_511_627_776.0, "TiB"),
        (1_073_741_824.0, "GiB"),
        (1_048_576.0, "MiB"),
        (1024.0, "KiB"),
        (1.0, "B"),
    ];
    UNITS
        .iter()
        .copied()
        .find(|(d, _)| max >= *d)
        .unwrap_or((1.0, "B"))
}

/// Merges rectangles into horizontal runs of an occupancy grid (each cell
/// takes the colour of the last rectangle covering it) whose cell grows until
/// there are at most `max_runs` runs.
fn occupancy_runs(rects: &[PixelRect], pw: i64, ph: i64, max_runs: usize) -> Vec<PixelRect> {
    let mut cell = 2i64;
    loop {
        let cols = (pw + cell - 1) / cell;
        let rows = (ph + cell - 1) / cell;
        // 0 = empty, c + 1 = colour c.
        let mut grid = vec![0u32; (cols * rows) as usize];
        for &(px0, px1, py0, py1, color) in rects {
            for r in (py0 / cell)..=((py1 - 1) / cell).min(rows - 1) {
                for c in (px0 / cell)..=((px1 - 1) / cell).min(cols - 1) {
                    grid[(r * cols + c) as usize] = u32::try_from(color + 1).unwrap_or(u32::MAX);
                }
            }
        }
        let mut runs = Vec::new();
        for r in 0..rows {
            let mut c = 0;
            while c < cols {
                let value = grid[(r * cols + c) as usize];
                let start = c;
                while c < cols && grid[(r * cols + c) as usize] == value {
                    c += 1;
                }
                if value != 0 {
                    runs.push((
                        start * cell,
                        (c * cell).min(pw),
                        r * cell,
                        ((r + 1) * cell).min(ph),
                        value as usize - 1,
                    ));
                }
            }
        }
        if runs.len() <= max_runs.max(1) || cell >= pw.max(ph) {
            return runs;
        }
        cell *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmentation_of_blocks() {
        // [0,10) [20,30) [35,40): holes 10 and 5.
        let f = fragmentation(&[(20, 10), (0, 10), (35, 5)]);
        assert_eq!((f.low, f.high, f.free_bytes, f.largest_gap), (0, 40, 15, 10));
        assert!((f.ratio() - (1.0 - 10.0 / 15.0)).abs() < 1e-12);
        assert_eq!(f.holes, 2);
        assert_eq!(fragmentation(&[]).ratio(), 0.0);
        assert_eq!(fragmentation(&[(0, 10), (5, 10)]).free_bytes, 0);
    }

    #[test]
    fn samples_keep_the_peak() {
        let xs: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        let ys: Vec<u64> = (0..100_000u64)
            .map(|i| if i == 54_321 { 1_000_000 } else { i % 1000 })
            .collect();
        let kept = line_samples(&xs, &ys, 2000);
        assert!(kept.len() <= 2000);
        assert!(kept.contains(&54_321));
        assert_eq!(kept.first(), Some(&0));
        assert_eq!(kept.last(), Some(&99_999));
    }
}
