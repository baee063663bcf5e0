//! What the timeline's picture shows, computed from a [`Timeline`] without
//! drawing: the x axis and each event's position on it, the step line of
//! bytes in use (sampled), the failure marks, and the allocations'
//! rectangles snapped to the address panel's pixel grid, with those past
//! the budget merged into runs of an occupancy grid. Colours are indices
//! here (a thread, or a size bucket); the SVG drawing (`svg.rs`) gives them their
//! colours and draws the panels.
#![forbid(unsafe_code)]

use super::model::{AddressMap, Allocation, Timeline};

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

/// Options of [`render_svg`](super::render_svg).
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

/// What [`render_svg`](super::render_svg) drew.
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

/// Size colour buckets over log2 of the sizes present.
pub const SIZE_BUCKETS: usize = 16;

/// The address axis reaches this much past the span, for the failure ticks.
pub const HEADROOM: f64 = 1.03;

/// A rectangle on the pixel grid of the address panel, with a colour index:
/// `(x0, x1, y0, y1, colour)`, pixels from the panel's bottom left.
pub type PixelRect = (i64, i64, i64, i64, usize);

/// The x axis both panels share.
#[derive(Debug, Clone, PartialEq)]
pub struct XFrame {
    /// The axis used ([`XAxis::Auto`] resolved).
    pub axis: XAxis,
    /// The x of each event.
    pub xs: Vec<f64>,
    /// The left end of the axis.
    pub x0: f64,
    /// The right end of the axis (past `x0`).
    pub x1: f64,
}

impl XFrame {
    /// The x axis of `tl` for the choice `axis`: time if asked for, or
    /// (`Auto`) if the log has times that advance; else the event index.
    pub fn new(tl: &Timeline, axis: XAxis) -> XFrame {
        let duration = tl.times.last().copied().unwrap_or(0.0);
        let x_axis = match axis {
            XAxis::Auto if tl.has_time && duration > 0.0 => XAxis::Time,
            XAxis::Auto => XAxis::Index,
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
        XFrame {
            axis: x_axis,
            xs,
            x0,
            x1,
        }
    }

    /// The axis' description.
    pub fn description(&self) -> &'static str {
        match self.axis {
            XAxis::Time => "seconds after the first event",
            _ => "event index",
        }
    }
}

/// The colouring for the choice `color_by`: by thread when asked for, or
/// (`Auto`) when the log has several threads; else by size.
pub fn resolve_color_by(tl: &Timeline, color_by: ColorBy) -> ColorBy {
    match color_by {
        ColorBy::Auto if tl.threads.len() > 1 => ColorBy::Thread,
        ColorBy::Auto => ColorBy::Size,
        other => other,
    }
}

/// The size colour scale: log2 of the smallest and largest size present.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SizeScale {
    lmin: f64,
    lmax: f64,
}

impl SizeScale {
    /// The scale over the sizes of `allocations`.
    pub fn new(allocations: &[Allocation]) -> SizeScale {
        let (lmin, lmax) = allocations.iter().fold((f64::MAX, f64::MIN), |(lo, hi), a| {
            let l = (a.size.max(1) as f64).log2();
            (lo.min(l), hi.max(l))
        });
        SizeScale { lmin, lmax }
    }

    /// The bucket (below [`SIZE_BUCKETS`]) of an allocation of `size` bytes.
    pub fn bucket(&self, size: u64) -> usize {
        let (lmin, lmax) = (self.lmin, self.lmax);
        if lmax <= lmin {
            return SIZE_BUCKETS / 2;
        }
        let t = ((size.max(1) as f64).log2() - lmin) / (lmax - lmin);
        ((t * (SIZE_BUCKETS - 1) as f64).round() as usize).min(SIZE_BUCKETS - 1)
    }

    /// The legend's steps: (bucket, size in bytes), six across the range,
    /// or one when every size is the same.
    pub fn legend_steps(&self) -> Vec<(usize, f64)> {
        let (lmin, lmax) = (self.lmin, self.lmax);
        let steps = if lmax > lmin { 6 } else { 1 };
        (0..steps)
            .map(|k| {
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
                (bucket, size)
            })
            .collect()
    }
}

