//! `rmm-report`: benchmark charts and memory timelines as SVG (CPU only).
//!
//! ```text
//! rmm-report charts --alloc <csv>... [--kernels <csv>...] --out <dir>
//! rmm-report timeline --log <csv> --out <file.svg> [--x time|index] [--color size|thread]
//!                     [--width PX] [--height PX] [--max-rects N] [--full-span]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use rmm_suite::report::charts::write_charts;
use rmm_suite::report::csv::{read_alloc_files, read_kernel_files, read_memlog_file};
use rmm_suite::report::timeline::{render_svg, ColorBy, Timeline, TimelineOptions, XAxis};
use rmm_suite::report::{human_bytes, write_text, ReportError};

const USAGE: &str = "\
usage:
  rmm-report charts --alloc <csv>... [--kernels <csv>...] --out <dir>
      Allocator CSVs (impl,resource,workload,params,seconds,ns_per_op,failed; impl `rmm` is
      the anchor) and kernel CSVs (impl,kernel,params,seconds,throughput,unit; `cupy`/`torch`
      are the anchors); files may be concatenated, headers may repeat. At least one of
      --alloc / --kernels. Writes alloc_ns_per_op.svg, alloc_ratio_to_rmm.svg,
      kernel_throughput.svg and summary.md into <dir>.
  rmm-report timeline --log <csv> --out <file.svg> [--x time|index] [--color size|thread]
                      [--width PX] [--height PX] [--max-rects N] [--full-span]
      A memory-event log (Thread,Time,Action,Pointer,Size,Stream, as RMM's logging adaptor
      writes it): bytes in use over time and the address space, one rectangle per allocation.
      Address gaps larger than all memory ever allocated are collapsed unless --full-span.";

/// A usage error (exit code 2) or a failure while working (exit code 1).
enum Failure {
    Usage(String),
    Report(ReportError),
}

impl From<ReportError> for Failure {
    fn from(e: ReportError) -> Self {
        Failure::Report(e)
    }
}

/// Options of one subcommand: flag name to the values that followed it.
struct Flags {
    values: Vec<(String, Vec<String>)>,
}

impl Flags {
    fn parse(args: &[String], known: &[&str]) -> Result<Flags, Failure> {
        let mut values: Vec<(String, Vec<String>)> = Vec::new();
        for arg in args {
            if let Some(name) = arg.strip_prefix("--") {
                let (name, inline) = match name.split_once('=') {
                    Some((n, v)) => (n, Some(v.to_string())),
                    None => (name, None),
                };
                if !known.contains(&name) {
                    return Err(Failure::Usage(format!("unknown option --{name}")));
                }
                values.push((name.to_string(), inline.into_iter().collect()));
            } else if let Some((_, list)) = values.last_mut() {
                list.push(arg.clone());
            } else {
                return Err(Failure::Usage(format!("unexpected argument `{arg}`")));
            }
        }
        Ok(Flags { values })
    }

    /// Every value given to `name` (the flag may repeat).
    fn all(&self, name: &str) -> Vec<String> {
        self.values
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.iter().cloned())
            .collect()
    }

    /// The single value of `name`, if given.
    fn one(&self, name: &str) -> Result<Option<String>, Failure> {
        let given: Vec<&(String, Vec<String>)> = self.values.iter().filter(|(n, _)| n == name).collect();
        match given.as_slice() {
            [] => Ok(None),
            [(_, v)] if v.len() == 1 => Ok(Some(v[0].clone())),
            [(_, v)] if v.is_empty() => Err(Failure::Usage(format!("--{name} needs a value"))),
            _ => Err(Failure::Usage(format!("--{name} takes exactly one value"))),
        }
    }

    /// Whether the value-less flag `name` was given.
    fn switch(&self, name: &str) -> Result<bool, Failure> {
        match self.values.iter().find(|(n, _)| n == name) {
            None => Ok(false),
            Some((_, v)) if v.is_empty() => Ok(true),
            Some(_) => Err(Failure::Usage(format!("--{name} takes no value"))),
        }
    }

    fn number(&self, name: &str) -> Result<Option<u64>, Failure> {
        self.one(name)?
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| Failure::Usage(format!("--{name}: `{v}` is not a whole number")))
            })
            .transpose()
    }
}

fn charts(args: &[String]) -> Result<(), Failure> {
    let flags = Flags::parse(args, &["alloc", "kernels", "out"])?;
    let alloc = flags.all("alloc");
    let kernels = flags.all("kernels");
    let out = flags
        .one("out")?
        .ok_or_else(|| Failure::Usage("charts needs --out <dir>".into()))?;
    if alloc.is_empty() && kernels.is_empty() {
        return Err(Failure::Usage(
            "charts needs --alloc <csv>... and/or --kernels <csv>...".into(),
        ));
    }
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
    let outputs = write_charts(&alloc_rows.rows, &kernel_rows.rows, &PathBuf::from(out))?;
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

fn timeline(args: &[String]) -> Result<(), Failure> {
    let flags = Flags::parse(
        args,
        &[
            "log",
            "out",
            "x",
            "color",
            "width",
            "height",
            "max-rects",
            "full-span",
        ],
    )?;
    let log = flags
        .one("log")?
        .ok_or_else(|| Failure::Usage("timeline needs --log <csv>".into()))?;
    let out = flags
        .one("out")?
        .ok_or_else(|| Failure::Usage("timeline needs --out <file.svg>".into()))?;
    let mut opts = TimelineOptions {
        title: format!("Memory timeline: {log}"),
        ..TimelineOptions::default()
    };
    opts.x_axis = match flags.one("x")?.as_deref() {
        None | Some("auto") => XAxis::Auto,
        Some("time") => XAxis::Time,
        Some("index") => XAxis::Index,
        Some(other) => {
            return Err(Failure::Usage(format!(
                "--x: `{other}` is not time, index or auto"
            )))
        }
    };
    opts.color_by = match flags.one("color")?.as_deref() {
        None | Some("auto") => ColorBy::Auto,
        Some("size") => ColorBy::Size,
        Some("thread") => ColorBy::Thread,
        Some(other) => {
            return Err(Failure::Usage(format!(
                "--color: `{other}` is not size, thread or auto"
            )))
        }
    };
    if let Some(w) = flags.number("width")? {
        opts.width = u32::try_from(w).unwrap_or(u32::MAX).clamp(300, 6000);
    }
    if let Some(h) = flags.number("height")? {
        opts.height = u32::try_from(h).unwrap_or(u32::MAX).clamp(300, 6000);
    }
    opts.collapse_gaps = !flags.switch("full-span")?;
    if let Some(m) = flags.number("max-rects")? {
        opts.max_rects = usize::try_from(m).unwrap_or(usize::MAX).max(1);
    }
    let parsed = read_memlog_file(&PathBuf::from(&log))?;
    let tl = Timeline::from_events(&parsed.rows);
    let stats = tl.stats();
    let (svg, info) = render_svg(&tl, &opts)?;
    write_text(&PathBuf::from(&out), &svg)?;
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
        println!(
            "skipped {} line(s) that were neither header nor data",
            parsed.skipped
        );
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("charts") => charts(&args[1..]),
        Some("timeline") => timeline(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(Failure::Usage(format!("unknown command `{other}`"))),
        None => Err(Failure::Usage("no command given".into())),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("error: {message}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Report(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
