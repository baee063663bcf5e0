//! Benchmark charts (SVG) and the markdown summary of the ratios.
//!
//! * [`alloc_chart_svg`]: ns per operation, log scale, bars grouped by
//!   workload, one colour per (impl, resource): the same hue for a resource,
//!   darker for the project, lighter for RMM;
//! * [`ratio_chart_svg`]: project ns/op divided by RMM ns/op for each
//!   (resource, workload) pair on a log scale, with a line at 1.0;
//! * [`kernel_chart_svg`]: kernel throughput of the project against CuPy and
//!   PyTorch, one panel per unit (GB/s, Gkeys/s, ...);
//! * [`summary_markdown`]: the same ratios as tables.
//!
//! Repeated rows (same impl and key, e.g. from several runs concatenated) are
//! reduced to their median; rows with a non-finite or non-positive value are
//! left out and counted.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::csv::{AllocRow, KernelRow};
use super::{write_text, ReportError};

/// The `impl` of the allocator anchor (the real RMM).
pub const RMM_IMPL: &str = "rmm";
/// The `impl`s of the kernel anchors.
pub const KERNEL_ANCHORS: [&str; 2] = ["cupy", "torch"];
/// Resources in the order WORKLOADS.md lists them; others follow alphabetically.
pub const RESOURCE_ORDER: [&str; 5] = ["cuda", "cuda_async", "pool", "binning", "arena"];

/// The (workload, params) rows of WORKLOADS.md in its order; others follow
/// in order of appearance.
pub const WORKLOAD_ORDER: [(&str, &str); 6] = [
    ("random", "n=100000 max=1MiB"),
    ("random", "n=10000 max=64MiB"),
    ("random", "n=1000 max=4096MiB"),
    ("hot_pair", "size=256"),
    ("hot_pair", "size=1048576"),
    ("threads8", "n=20000 max=1MiB"),
];

/// Sorts (workload, params) groups into [`WORKLOAD_ORDER`], keeping the
/// order of the others (after the known ones, grouped by workload name).
fn sort_groups(groups: &mut [(String, String)]) {
    let names: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
    groups.sort_by_key(|(w, p)| {
        let known = WORKLOAD_ORDER.iter().position(|(a, b)| a == w && b == p);
        let first_name = names.iter().position(|n| n == w).unwrap_or(usize::MAX);
        (known.unwrap_or(usize::MAX), first_name)
    });
}

/// Hues per resource (cuda, cuda_async, pool, binning, arena, then others).
const HUES: [(u8, u8, u8); 8] = [
    (127, 127, 127),
    (23, 160, 190),
    (31, 100, 200),
    (44, 160, 44),
    (230, 120, 20),
    (148, 103, 189),
    (140, 86, 75),
    (200, 60, 150),
];

/// One allocator measurement after merging repeated rows.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocPoint {
    /// The implementation.
    pub impl_name: String,
    /// The resource.
    pub resource: String,
    /// The workload.
    pub workload: String,
    /// The workload's parameters.
    pub params: String,
    /// Median ns per op of the rows merged.
    pub ns_per_op: f64,
    /// Largest `failed` of the rows merged.
    pub failed: u64,
    /// Rows merged.
    pub runs: usize,
}

/// Project ns/op over RMM ns/op for one (impl, resource, workload, params).
#[derive(Debug, Clone, PartialEq)]
pub struct AllocRatio {
    /// The project's implementation name.
    pub impl_name: String,
    /// The resource.
    pub resource: String,
    /// The workload.
    pub workload: String,
    /// The workload's parameters.
    pub params: String,
    /// RMM's ns per op.
    pub rmm_ns: f64,
    /// The project's ns per op.
    pub project_ns: f64,
    /// `project_ns / rmm_ns`: below 1.0 the project is faster.
    pub ratio: f64,
    /// RMM's failed allocations.
    pub rmm_failed: u64,
    /// The project's failed allocations.
    pub project_failed: u64,
}