/// Samples of the step line: events kept after bucketing (first, min, max, last per bucket).
pub fn line_samples(xs: &[f64], ys: &[u64], max_points: usize) -> Vec<usize> {
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

/// The step line of bytes in use (divided by `bytes_div`), sampled to
/// about `max_points` events, from `(x0, 0)` to `(x1, last)`.
pub fn step_line(tl: &Timeline, frame: &XFrame, max_points: usize, bytes_div: f64) -> Vec<(f64, f64)> {
    let xs = &frame.xs;
    let samples = line_samples(xs, &tl.in_use, max_points);
    let mut points = Vec::with_capacity(samples.len() * 2 + 2);
    points.push((frame.x0, 0.0));
    let mut prev = 0.0;
    for &i in &samples {
        let y = tl.in_use[i] as f64 / bytes_div;
        points.push((xs[i], prev));
        points.push((xs[i], y));
        prev = y;
    }
    points.push((frame.x1, prev));
    points
}

/// The failure marks of the bytes panel: one per pixel column of a panel
/// `width` pixels wide, at the bytes in use (divided by `bytes_div`) before
/// the failure.
pub fn failure_marks(tl: &Timeline, frame: &XFrame, width: u32, bytes_div: f64) -> Vec<(f64, f64)> {
    let (xs, x0) = (&frame.xs, frame.x0);
    let sx = f64::from(width.max(1)) / (frame.x1 - x0);
    let mut seen = std::collections::HashSet::new();
    tl.failures
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
        .collect()
}

/// The address panel's pixel grid: its size and the scales from the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PixelGrid {
    /// Width in pixels (at least 1).
    pub pw: i64,
    /// Height in pixels (at least 1).
    pub ph: i64,
    /// Pixels per x unit.
    pub sx: f64,
    /// Pixels per byte of the address axis (its `span` plus [`HEADROOM`]).
    pub sy: f64,
}

impl PixelGrid {
    /// The grid of a plotting area of `width` x `height` pixels showing
    /// `frame` and an address axis of `span` bytes. Rectangles stay below
    /// `span`; failure ticks go into the headroom above.
    pub fn new(frame: &XFrame, span: f64, width: u32, height: u32) -> PixelGrid {
        let (pw, ph) = (i64::from(width.max(1)), i64::from(height.max(1)));
        PixelGrid {
            pw,
            ph,
            sx: pw as f64 / (frame.x1 - frame.x0),
            sy: ph as f64 / (span * HEADROOM),
        }
    }

    /// Height in pixels of a failure tick.
    pub fn tick(&self) -> i64 {
        ((self.ph as f64 * (1.0 - 1.0 / HEADROOM)) as i64).clamp(2, 12)
    }

    /// The data coordinates of pixel `(px, py)`, the address divided by `addr_div`.
    pub fn data_point(&self, frame: &XFrame, px: i64, py: i64, addr_div: f64) -> (f64, f64) {
        (frame.x0 + px as f64 / self.sx, py as f64 / self.sy / addr_div)
    }

    /// The pixel column of `x`.
    pub fn column(&self, frame: &XFrame, x: f64) -> i64 {
        (((x - frame.x0) * self.sx) as i64).clamp(0, self.pw - 1)
    }
}

/// The allocations' rectangles on the grid, snapped and deduplicated, with
/// a colour index (the thread, or the size bucket). Past `budget`, the
/// largest are kept (first) and the rest returned apart (second), for
/// [`occupancy_runs`].
pub fn allocation_rects(
    tl: &Timeline,
    frame: &XFrame,
    grid: &PixelGrid,
    map: &AddressMap,
    color_by: ColorBy,
    sizes: &SizeScale,
    budget: usize,
) -> (Vec<PixelRect>, Vec<PixelRect>) {
    let PixelGrid { pw, ph, sx, sy } = *grid;
    let (xs, x0, x1) = (&frame.xs, frame.x0, frame.x1);
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
                _ => sizes.bucket(a.size),
            };
            (px0, px1, py0, py1, color)
        })
        .collect();
    rects.sort_unstable();
    rects.dedup();
    let mut leftover: Vec<PixelRect> = Vec::new();
    let budget = budget.max(1);
    if rects.len() > budget {
        // Keep the largest; the rest become occupancy-grid runs.
        rects.sort_by_key(|r| std::cmp::Reverse((r.1 - r.0) * (r.3 - r.2)));
        leftover = rects.split_off(budget);
    }
    (rects, leftover)
}

/// The pixel columns of the failures on the grid, ascending, once each.
pub fn failure_columns(tl: &Timeline, frame: &XFrame, grid: &PixelGrid) -> Vec<i64> {
    let mut columns: Vec<i64> = tl
        .failures
        .iter()
        .map(|f| grid.column(frame, frame.xs[f.index]))
        .collect();
    columns.sort_unstable();
    columns.dedup();
    columns
}

/// A binary unit that keeps axis numbers readable: (bytes per unit, name).
pub fn binary_unit(max: f64) -> (f64, &'static str) {
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
pub fn occupancy_runs(rects: &[PixelRect], pw: i64, ph: i64, max_runs: usize) -> Vec<PixelRect> {
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
