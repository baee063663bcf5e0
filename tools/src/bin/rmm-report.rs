//! `rmm-report`: benchmark charts and memory timelines as SVG, and an
//! interactive HTML view of a memory-event log or snapshot (CPU only).
//!
//! ```text
//! rmm-report charts --alloc <csv>... [--kernels <csv>...] --out <dir>
//! rmm-report timeline --log <csv> --out <file.svg> [--x time|index] [--color size|thread]
//!                     [--width PX] [--height PX] [--max-rects N] [--full-span]
//! rmm-report view <log.csv|snapshot.json> --out <file.html> [--compare <other>]
//!                 [--report <oom.json>]... [--title TEXT]
//! ```
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use rmm_tools::report::charts::write_charts;
use rmm_tools::report::csv::{read_alloc_files, read_kernel_files, read_memlog_file};
use rmm_tools::report::timeline::{render_svg, ColorBy, Timeline, TimelineOptions, XAxis};
use rmm_tools::report::view::{attach_reports, load_run, read_json, render_page};
use rmm_tools::report::{human_bytes, write_text, ReportError};

/// Benchmark charts and memory timelines as SVG (CPU only).
#[derive(Parser, Debug)]
#[command(name = "rmm-report", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Charts of allocator and kernel benchmark CSVs.
    ///
    /// Allocator CSVs (impl,resource,workload,params,seconds,ns_per_op,failed;
    /// impl `rmm` is the anchor) and kernel CSVs
    /// (impl,kernel,params,seconds,throughput,unit; `cupy`/`torch` are the
    /// anchors); files may be concatenated, headers may repeat. At least one of
    /// --alloc / --kernels. Writes alloc_ns_per_op.svg, alloc_ratio_to_rmm.svg,
    /// alloc_threads.svg (when there are thread-scaling rows),
    /// kernel_throughput.svg and summary.md into the --out folder.
    Charts(ChartsArgs),
    /// A memory timeline of an event log.
    ///
    /// A memory-event log (Thread,Time,Action,Pointer,Size,Stream, as RMM's
    /// logging adaptor writes it): bytes in use over time and the address
    /// space, one rectangle per allocation. Address gaps larger than all memory
    /// ever allocated are collapsed unless --full-span.
    Timeline(TimelineArgs),
    /// An interactive page of an event log or a snapshot: one HTML file.
    ///
    /// Self-contained (inline script and style, system fonts, no network):
    /// bytes in use over time with zoom and pan; allocations as
    /// address-by-time rectangles with details on hover (size, stream,
    /// thread, times, backtrace from a snapshot); the state at a clicked or
    /// scrubbed moment (live blocks, bytes in use, largest gap); failed
    /// allocations marked with their out-of-memory reports (--report); a
    /// second run overlaid (--compare, a toggle in the page).
    ///
    /// Size: the data travel as base64 varint columns, about 4/3 x (2 bytes
    /// per event + 10 per allocation) for typical logs, measured 2026-12-02
    /// on synthetic logs (half the events allocations): 10^6 events -> 9.1
    /// MB, 10^7 events -> 90.5 MB; never more than 4/3 x (20 per event + 60
    /// per allocation) plus names and reports. Headless Chromium opened
    /// those in 0.7-1.6 s and 5.9-6.6 s (docs/viewer.md).
    View(ViewArgs),
}

#[derive(Args, Debug)]
struct ChartsArgs {
    /// Allocator benchmark CSVs.
    #[arg(long, value_name = "CSV", num_args = 1.., required_unless_present = "kernels")]
    alloc: Vec<PathBuf>,
    /// Kernel benchmark CSVs.
    #[arg(long, value_name = "CSV", num_args = 1..)]
    kernels: Vec<PathBuf>,
    /// The folder to write the charts and summary.md into.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// The x axis of the timeline.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum XArg {
    /// Time when every event has one, else the event index.
    Auto,
    /// The logged time.
    Time,
    /// The event index.
    Index,
}