/// Project throughput over the best anchor's for one (impl, kernel, params).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRatio {
    /// The project's implementation name.
    pub impl_name: String,
    /// The kernel.
    pub kernel: String,
    /// Its parameters.
    pub params: String,
    /// The best anchor (`cupy` or `torch`).
    pub anchor: String,
    /// The anchor's throughput.
    pub anchor_value: f64,
    /// The project's throughput.
    pub project_value: f64,
    /// The unit of both.
    pub unit: String,
    /// `project_value / anchor_value`: above 1.0 the project is faster.
    pub ratio: f64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

pub(super) fn resource_rank(resource: &str) -> (usize, String) {
    let rank = RESOURCE_ORDER
        .iter()
        .position(|r| *r == resource)
        .unwrap_or(RESOURCE_ORDER.len());
    (rank, resource.to_string())
}

/// (impl, resource or kernel, workload or params, params or unit).
type Key4 = (String, String, String, String);

/// Merges repeated allocator rows (median ns/op), dropping non-finite or
/// non-positive values. Returns the points in file order of first appearance
/// and the number of rows dropped.
pub fn alloc_points(rows: &[AllocRow]) -> (Vec<AllocPoint>, usize) {
    let mut order: Vec<Key4> = Vec::new();
    let mut groups: HashMap<Key4, (Vec<f64>, u64)> = HashMap::new();
    let mut dropped = 0;
    for r in rows {
        if !(r.ns_per_op.is_finite() && r.ns_per_op > 0.0) {
            dropped += 1;
            continue;
        }
        let key = (
            r.impl_name.clone(),
            r.resource.clone(),
            r.workload.clone(),
            r.params.clone(),
        );
        let entry = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (Vec::new(), 0)
        });
        entry.0.push(r.ns_per_op);
        entry.1 = entry.1.max(r.failed);
    }
    let points = order
        .into_iter()
        .filter_map(|key| {
            let (mut values, failed) = groups.remove(&key)?;
            let runs = values.len();
            Some(AllocPoint {
                ns_per_op: median(&mut values),
                impl_name: key.0,
                resource: key.1,
                workload: key.2,
                params: key.3,
                failed,
                runs,
            })
        })
        .collect();
    (points, dropped)
}

/// The ratios of every project implementation to RMM, for each
/// (resource, workload, params) both measured; sorted by impl, resource
/// (WORKLOADS.md order) and workload order of appearance.
pub fn alloc_ratios(points: &[AllocPoint]) -> Vec<AllocRatio> {
    let workloads = workload_order(points);
    let rmm: HashMap<(&str, &str, &str), &AllocPoint> = points
        .iter()
        .filter(|p| p.impl_name == RMM_IMPL)
        .map(|p| ((p.resource.as_str(), p.workload.as_str(), p.params.as_str()), p))
        .collect();
    let mut out: Vec<AllocRatio> = points
        .iter()
        .filter(|p| p.impl_name != RMM_IMPL)
        .filter_map(|p| {
            let a = rmm.get(&(p.resource.as_str(), p.workload.as_str(), p.params.as_str()))?;
            Some(AllocRatio {
                impl_name: p.impl_name.clone(),
                resource: p.resource.clone(),
                workload: p.workload.clone(),
                params: p.params.clone(),
                rmm_ns: a.ns_per_op,
                project_ns: p.ns_per_op,
                ratio: p.ns_per_op / a.ns_per_op,
                rmm_failed: a.failed,
                project_failed: p.failed,
            })
        })
        .collect();
    let wrank = |w: &str, p: &str| {
        workloads
            .iter()
            .position(|(a, b)| a == w && b == p)
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| {
        (
            a.impl_name.as_str(),
            resource_rank(&a.resource),
            wrank(&a.workload, &a.params),
        )
            .cmp(&(
                b.impl_name.as_str(),
                resource_rank(&b.resource),
                wrank(&b.workload, &b.params),
            ))
    });
    out
}

