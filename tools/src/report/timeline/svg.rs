//! The timeline drawn as SVG: the title and statistics, the bytes-in-use
//! panel, the address-space panel and the legend, in the colours of the
//! threads or of a size gradient. What is drawn comes from
//! the layout (`layout.rs`).
#![forbid(unsafe_code)]

use plotters::coord::Shift;
use plotters::prelude::*;

use super::layout::{
    allocation_rects, binary_unit, failure_columns, failure_marks, occupancy_runs, resolve_color_by,
    step_line, ColorBy, PixelGrid, RenderInfo, SizeScale, TimelineOptions, XFrame, HEADROOM, SIZE_BUCKETS,
};
use super::model::{AddressMap, Timeline, TimelineStats};
use crate::report::style::{chart_err, LEGEND_WIDTH};
use crate::report::{human_bytes, ReportError};

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

/// The colour of colour index `index` (a thread, or a size bucket).
fn color_of(color_by: ColorBy, index: usize) -> RGBColor {
    match color_by {
        ColorBy::Thread => thread_color(index),
        _ => gradient(index as f64 / (SIZE_BUCKETS - 1) as f64),
    }
}

/// What the panels share while the timeline is drawn.
struct Scene<'a> {
    tl: &'a Timeline,
    opts: &'a TimelineOptions,
    frame: XFrame,
    color_by: ColorBy,
    map: AddressMap,
    sizes: SizeScale,
    stats: TimelineStats,
}

/// Draws the timeline as an SVG document.
pub fn render_svg(tl: &Timeline, opts: &TimelineOptions) -> Result<(String, RenderInfo), ReportError> {
    let scene = Scene {
        tl,
        opts,
        frame: XFrame::new(tl, opts.x_axis),
        color_by: resolve_color_by(tl, opts.color_by),
        map: AddressMap::new(&tl.allocations, opts.collapse_gaps),
        sizes: SizeScale::new(&tl.allocations),
        stats: tl.stats(),
    };
    let mut svg = String::new();
    let mut info = RenderInfo {
        x_axis: scene.frame.axis,
        color_by: scene.color_by,
        allocations: tl.allocations.len(),
        rects_drawn: 0,
        merged: 0,
        merged_runs: 0,
        line_points: 0,
        collapsed_gaps: scene.map.collapsed,
    };
    let mut legend: Vec<(LegendMark, String)> = vec![(LegendMark::Line(BLUE), "bytes in use".into())];
    {
        let root = SVGBackend::with_string(&mut svg, (opts.width.max(300), opts.height.max(300)))
            .into_drawing_area();
        root.fill(&WHITE).map_err(chart_err("timeline"))?;
        let (head, body) = root.split_vertically(56);
        scene.draw_header(&head)?;
        let (body_width, body_height) = body.dim_in_pixel();
        let (main, legend_area) = body.split_horizontally(body_width.saturating_sub(LEGEND_WIDTH));
        let (top, bottom) = main.split_vertically(body_height * 35 / 100);
        scene.draw_bytes_panel(&top, &mut info, &mut legend)?;
        scene.draw_address_panel(&bottom, &mut info, &mut legend)?;
        scene.colour_legend(&mut legend);
        if info.merged > 0 {
            legend.push((
                LegendMark::Nothing,
                format!("{} small blocks merged", info.merged),
            ));
            legend.push((LegendMark::Nothing, "into a grid (paler colours)".into()));
        }
        draw_legend(&legend_area, &legend)?;
        root.present().map_err(chart_err("timeline"))?;
    }
    Ok((svg, info))
}