/// What colours the timeline's rectangles.
#[derive(ValueEnum, Clone, Copy, Debug)]
enum ColorArg {
    /// By thread when the log has several, else by size.
    Auto,
    /// By allocation size.
    Size,
    /// By logged thread.
    Thread,
}

#[derive(Args, Debug)]
struct TimelineArgs {
    /// The memory-event log.
    #[arg(long, value_name = "CSV")]
    log: PathBuf,
    /// The SVG to write.
    #[arg(long, value_name = "FILE.svg")]
    out: PathBuf,
    /// The x axis.
    #[arg(long, value_enum, default_value = "auto")]
    x: XArg,
    /// What colours the allocations.
    #[arg(long, value_enum, default_value = "auto")]
    color: ColorArg,
    /// Width in pixels (clamped to 300..=6000).
    #[arg(long, value_name = "PX")]
    width: Option<u32>,
    /// Height in pixels (clamped to 300..=6000).
    #[arg(long, value_name = "PX")]
    height: Option<u32>,
    /// At most this many rectangles; past it the smallest are merged.
    #[arg(long, value_name = "N")]
    max_rects: Option<usize>,
    /// Keep address gaps larger than all memory ever allocated.
    #[arg(long)]
    full_span: bool,
}

#[derive(Args, Debug)]
struct ViewArgs {
    /// The input: a memory-event log (CSV) or a snapshot (JSON, schema rmm-snapshot).
    #[arg(value_name = "LOG|SNAPSHOT")]
    input: PathBuf,
    /// The HTML file to write.
    #[arg(long, value_name = "FILE.html")]
    out: PathBuf,
    /// A second run (log or snapshot) to overlay and compare.
    #[arg(long, value_name = "LOG|SNAPSHOT")]
    compare: Option<PathBuf>,
    /// Out-of-memory report files (schema rmm-oom-report), marked on the
    /// failures they match (same size, nearest time).
    #[arg(long = "report", value_name = "FILE.json")]
    reports: Vec<PathBuf>,
    /// The page's title (default: the input's name).
    #[arg(long)]
    title: Option<String>,
}

fn view(args: ViewArgs) -> Result<(), ReportError> {
    let mut run = load_run(&args.input)?;
    let mut reports = Vec::new();
    for path in &args.reports {
        reports.push((path.display().to_string(), read_json(path)?));
    }
    attach_reports(&mut run, &reports)?;
    let mut runs = vec![run];
    if let Some(other) = &args.compare {
        runs.push(load_run(other)?);
    }
    let title = args
        .title
        .unwrap_or_else(|| format!("Memory view: {}", args.input.display()));
    let html = render_page(&title, &runs);
    write_text(&args.out, &html)?;
    let h = &runs[0].header;
    println!(
        "wrote {} ({}): {} events, {} allocations, {} failure(s), {} report(s){}",
        args.out.display(),
        human_bytes(html.len() as f64),
        h["events"],
        h["allocations"],
        h["failures"].as_array().map_or(0, Vec::len),
        reports.len(),
        if runs.len() > 1 { ", with a comparison" } else { "" }
    );
    Ok(())
}