/// Project kernel throughput over the best anchor's, for each (kernel, params)
/// both measured. Rows with a non-finite or non-positive throughput are ignored.
pub fn kernel_ratios(rows: &[KernelRow]) -> Vec<KernelRatio> {
    let points = kernel_points(rows);
    let mut best: HashMap<(&str, &str), &KernelPoint> = HashMap::new();
    for p in points.iter().filter(|p| is_kernel_anchor(&p.impl_name)) {
        let slot = best.entry((p.kernel.as_str(), p.params.as_str())).or_insert(p);
        if p.value > slot.value {
            *slot = p;
        }
    }
    points
        .iter()
        .filter(|p| !is_kernel_anchor(&p.impl_name))
        .filter_map(|p| {
            let a = best.get(&(p.kernel.as_str(), p.params.as_str()))?;
            Some(KernelRatio {
                impl_name: p.impl_name.clone(),
                kernel: p.kernel.clone(),
                params: p.params.clone(),
                anchor: a.impl_name.clone(),
                anchor_value: a.value,
                project_value: p.value,
                unit: p.unit.clone(),
                ratio: p.value / a.value,
            })
        })
        .collect()
}

fn is_kernel_anchor(name: &str) -> bool {
    KERNEL_ANCHORS.contains(&name)
}

#[derive(Debug, Clone)]
struct KernelPoint {
    impl_name: String,
    kernel: String,
    params: String,
    unit: String,
    value: f64,
}

fn kernel_points(rows: &[KernelRow]) -> Vec<KernelPoint> {
    let mut order = Vec::new();
    let mut groups: HashMap<Key4, Vec<f64>> = HashMap::new();
    for r in rows
        .iter()
        .filter(|r| r.throughput.is_finite() && r.throughput > 0.0)
    {
        let key = (
            r.impl_name.clone(),
            r.kernel.clone(),
            r.params.clone(),
            r.unit.clone(),
        );
        groups
            .entry(key.clone())
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(r.throughput);
    }
    order
        .into_iter()
        .filter_map(|key| {
            let mut values = groups.remove(&key)?;
            Some(KernelPoint {
                value: median(&mut values),
                impl_name: key.0,
                kernel: key.1,
                params: key.2,
                unit: key.3,
            })
        })
        .collect()
}

fn workload_order(points: &[AllocPoint]) -> Vec<(String, String)> {
    let mut order: Vec<(String, String)> = Vec::new();
    // The anchor's order first (it runs every workload), then the rest.
    for pass in [true, false] {
        for p in points.iter().filter(|p| (p.impl_name == RMM_IMPL) == pass) {
            let key = (p.workload.clone(), p.params.clone());
            if !order.contains(&key) {
                order.push(key);
            }
        }
    }
    sort_groups(&mut order);
    order
}

/// Impls in display order: project implementations (alphabetical), then RMM.
pub(super) fn impl_order<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut set: Vec<String> = names.map(str::to_string).collect();
    set.sort();
    set.dedup();
    set.sort_by_key(|n| (n == RMM_IMPL || is_kernel_anchor(n), n.clone()));
    set
}

fn hue(index: usize) -> RGBColor {
    let (r, g, b) = HUES[index % HUES.len()];
    RGBColor(r, g, b)
}

/// The hue of a resource lightened for the `variant`-th implementation of
/// `variants` (0 = the project, full colour; the last = RMM, lightest).
pub(super) fn shade(base: RGBColor, variant: usize, variants: usize) -> RGBColor {
    if variants <= 1 {
        return base;
    }
    let t = 0.6 * variant as f64 / (variants - 1) as f64;
    let mix = |c: u8| (f64::from(c) + (255.0 - f64::from(c)) * t).round() as u8;
    RGBColor(mix(base.0), mix(base.1), mix(base.2))
}

pub(super) fn chart_err<E: std::error::Error>(what: &str) -> impl Fn(E) -> ReportError + '_ {
    move |e| ReportError::Chart {
        what: what.into(),
        message: e.to_string(),
    }
}

/// Bounds of a log axis around `values` (whole powers of ten).
pub(super) fn log_bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return (0.1, 10.0);
    }
    let lo = 10f64.powf((lo * 0.9).log10().floor());
    let hi = 10f64.powf((hi * 1.5).log10().ceil());
    (lo, if hi > lo { hi } else { lo * 10.0 })
}

