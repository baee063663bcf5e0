//! Which benchmark charts are drawn from which rows: [`write_charts`]
//! merges the rows ([`super::points`]), draws every chart they allow and
//! writes the markdown summary ([`super::summary`]) into one folder:
//!
//! * [`alloc_chart_svg`]: ns per operation, log scale, bars grouped by
//!   workload, one colour per (impl, resource): the same hue for a resource,
//!   darker for the project, lighter for RMM;
//! * [`ratio_chart_svg`]: project ns/op divided by RMM ns/op for each
//!   (resource, workload) pair on a log scale, with a line at 1.0;
//! * the thread-scaling chart ([`super::scaling`]);
//! * [`kernel_chart_svg`]: kernel throughput of the project against CuPy and
//!   PyTorch, one panel per unit (GB/s, Gkeys/s, ...).
//!
//! The charts' look (hues, axes, the grouped bar chart) is in
//! [`super::style`].
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::csv::{AllocRow, KernelRow};
use super::points::{
    alloc_points, alloc_ratios, impl_order, kernel_points, kernel_ratios, resource_rank, sort_groups,
    workload_order, AllocPoint, AllocRatio, KernelRatio, RMM_IMPL,
};
use super::scaling::{scaling_series, threads_chart_svg};
use super::style::{chart_err, chart_width, grouped_bars, resource_hue, shade, BarSeries, BarStyle};
use super::summary::summary_markdown;
use super::{write_text, ReportError};

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
        let lines = scaling_series(&points);
        if !lines.is_empty() {
            let path = out_dir.join(THREADS_CHART);
            write_text(&path, &threads_chart_svg(&lines)?)?;
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
