//! The thread-scaling chart: ns per operation against the number of host
//! threads sharing one resource, one line per (impl, resource), from the
//! `threads` rows of WORKLOADS.md (`t=T n=20000 max=1MiB`) and the `threads8`
//! row (the same workload at T = 8).
//!
//! Both axes are logarithmic; the project's lines are solid with filled
//! dots, RMM's lighter with hollow ones, in the resource's hue of the other
//! allocator charts.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use plotters::prelude::*;

use super::points::{impl_order, resource_rank, AllocPoint, RMM_IMPL};
use super::style::{chart_err, log_bounds, resource_hue, shade};
use super::ReportError;

/// One line of the chart: (threads, ns per op) in ascending thread order.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingSeries {
    /// The implementation (`rmm` is the anchor).
    pub impl_name: String,
    /// The resource.
    pub resource: String,
    /// (threads, median ns per op), ascending threads.
    pub points: Vec<(usize, f64)>,
}

/// The number of threads of a thread-scaling row: `threads` rows carry
/// `t=T` as their first parameter, `threads8` is T = 8; `None` for other rows.
pub fn threads_of(workload: &str, params: &str) -> Option<usize> {
    match workload {
        "threads8" => Some(8),
        "threads" => params
            .split_whitespace()
            .find_map(|p| p.strip_prefix("t="))
            .and_then(|t| t.parse().ok())
            .filter(|&t| t > 0),
        _ => None,
    }
}

/// The scaling lines of `points`, ordered by resource (WORKLOADS.md order),
/// then the project before RMM; lines with fewer than two thread counts are
/// left out (nothing to draw).
pub fn scaling_series(points: &[AllocPoint]) -> Vec<ScalingSeries> {
    let mut lines: BTreeMap<(String, String), BTreeMap<usize, f64>> = BTreeMap::new();
    for p in points {
        if let Some(t) = threads_of(&p.workload, &p.params) {
            lines
                .entry((p.impl_name.clone(), p.resource.clone()))
                .or_default()
                .insert(t, p.ns_per_op);
        }
    }
    let impls = impl_order(lines.keys().map(|(i, _)| i.as_str()));
    let mut out: Vec<ScalingSeries> = lines
        .into_iter()
        .filter(|(_, pts)| pts.len() >= 2)
        .map(|((impl_name, resource), pts)| ScalingSeries {
            impl_name,
            resource,
            points: pts.into_iter().collect(),
        })
        .collect();
    out.sort_by_key(|s| {
        (
            resource_rank(&s.resource),
            impls.iter().position(|i| *i == s.impl_name),
        )
    });
    out
}

/// The chart as SVG text.
///
/// # Errors
/// [`ReportError::NoData`] without a line to draw; [`ReportError::Chart`]
/// when drawing fails.
pub fn threads_chart_svg(series: &[ScalingSeries]) -> Result<String, ReportError> {
    if series.is_empty() {
        return Err(ReportError::NoData(
            "no thread-scaling rows (threads, threads8) to chart".into(),
        ));
    }
    let max_t = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .max()
        .unwrap_or(1) as f64;
    let (y_lo, y_hi) = log_bounds(series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    let mut resources: Vec<String> = series.iter().map(|s| s.resource.clone()).collect();
    resources.dedup();
    let impls = impl_order(series.iter().map(|s| s.impl_name.as_str()));
    let what = "thread-scaling chart";
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_err(what))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Allocator thread scaling: ns per operation, T threads on one resource (log-log, lower is better)",
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d((1f64..max_t * 1.15).log_scale(), (y_lo..y_hi).log_scale())
            .map_err(chart_err(what))?;
        chart
            .configure_mesh()
            .x_desc("host threads (each on its own stream)")
            .y_desc("ns per allocate or deallocate")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(chart_err(what))?;
        for s in series {
            let variant = impls.iter().position(|i| *i == s.impl_name).unwrap_or(0);
            let color = shade(resource_hue(&s.resource, &resources), variant, impls.len());
            let anchor = s.impl_name == RMM_IMPL;
            let width = if anchor { 1 } else { 3 };
            let pts: Vec<(f64, f64)> = s.points.iter().map(|&(t, ns)| (t as f64, ns)).collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(width)))
                .map_err(chart_err(what))?
                .label(format!("{} {}", s.impl_name, s.resource))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width)));
            let dots = pts.into_iter().map(move |p| {
                let style = if anchor {
                    color.stroke_width(2)
                } else {
                    color.filled()
                };
                Circle::new(p, 4, style)
            });
            chart.draw_series(dots).map_err(chart_err(what))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(chart_err(what))?;
        root.present().map_err(chart_err(what))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(impl_name: &str, resource: &str, workload: &str, params: &str, ns: f64) -> AllocPoint {
        AllocPoint {
            impl_name: impl_name.into(),
            resource: resource.into(),
            workload: workload.into(),
            params: params.into(),
            ns_per_op: ns,
            failed: 0,
            runs: 1,
        }
    }

    #[test]
    fn thread_counts_come_from_threads_rows_and_threads8() {
        assert_eq!(threads_of("threads", "t=16 n=20000 max=1MiB"), Some(16));
        assert_eq!(threads_of("threads8", "n=20000 max=1MiB"), Some(8));
        assert_eq!(threads_of("threads", "n=20000 max=1MiB"), None);
        assert_eq!(threads_of("threads", "t=0 n=1"), None);
        assert_eq!(threads_of("threads", "t=x"), None);
        assert_eq!(threads_of("hot_pair", "size=256"), None);
    }

    #[test]
    fn series_are_per_impl_and_resource_sorted_by_threads() {
        let pts = vec![
            point("rmm", "pool", "threads", "t=4 n=20000 max=1MiB", 40.0),
            point("rmm-rs", "pool", "threads", "t=2 n=20000 max=1MiB", 20.0),
            point("rmm-rs", "pool", "threads8", "n=20000 max=1MiB", 80.0),
            point("rmm-rs", "pool", "threads", "t=1 n=20000 max=1MiB", 10.0),
            point("rmm", "pool", "threads", "t=1 n=20000 max=1MiB", 11.0),
            point("rmm-rs", "cuda_async", "threads", "t=1 n=20000 max=1MiB", 5.0),
            point("rmm-rs", "cuda_async", "hot_pair", "size=256", 1.0),
            point("rmm-rs", "cuda_async", "threads", "t=32 n=20000 max=1MiB", 50.0),
        ];
        let s = scaling_series(&pts);
        let names: Vec<(&str, &str)> = s
            .iter()
            .map(|s| (s.impl_name.as_str(), s.resource.as_str()))
            .collect();
        assert_eq!(
            names,
            [("rmm-rs", "cuda_async"), ("rmm-rs", "pool"), ("rmm", "pool")]
        );
        assert_eq!(s[0].points, [(1, 5.0), (32, 50.0)]);
        assert_eq!(s[1].points, [(1, 10.0), (2, 20.0), (8, 80.0)]);
        assert_eq!(s[2].points, [(1, 11.0), (4, 40.0)]);
        let svg = threads_chart_svg(&s).expect("chart");
        assert!(svg.starts_with("<svg") && svg.contains("rmm-rs pool") && svg.contains("rmm pool"));
    }

    #[test]
    fn a_single_thread_count_is_no_line_and_no_chart() {
        let pts = vec![point("rmm-rs", "pool", "threads8", "n=20000 max=1MiB", 80.0)];
        let s = scaling_series(&pts);
        assert!(s.is_empty());
        assert!(matches!(threads_chart_svg(&s), Err(ReportError::NoData(_))));
    }
}