fn log_label(v: f64) -> String {
    if !(1e-2..1e4).contains(&v) {
        format!("{v:.0e}")
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Series of a grouped bar chart: label, colour, and a value per group.
struct BarSeries {
    label: String,
    color: RGBColor,
    values: Vec<Option<f64>>,
}

/// How a grouped bar chart is drawn.
struct BarStyle<'a> {
    caption: &'a str,
    y_desc: &'a str,
    /// Log y axis.
    log: bool,
    /// Print each bar's value above (or below) it.
    value_labels: bool,
    /// Bars grow from this value (e.g. 1.0 for ratios) instead of the axis bottom,
    /// and a labelled line is drawn there.
    baseline: Option<(f64, &'a str)>,
}

const LEGEND_WIDTH: u32 = 250;

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.01 {
        format!("{v:.2}")
    } else {
        format!("{v:.1e}")
    }
}

/// Where each bar goes: for each group, the series that have a value there,
/// centred in the group; all bars have the same width.
fn bar_slots(groups: usize, series: &[BarSeries]) -> (f64, Vec<Vec<(usize, f64)>>) {
    let present: Vec<Vec<usize>> = (0..groups)
        .map(|g| {
            (0..series.len())
                .filter(|&s| series[s].values[g].is_some())
                .collect()
        })
        .collect();
    let widest = present.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let width = 0.84 / widest as f64;
    let slots = present
        .iter()
        .enumerate()
        .map(|(g, list)| {
            let left = g as f64 + 0.5 - width * list.len() as f64 / 2.0;
            list.iter()
                .enumerate()
                .map(|(k, &s)| (s, left + k as f64 * width))
                .collect()
        })
        .collect();
    (width, slots)
}

/// Draws the bars, value labels, baseline and group labels on a built chart.
fn draw_bars<DB: DrawingBackend, Y: Ranged<ValueType = f64>>(
    area: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<DB, Cartesian2d<RangedCoordf64, Y>>,
    groups: &[(String, String)],
    series: &[BarSeries],
    style: &BarStyle,
    bottom: f64,
) -> Result<(), ReportError> {
    let caption = style.caption;
    let (width, slots) = bar_slots(groups.len(), series);
    let from = style.baseline.map_or(bottom, |b| b.0);
    let mut bars = Vec::new();
    let mut labels = Vec::new();
    for (g, list) in slots.iter().enumerate() {
        for &(s, x) in list {
            let Some(v) = series[s].values[g] else { continue };
            bars.push(Rectangle::new(
                [(x, from), (x + width, v)],
                series[s].color.filled(),
            ));
            if style.value_labels {
                let vpos = if v >= from { VPos::Bottom } else { VPos::Top };
                let text_style =
                    TextStyle::from(("sans-serif", 11).into_font()).pos(Pos::new(HPos::Center, vpos));
                labels.push(Text::new(fmt_value(v), (x + width / 2.0, v), text_style));
            }
        }
    }
    chart.draw_series(bars).map_err(chart_err(caption))?;
    chart.draw_series(labels).map_err(chart_err(caption))?;
    if let Some((y, _)) = style.baseline {
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, y), (groups.len().max(1) as f64, y)],
                BLACK.stroke_width(2),
            ))
            .map_err(chart_err(caption))?;
    }
    // Group labels (workload, then params) under each group.
    let text_style = TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    let (ax, ay) = area.get_base_pixel();
    for (i, (first, second)) in groups.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, bottom));
        let (px, py) = (px - ax, py - ay);
        area.draw(&Text::new(first.clone(), (px, py + 8), text_style.clone()))
            .map_err(chart_err(caption))?;
        area.draw(&Text::new(second.clone(), (px, py + 24), text_style.clone()))
            .map_err(chart_err(caption))?;
    }
    Ok(())
}

/// Draws the legend (one swatch per series, then the baseline) on `area`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[BarSeries],
    style: &BarStyle,
) -> Result<(), ReportError> {
    let text = ("sans-serif", 13).into_font();
    let mut y = 50;
    for s in series {
        area.draw(&Rectangle::new([(8, y - 6), (24, y + 6)], s.color.filled()))
            .map_err(chart_err("legend"))?;
        area.draw(&Text::new(s.label.clone(), (32, y - 7), text.clone()))
            .map_err(chart_err("legend"))?;
        y += 20;
    }
    if let Some((_, label)) = style.baseline {
        area.draw(&PathElement::new(vec![(8, y), (24, y)], BLACK.stroke_width(2)))
            .map_err(chart_err("legend"))?;
        area.draw(&Text::new(label.to_string(), (32, y - 7), text))
            .map_err(chart_err("legend"))?;
    }
    Ok(())
}

