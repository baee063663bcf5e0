//! The look of the benchmark charts and the drawing pieces they share: the
//! resources' hues and their shades per implementation, log axes and their
//! labels, value formats, the grouped bar chart with its legend, and the
//! error of a failed drawing.
#![forbid(unsafe_code)]

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::points::RESOURCE_ORDER;
use super::ReportError;

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

pub(super) fn hue(index: usize) -> RGBColor {
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

pub(super) fn log_label(v: f64) -> String {
    if !(1e-2..1e4).contains(&v) {
        format!("{v:.0e}")
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

/// Series of a grouped bar chart: label, colour, and a value per group.
pub(super) struct BarSeries {
    pub(super) label: String,
    pub(super) color: RGBColor,
    pub(super) values: Vec<Option<f64>>,
}

/// How a grouped bar chart is drawn.
pub(super) struct BarStyle<'a> {
    pub(super) caption: &'a str,
    pub(super) y_desc: &'a str,
    /// Log y axis.
    pub(super) log: bool,
    /// Print each bar's value above (or below) it.
    pub(super) value_labels: bool,
    /// Bars grow from this value (e.g. 1.0 for ratios) instead of the axis bottom,
    /// and a labelled line is drawn there.
    pub(super) baseline: Option<(f64, &'a str)>,
}

/// Width of the legend column on the right of a chart, in pixels.
pub(super) const LEGEND_WIDTH: u32 = 250;

pub(super) fn fmt_value(v: f64) -> String {
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

/// The mesh of a built bar chart (the y axis only, its labels written by
/// `label`), then its bars from `bottom`.
fn mesh_and_bars<DB: DrawingBackend, Y>(
    plot: &DrawingArea<DB, Shift>,
    mut chart: ChartContext<DB, Cartesian2d<RangedCoordf64, Y>>,
    label: fn(f64) -> String,
    bottom: f64,
    groups: &[(String, String)],
    series: &[BarSeries],
    style: &BarStyle,
) -> Result<(), ReportError>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc(style.y_desc)
        .y_label_formatter(&|v| label(*v))
        .draw()
        .map_err(chart_err(style.caption))?;
    draw_bars(plot, &mut chart, groups, series, style, bottom)
}

/// Draws a grouped bar chart with its legend on the right of `area`.
pub(super) fn grouped_bars<DB: DrawingBackend>(
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
        let chart = builder
            .build_cartesian_2d(x_range, (lo..hi).log_scale())
            .map_err(chart_err(caption))?;
        mesh_and_bars(&plot, chart, log_label, lo, groups, series, style)?;
    } else {
        let hi = values.fold(0.0f64, f64::max).max(1e-9) * 1.15;
        let chart = builder
            .build_cartesian_2d(x_range, 0f64..hi)
            .map_err(chart_err(caption))?;
        mesh_and_bars(&plot, chart, fmt_value, 0.0, groups, series, style)?;
    }
    draw_legend(&legend, series, style)
}

pub(super) fn chart_width(groups: usize, bars: usize) -> u32 {
    (groups * bars * 22 + groups * 40 + 300 + LEGEND_WIDTH as usize).clamp(1000, 2600) as u32
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