impl Scene<'_> {
    /// The title and the statistics line.
    fn draw_header<DB: DrawingBackend>(&self, head: &DrawingArea<DB, Shift>) -> Result<(), ReportError> {
        let stats = &self.stats;
        head.draw(&Text::new(
            self.opts.title.clone(),
            (12, 8),
            ("sans-serif", 20).into_font(),
        ))
        .map_err(chart_err("timeline title"))?;
        let mut subtitle = format!(
            "peak {} | {} allocations, {} never freed | {} failed | {} unknown frees | {} thread(s) | fragmentation at peak {:.3}",
            human_bytes(stats.peak_bytes as f64),
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
        if self.map.collapsed > 0 {
            subtitle.push_str(&format!(
                " | {} unused address gap(s) collapsed",
                self.map.collapsed
            ));
        }
        head.draw(&Text::new(subtitle, (12, 34), ("sans-serif", 13).into_font()))
            .map_err(chart_err("timeline title"))?;
        Ok(())
    }

    /// Panel 1: bytes in use, as a step line, with the failures marked.
    fn draw_bytes_panel<DB: DrawingBackend>(
        &self,
        top: &DrawingArea<DB, Shift>,
        info: &mut RenderInfo,
        legend: &mut Vec<(LegendMark, String)>,
    ) -> Result<(), ReportError> {
        let (tl, frame) = (self.tl, &self.frame);
        let peak = self.stats.peak_bytes as f64;
        let (bytes_div, bytes_unit) = binary_unit(peak);
        let mut c1 = ChartBuilder::on(top)
            .caption("Bytes in use", ("sans-serif", 15))
            .margin(8)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(frame.x0..frame.x1, 0f64..(peak / bytes_div * 1.08).max(1e-9))
            .map_err(chart_err("bytes panel"))?;
        c1.configure_mesh()
            .x_desc(frame.description())
            .y_desc(format!("bytes in use ({bytes_unit})"))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(chart_err("bytes panel"))?;
        let points = step_line(tl, frame, self.opts.max_points, bytes_div);
        info.line_points = points.len();
        c1.draw_series(LineSeries::new(points, BLUE.stroke_width(1)))
            .map_err(chart_err("bytes panel"))?;
        if !tl.failures.is_empty() {
            let (pw, _) = c1.plotting_area().dim_in_pixel();
            let marks = failure_marks(tl, frame, pw, bytes_div);
            c1.draw_series(marks.into_iter().map(|p| Cross::new(p, 3, RED.stroke_width(1))))
                .map_err(chart_err("bytes panel"))?;
            legend.push((
                LegendMark::Cross(RED),
                format!("failed allocation ({})", tl.failures.len()),
            ));
        }
        Ok(())
    }

    /// Panel 2: the address space, one rectangle per allocation (past the
    /// budget, occupancy-grid runs), the collapsed gaps and the failures.
    fn draw_address_panel<DB: DrawingBackend>(
        &self,
        bottom: &DrawingArea<DB, Shift>,
        info: &mut RenderInfo,
        legend: &mut Vec<(LegendMark, String)>,
    ) -> Result<(), ReportError> {
        let (tl, frame, map) = (self.tl, &self.frame, &self.map);
        let span = map.total;
        let (addr_div, addr_unit) = binary_unit(span);
        let (x0, x1) = (frame.x0, frame.x1);
        let mut c2 = ChartBuilder::on(bottom)
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
            .x_desc(frame.description())
            .y_desc(if map.collapsed > 0 {
                format!("address - lowest, gaps collapsed ({addr_unit})")
            } else {
                format!("address - lowest address ({addr_unit})")
            })
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(chart_err("address panel"))?;
        let (pw, ph) = c2.plotting_area().dim_in_pixel();
        let grid = PixelGrid::new(frame, span, pw, ph);
        let budget = self.opts.max_rects.max(1);
        let (rects, leftover) = allocation_rects(tl, frame, &grid, map, self.color_by, &self.sizes, budget);
        info.merged = leftover.len();
        info.rects_drawn = rects.len();
        let to_data = |px: i64, py: i64| grid.data_point(frame, px, py, addr_div);
        let color_by = self.color_by;
        c2.draw_series(rects.iter().map(|&(px0, px1, py0, py1, c)| {
            Rectangle::new(
                [to_data(px0, py0), to_data(px1, py1)],
                color_of(color_by, c).filled(),
            )
        }))
        .map_err(chart_err("address panel"))?;
        if !leftover.is_empty() {
            let runs = occupancy_runs(&leftover, grid.pw, grid.ph, budget / 2);
            info.merged_runs = runs.len();
            c2.draw_series(runs.iter().map(|&(px0, px1, py0, py1, c)| {
                Rectangle::new(
                    [to_data(px0, py0), to_data(px1, py1)],
                    color_of(color_by, c).mix(0.75).filled(),
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
        let columns = failure_columns(tl, frame, &grid);
        let (tick, ph) = (grid.tick(), grid.ph);
        c2.draw_series(
            columns
                .iter()
                .map(|&px| Rectangle::new([to_data(px, ph - tick), to_data(px + 1, ph)], RED.filled())),
        )
        .map_err(chart_err("address panel"))?;
        if !columns.is_empty() {
            legend.push((LegendMark::Tick(RED), "failed allocation (top ticks)".into()));
        }
        Ok(())
    }

    /// The legend of the colours: the threads, or sizes along the gradient.
    fn colour_legend(&self, legend: &mut Vec<(LegendMark, String)>) {
        let tl = self.tl;
        match self.color_by {
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
            color_by => {
                for (bucket, size) in self.sizes.legend_steps() {
                    legend.push((
                        LegendMark::Box(color_of(color_by, bucket)),
                        format!("size {}", human_bytes(size)),
                    ));
                }
            }
        }
    }
}

/// A legend entry's symbol.
enum LegendMark {
    Line(RGBColor),
    Cross(RGBColor),
    Tick(RGBColor),
    Box(RGBColor),
    Nothing,
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
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