/// Draws a grouped bar chart with its legend on the right of `area`.
fn grouped_bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    groups: &[(String, String)],
    series: &[BarSeries],
    style: &BarStyle,
) -> Result<(), ReportError> {
    let caption = style.caption;
    let (w, _) = area.dim_in_pixel();
    let (plot, legend) = area.split_horizontally(w.saturating_sub(LEGEND_WIDTH));
    let values = series.iter().flat_map(|s| s.values.iter().flatten().copied());
    let x_range = 0f64..groups.len().max(1) as f64;
    let mut builder = ChartBuilder::on(&plot);
    builder
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(52)
        .y_label_area_size(80);
    if style.log {
        let (lo, hi) = log_bounds(values.chain(style.baseline.map(|b| b.0)));
        let mut chart = builder
            .build_cartesian_2d(x_range, (lo..hi).log_scale())
            .map_err(chart_err(caption))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .y_desc(style.y_desc)
            .y_label_formatter(&|v| log_label(*v))
            .draw()
            .map_err(chart_err(caption))?;
        draw_bars(&plot, &mut chart, groups, series, style, lo)?;
    } else {
        let hi = values.fold(0.0f64, f64::max).max(1e-9) * 1.15;
        let mut chart = builder
            .build_cartesian_2d(x_range, 0f64..hi)
            .map_err(chart_err(caption))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_label_formatter(&|_| String::new())
            .y_desc(style.y_desc)
            .y_label_formatter(&|v| fmt_value(*v))
            .draw()
            .map_err(chart_err(caption))?;
        draw_bars(&plot, &mut chart, groups, series, style, 0.0)?;
    }
    draw_legend(&legend, series, style)
}

fn chart_width(groups: usize, bars: usize) -> u32 {
    (groups * bars * 22 + groups * 40 + 300 + LEGEND_WIDTH as usize).clamp(1000, 2600) as u32
}

/// The ns-per-operation chart: log scale, bars grouped by workload, one
/// colour per (impl, resource).
pub fn alloc_chart_svg(points: &[AllocPoint]) -> Result<String, ReportError> {
    if points.is_empty() {
        return Err(ReportError::NoData("no allocator rows to chart".into()));
    }
    let groups = workload_order(points);
    let mut resources: Vec<String> = points.iter().map(|p| p.resource.clone()).collect();
    resources.sort_by_key(|r| resource_rank(r));
    resources.dedup();
    let impls = impl_order(points.iter().map(|p| p.impl_name.as_str()));
    let index: HashMap<(&str, &str, &str, &str), f64> = points
        .iter()
        .map(|p| {
            (
                (
                    p.impl_name.as_str(),
                    p.resource.as_str(),
                    p.workload.as_str(),
                    p.params.as_str(),
                ),
                p.ns_per_op,
            )
        })
        .collect();
    let mut series = Vec::new();
    for resource in &resources {
        for (ii, name) in impls.iter().enumerate() {
            let values: Vec<Option<f64>> = groups
                .iter()
                .map(|(w, p)| {
                    index
                        .get(&(name.as_str(), resource.as_str(), w.as_str(), p.as_str()))
                        .copied()
                })
                .collect();
            if values.iter().any(Option::is_some) {
                series.push(BarSeries {
                    label: format!("{name} {resource}"),
                    color: shade(resource_hue(resource, &resources), ii, impls.len()),
                    values,
                });
            }
        }
    }
    let size = (chart_width(groups.len(), series.len()), 640);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err("ns/op chart"))?;
        let style = BarStyle {
            caption: "Allocator: ns per operation (log scale, lower is better)",
            y_desc: "ns per allocate or deallocate",
            log: true,
            value_labels: false,
            baseline: None,
        };
        grouped_bars(&root, &groups, &series, &style)?;
        root.present().map_err(chart_err("ns/op chart"))?;
    }
    Ok(svg)
}