fn charts(args: ChartsArgs) -> Result<(), ReportError> {
    let ChartsArgs { alloc, kernels, out } = args;
    let alloc_rows = if alloc.is_empty() {
        Default::default()
    } else {
        read_alloc_files(&alloc)?
    };
    let kernel_rows = if kernels.is_empty() {
        Default::default()
    } else {
        read_kernel_files(&kernels)?
    };
    println!(
        "read {} allocator row(s) from {} file(s), {} kernel row(s) from {} file(s)",
        alloc_rows.rows.len(),
        alloc.len(),
        kernel_rows.rows.len(),
        kernels.len()
    );
    let skipped = alloc_rows.skipped + kernel_rows.skipped;
    if skipped > 0 {
        println!("skipped {skipped} line(s) that were neither header nor data");
    }
    let outputs = write_charts(&alloc_rows.rows, &kernel_rows.rows, &out)?;
    for note in &outputs.notes {
        println!("note: {note}");
    }
    for path in &outputs.written {
        println!("wrote {}", path.display());
    }
    for r in &outputs.alloc_ratios {
        println!(
            "  {:<8} {:<11} {:<9} {:<18} {:>10.1} ns/op vs rmm {:>10.1}  ratio {:.3}",
            r.impl_name, r.resource, r.workload, r.params, r.project_ns, r.rmm_ns, r.ratio
        );
    }
    for k in &outputs.kernel_ratios {
        println!(
            "  {:<8} {:<6} {:<12} {:>9.2} {} vs {} {:>9.2}  ratio {:.3}",
            k.impl_name, k.kernel, k.params, k.project_value, k.unit, k.anchor, k.anchor_value, k.ratio
        );
    }
    Ok(())
}

fn timeline(args: TimelineArgs) -> Result<(), ReportError> {
    let (log, out) = (args.log.display().to_string(), args.out.display().to_string());
    let mut opts = TimelineOptions {
        title: format!("Memory timeline: {log}"),
        ..TimelineOptions::default()
    };
    opts.x_axis = match args.x {
        XArg::Auto => XAxis::Auto,
        XArg::Time => XAxis::Time,
        XArg::Index => XAxis::Index,
    };
    opts.color_by = match args.color {
        ColorArg::Auto => ColorBy::Auto,
        ColorArg::Size => ColorBy::Size,
        ColorArg::Thread => ColorBy::Thread,
    };
    if let Some(w) = args.width {
        opts.width = w.clamp(300, 6000);
    }
    if let Some(h) = args.height {
        opts.height = h.clamp(300, 6000);
    }
    opts.collapse_gaps = !args.full_span;
    if let Some(m) = args.max_rects {
        opts.max_rects = m.max(1);
    }
    let parsed = read_memlog_file(&args.log)?;
    let tl = Timeline::from_log(&parsed);
    let stats = tl.stats();
    let (svg, info) = render_svg(&tl, &opts)?;
    write_text(&args.out, &svg)?;
    println!(
        "wrote {} ({}), x axis {:?}, colour by {:?}",
        out,
        human_bytes(svg.len() as f64),
        info.x_axis,
        info.color_by
    );
    println!(
        "drew {} rectangle(s) for {} allocation(s){}; {} line point(s)",
        info.rects_drawn,
        info.allocations,
        if info.merged > 0 {
            format!(
                " ({} small ones merged into {} grid run(s))",
                info.merged, info.merged_runs
            )
        } else {
            String::new()
        },
        info.line_points
    );
    if parsed.skipped > 0 {
        println!("skipped {} comment line(s)", parsed.skipped);
    }
    println!("{stats}");
    if info.collapsed_gaps > 0 {
        println!(
            "collapsed {} unused address gap(s) larger than all memory ever allocated (--full-span keeps them)",
            info.collapsed_gaps
        );
    }
    if !tl.unknown_frees.is_empty() {
        let shown: Vec<String> = tl.unknown_frees.iter().take(10).map(|l| l.to_string()).collect();
        println!(
            "frees of unknown pointers on line(s) {}{}",
            shown.join(", "),
            if tl.unknown_frees.len() > 10 { ", ..." } else { "" }
        );
    }
    if tl.null_frees > 0 {
        println!("frees of a null pointer: {} (ignored)", tl.null_frees);
    }
    if tl.reused_live > 0 {
        println!(
            "allocations returning a pointer still live: {} (the earlier one taken as freed)",
            tl.reused_live
        );
    }
    if tl.size_mismatches > 0 {
        println!(
            "frees whose size differs from the allocation's: {}",
            tl.size_mismatches
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Charts(args) => charts(args),
        Command::Timeline(args) => timeline(args),
        Command::View(args) => view(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