/// The hue of a resource: fixed for the resources of WORKLOADS.md, the next
/// hues for others (by their position among the unknown ones in `all`).
pub(super) fn resource_hue(resource: &str, all: &[String]) -> RGBColor {
    match RESOURCE_ORDER.iter().position(|r| *r == resource) {
        Some(rank) => hue(rank),
        None => {
            let unknown = all.iter().filter(|r| !RESOURCE_ORDER.contains(&r.as_str()));
            let k = unknown.take_while(|r| r.as_str() != resource).count();
            hue(RESOURCE_ORDER.len() + k)
        }
    }
}

/// The ratio chart: project ns/op over RMM ns/op per (resource, workload),
/// log scale, reference line at 1.0 (below it the project is faster).
pub fn ratio_chart_svg(ratios: &[AllocRatio]) -> Result<String, ReportError> {
    if ratios.is_empty() {
        return Err(ReportError::NoData(
            "no (resource, workload) measured by both the project and rmm".into(),
        ));
    }
    let mut groups: Vec<(String, String)> = Vec::new();
    for r in ratios {
        let key = (r.workload.clone(), r.params.clone());
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    sort_groups(&mut groups);
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in ratios {
        let key = (r.impl_name.clone(), r.resource.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let impls = impl_order(ratios.iter().map(|r| r.impl_name.as_str()));
    let mut resources: Vec<String> = keys.iter().map(|k| k.1.clone()).collect();
    resources.sort_by_key(|r| resource_rank(r));
    resources.dedup();
    let series: Vec<BarSeries> = keys
        .iter()
        .map(|(name, resource)| {
            let values = groups
                .iter()
                .map(|(w, p)| {
                    ratios
                        .iter()
                        .find(|r| {
                            &r.impl_name == name
                                && &r.resource == resource
                                && &r.workload == w
                                && &r.params == p
                        })
                        .map(|r| r.ratio)
                })
                .collect();
            let variant = impls.iter().position(|i| i == name).unwrap_or(0);
            BarSeries {
                label: format!("{name} {resource}"),
                color: shade(resource_hue(resource, &resources), variant, impls.len() + 1),
                values,
            }
        })
        .collect();
    let size = (chart_width(groups.len(), series.len()), 600);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err("ratio chart"))?;
        let style = BarStyle {
            caption: "Project ns/op / RMM ns/op (log scale; below 1.0 the project is faster)",
            y_desc: "ratio to RMM",
            log: true,
            value_labels: true,
            baseline: Some((1.0, "1.0 = as fast as RMM")),
        };
        grouped_bars(&root, &groups, &series, &style)?;
        root.present().map_err(chart_err("ratio chart"))?;
    }
    Ok(svg)
}

/// The kernel throughput chart: one panel per unit, bars grouped by
/// (kernel, params), one colour per implementation.
pub fn kernel_chart_svg(rows: &[KernelRow]) -> Result<String, ReportError> {
    let points = kernel_points(rows);
    if points.is_empty() {
        return Err(ReportError::NoData("no kernel rows to chart".into()));
    }
    // Units: GB/s first, then the rest alphabetically.
    let mut units: Vec<String> = points.iter().map(|p| p.unit.clone()).collect();
    units.sort_by_key(|u| (u != "GB/s", u.clone()));
    units.dedup();
    let impls = impl_order(points.iter().map(|p| p.impl_name.as_str()));
    let impl_color = |name: &str| -> RGBColor {
        match name {
            "cupy" => RGBColor(120, 180, 230),
            "torch" => RGBColor(240, 150, 90),
            _ => {
                let i = impls.iter().position(|n| n == name).unwrap_or(0);
                [
                    RGBColor(20, 90, 170),
                    RGBColor(30, 140, 60),
                    RGBColor(140, 60, 160),
                ][i % 3]
            }
        }
    };
    let mut panels = Vec::new();
    let mut widest = 0;
    for unit in &units {
        let mut groups: Vec<(String, String)> = Vec::new();
        for p in points.iter().filter(|p| &p.unit == unit) {
            let key = (p.kernel.clone(), p.params.clone());
            if !groups.contains(&key) {
                groups.push(key);
            }
        }
        let series: Vec<BarSeries> = impls
            .iter()
            .filter_map(|name| {
                let values: Vec<Option<f64>> = groups
                    .iter()
                    .map(|(k, pa)| {
                        points
                            .iter()
                            .find(|p| {
                                &p.impl_name == name && &p.unit == unit && &p.kernel == k && &p.params == pa
                            })
                            .map(|p| p.value)
                    })
                    .collect();
                values.iter().any(Option::is_some).then(|| BarSeries {
                    label: name.clone(),
                    color: impl_color(name),
                    values,
                })
            })
            .collect();
        widest = widest.max(chart_width(groups.len(), series.len()));
        panels.push((unit.clone(), groups, series));
    }
    let size = (widest, 480 * panels.len() as u32);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err("kernel chart"))?;
        let areas = root.split_evenly((panels.len(), 1));
        for (area, (unit, groups, series)) in areas.iter().zip(&panels) {
            let caption = format!("Kernel throughput in {unit} (higher is better)");
            let style = BarStyle {
                caption: &caption,
                y_desc: unit,
                log: false,
                value_labels: true,
                baseline: None,
            };
            grouped_bars(area, groups, series, &style)?;
        }
        root.present().map_err(chart_err("kernel chart"))?;
    }
    Ok(svg)
}

fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The markdown summary: allocator ratios to RMM (with a geometric mean per
/// impl and resource), and kernel ratios to the best anchor.
pub fn summary_markdown(points: &[AllocPoint], ratios: &[AllocRatio], kernels: &[KernelRatio]) -> String {
    let mut md = String::from("# Benchmark summary\n\n");
    if !points.is_empty() {
        md.push_str("## Allocator: project ns/op / RMM ns/op\n\nBelow 1.0 the project is faster. ");
        md.push_str("Repeated rows are merged by their median.\n\n");
        if ratios.is_empty() {
            md.push_str("No (resource, workload) was measured by both the project and `rmm`.\n\n");
        } else {
            md.push_str("| impl | resource | workload | params | rmm ns/op | project ns/op | project/rmm | failed (project/rmm) |\n");
            md.push_str("|---|---|---|---|---:|---:|---:|---:|\n");
            for r in ratios {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {:.1} | {:.1} | {:.3} | {}/{} |\n",
                    r.impl_name,
                    r.resource,
                    r.workload,
                    r.params,
                    r.rmm_ns,
                    r.project_ns,
                    r.ratio,
                    r.project_failed,
                    r.rmm_failed
                ));
            }
            md.push_str("\n### Geometric mean of the ratios\n\n| impl | resource | pairs | geomean project/rmm |\n|---|---|---:|---:|\n");
            let mut by: BTreeMap<(String, (usize, String)), Vec<f64>> = BTreeMap::new();
            for r in ratios {
                by.entry((r.impl_name.clone(), resource_rank(&r.resource)))
                    .or_default()
                    .push(r.ratio);
            }
            for ((name, (_, resource)), values) in &by {
                if let Some(g) = geomean(values.iter().copied()) {
                    md.push_str(&format!("| {name} | {resource} | {} | {g:.3} |\n", values.len()));
                }
            }
            md.push('\n');
        }
        let unpaired: Vec<&AllocPoint> = points
            .iter()
            .filter(|p| {
                !ratios.iter().any(|r| {
                    r.resource == p.resource
                        && r.workload == p.workload
                        && r.params == p.params
                        && (r.impl_name == p.impl_name || p.impl_name == RMM_IMPL)
                })
            })
            .collect();
        if !unpaired.is_empty() {
            md.push_str("### Rows without a counterpart\n\n| impl | resource | workload | params | ns/op |\n|---|---|---|---|---:|\n");
            for p in unpaired {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {:.1} |\n",
                    p.impl_name, p.resource, p.workload, p.params, p.ns_per_op
                ));
            }
            md.push('\n');
        }
    }
    if !kernels.is_empty() {
        md.push_str(
            "## Kernels: project throughput / best anchor throughput\n\nAbove 1.0 the project is faster.\n\n",
        );
        md.push_str("| impl | kernel | params | best anchor | anchor | project | unit | project/anchor |\n");
        md.push_str("|---|---|---|---|---:|---:|---|---:|\n");
        for k in kernels {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:.2} | {:.2} | {} | {:.3} |\n",
                k.impl_name, k.kernel, k.params, k.anchor, k.anchor_value, k.project_value, k.unit, k.ratio
            ));
        }
        md.push('\n');
    }
    md
}

/// What [`write_charts`] wrote.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChartOutputs {
    /// Files written.
    pub written: Vec<PathBuf>,
    /// Things worth telling the user (charts skipped and why, rows dropped).
    pub notes: Vec<String>,
    /// The allocator ratios (also in `summary.md`).
    pub alloc_ratios: Vec<AllocRatio>,
    /// The kernel ratios (also in `summary.md`).
    pub kernel_ratios: Vec<KernelRatio>,
}

/// File names [`write_charts`] uses inside the output folder.
pub const ALLOC_CHART: &str = "alloc_ns_per_op.svg";
/// See [`ALLOC_CHART`].
pub const RATIO_CHART: &str = "alloc_ratio_to_rmm.svg";
/// See [`ALLOC_CHART`].
pub const THREADS_CHART: &str = "alloc_threads.svg";
/// See [`ALLOC_CHART`].
pub const KERNEL_CHART: &str = "kernel_throughput.svg";
/// See [`ALLOC_CHART`].
pub const SUMMARY: &str = "summary.md";

/// Writes every chart the rows allow, and `summary.md`, into `out_dir`.
pub fn write_charts(
    alloc: &[AllocRow],
    kernels: &[KernelRow],
    out_dir: &Path,
) -> Result<ChartOutputs, ReportError> {
    if alloc.is_empty() && kernels.is_empty() {
        return Err(ReportError::NoData("no allocator or kernel rows given".into()));
    }
    let mut out = ChartOutputs::default();
    let (points, dropped) = alloc_points(alloc);
    if dropped > 0 {
        out.notes.push(format!(
            "{dropped} allocator row(s) with a non-finite or non-positive ns_per_op left out"
        ));
    }
    if !points.is_empty() {
        let path = out_dir.join(ALLOC_CHART);
        write_text(&path, &alloc_chart_svg(&points)?)?;
        out.written.push(path);
        out.alloc_ratios = alloc_ratios(&points);
        if out.alloc_ratios.is_empty() {
            out.notes.push(format!(
                "no ratio chart: no (resource, workload, params) measured by both `{RMM_IMPL}` and another impl"
            ));
        } else {
            let path = out_dir.join(RATIO_CHART);
            write_text(&path, &ratio_chart_svg(&out.alloc_ratios)?)?;
            out.written.push(path);
        }
        let lines = super::scaling::scaling_series(&points);
        if !lines.is_empty() {
            let path = out_dir.join(THREADS_CHART);
            write_text(&path, &super::scaling::threads_chart_svg(&lines)?)?;
            out.written.push(path);
        }
    } else if !alloc.is_empty() {
        out.notes.push("no allocator chart: no usable rows".into());
    }
    if !kernels.is_empty() {
        match kernel_chart_svg(kernels) {
            Ok(svg) => {
                let path = out_dir.join(KERNEL_CHART);
                write_text(&path, &svg)?;
                out.written.push(path);
            }
            Err(ReportError::NoData(m)) => out.notes.push(format!("no kernel chart: {m}")),
            Err(e) => return Err(e),
        }
        out.kernel_ratios = kernel_ratios(kernels);
        if out.kernel_ratios.is_empty() {
            out.notes.push(
                "no kernel ratios: no (kernel, params) measured by both the project and cupy/torch".into(),
            );
        }
    }
    let path = out_dir.join(SUMMARY);
    write_text(
        &path,
        &summary_markdown(&points, &out.alloc_ratios, &out.kernel_ratios),
    )?;
    out.written.push(path);
    Ok(out)
}
