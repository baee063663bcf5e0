//! The report module and the `rmm-report` binary, on the CPU only: CSV
//! parsing (both benchmark formats and RMM's memory-event log), timeline
//! statistics on a hand-computed log, SVG output, and error messages.

use std::path::{Path, PathBuf};
use std::process::Command;

use rmm_replay::Action;
use rmm_tools::report::charts::{write_charts, ALLOC_CHART, KERNEL_CHART, RATIO_CHART, SUMMARY};
use rmm_tools::report::csv::{parse_alloc_csv, parse_kernel_csv, parse_memlog};
use rmm_tools::report::points::{alloc_points, alloc_ratios, kernel_ratios};
use rmm_tools::report::timeline::{render_svg, AddressMap, ColorBy, Timeline, TimelineOptions, XAxis};
use rmm_tools::report::ReportError;

/// A fresh, empty folder under the system temp folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("rmm-report-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const ANCHOR_CSV: &str = "\
building rmm_anchor ... done
impl,resource,workload,params,seconds,ns_per_op,failed
rmm,cuda,random,n=10000 max=64MiB,0.92,46014,0
rmm,cuda_async,random,n=100000 max=1MiB,0.37,1870,0
rmm,pool,random,n=100000 max=1MiB,9.2,46308,0
rmm,pool,hot_pair,size=256,0.07,169,0
rmm,pool,threads8,n=20000 max=1MiB,2.1,6834,0
rmm,arena,hot_pair,size=256,0.05,125,0
";

/// Concatenated output of two runs: a repeated header (with another column
/// order), CRLF line ends, a blank line, a comment and a duplicate row.
const PROJECT_CSV: &str = "impl,resource,workload,params,seconds,ns_per_op,failed\r\n\
rmm-rs,pool,random,n=100000 max=1MiB,0.1,463.08,0\r\n\
rmm-rs,pool,hot_pair,size=256,0.03,84.5,0\r\n\
\r\n\
# second run\r\n\
resource,impl,workload,params,failed,seconds,ns_per_op\r\n\
pool,rmm-rs,hot_pair,size=256,0,0.03,100\r\n\
pool,rmm-rs,hot_pair,size=256,0,0.03,200\r\n\
pool,rmm-rs,threads8,n=20000 max=1MiB,7,2.1,13668\r\n\
cuda_async,rmm-rs,random,n=100000 max=1MiB,,0.37,1870\r\n";

const KERNEL_CSV: &str = "\
impl,kernel,params,seconds,throughput,unit
cupy,fill,u32 n=2^28,0.00127,844,GB/s
cupy,copy,u32 n=2^28,0.000511,4202,GB/s
cupy,sort,u32 n=2^28,0.0068,39.5,Gkeys/s
torch,sort,u32 n=2^28,0.0117,22.9,Gkeys/s
torch,sort,u64 n=2^28,0.02,13.4,Gkeys/s
cupy,sort,u64 n=2^28,0.0178,15.1,Gkeys/s
rmm-rs,fill,u32 n=2^28,0.000278,3860,GB/s
rmm-rs,copy,u32 n=2^28,0.00052,4202,GB/s
rmm-rs,sort,u32 n=2^28,0.0089,19.75,Gkeys/s
rmm-rs,sort_pairs,u32 n=2^28,0.02,9.0,Gkeys/s
";

/// An RMM-format log, hand-computed below. Thread ids as RMM prints them
/// (large decimal), `(nil)` for the failure, a free of an unknown pointer.
const RMM_LOG: &str = "\
Thread,Time,Action,Pointer,Size,Stream
140281948427072,12:00:00.000000,allocate,0x7f12a4001000,100,0x5601d2c3e2a0
140281948427072,12:00:00.000010,allocate,0x7f12a4001100,200,0x5601d2c3e2a0
18446744073709551615,12:00:00.000020,allocate,0x7f12a4001300,50,0x0
140281948427072,12:00:00.000030,free,0x7f12a4001100,200,0x5601d2c3e2a0
18446744073709551615,12:00:00.000040,allocate failure,(nil),1000,0x0
140281948427072,12:00:00.000050,allocate,0x7f12a4001400,300,0x5601d2c3e2a0
18446744073709551615,12:00:00.000060,free,0x7f12a400dead,10,0x0
140281948427072,12:00:00.000070,free,0x7f12a4001000,100,0x5601d2c3e2a0
";

fn expect_err<T: std::fmt::Debug>(r: Result<T, ReportError>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn parses_allocator_csv_with_noise_and_repeated_headers() {
    let anchor = parse_alloc_csv(ANCHOR_CSV, "anchor.csv").unwrap();
    assert_eq!(anchor.rows.len(), 6);
    assert_eq!(anchor.skipped, 1, "the build line is skipped");
    let r = &anchor.rows[0];
    assert_eq!(
        (
            r.impl_name.as_str(),
            r.resource.as_str(),
            r.workload.as_str(),
            r.params.as_str()
        ),
        ("rmm", "cuda", "random", "n=10000 max=64MiB")
    );
    assert_eq!((r.seconds, r.ns_per_op, r.failed, r.line), (0.92, 46014.0, 0, 3));

    let project = parse_alloc_csv(PROJECT_CSV, "project.csv").unwrap();
    assert_eq!(project.rows.len(), 6);
    assert_eq!(project.skipped, 1, "the comment is skipped");
    // The second section has its own column order.
    let t = project.rows.iter().find(|r| r.workload == "threads8").unwrap();
    assert_eq!(
        (t.impl_name.as_str(), t.resource.as_str(), t.failed, t.ns_per_op),
        ("rmm-rs", "pool", 7, 13668.0)
    );
    // An empty `failed` reads as 0.
    assert_eq!(project.rows.last().unwrap().failed, 0);
}

#[test]
fn parses_kernel_csv() {
    let k = parse_kernel_csv(KERNEL_CSV, "k.csv").unwrap();
    assert_eq!(k.rows.len(), 10);
    let fill = &k.rows[6];
    assert_eq!(
        (
            fill.impl_name.as_str(),
            fill.kernel.as_str(),
            fill.params.as_str()
        ),
        ("rmm-rs", "fill", "u32 n=2^28")
    );
    assert_eq!((fill.throughput, fill.unit.as_str()), (3860.0, "GB/s"));
}

#[test]
fn parses_rmm_memory_log() {
    let log = parse_memlog(RMM_LOG, "rmm.log").unwrap();
    assert_eq!(log.events.len(), 8);
    let first = &log.events[0];
    assert_eq!(log.threads[first.thread], "140281948427072");
    assert_eq!(first.action, Action::Allocate);
    assert_eq!(first.pointer, 0x7f12_a400_1000);
    assert_eq!(first.size, 100);
    assert_eq!(first.stream, 0x5601_d2c3_e2a0);
    assert_eq!(first.time, Some(12.0 * 3600.0));
    assert_eq!(first.line, 2);
    let failure = &log.events[4];
    assert_eq!(failure.action, Action::AllocateFailure);
    assert_eq!(failure.pointer, 0);
    assert_eq!(failure.size, 1000);
    assert_eq!(log.threads[failure.thread], "18446744073709551615");
    assert!((failure.time.unwrap() - (43200.0 + 40e-6)).abs() < 1e-9);
    assert_eq!(log.events[3].action, Action::Free);
}

#[test]
fn memory_log_variants_are_tolerated() {
    // Lower-case header in another order, a `0x0` stream, a date before the
    // time, a trailing comma, and a header repeated after concatenation.
    let text = "time,thread,action,size,pointer,stream\n\
        2026-11-30 09:00:01.5,7,allocate,256,0x10000,0x0,\n\
        Thread,Time,Action,Pointer,Size,Stream\n\
        7,09:00:02.0,free,0x10000,256,0x0\n";
    let log = parse_memlog(text, "mixed.log").unwrap();
    assert_eq!(log.events.len(), 2);
    assert_eq!(log.events[0].pointer, 0x10000);
    assert_eq!(log.events[0].time, Some(9.0 * 3600.0 + 1.5));
    assert_eq!(log.events[1].action, Action::Free);
}

#[test]
fn timeline_statistics_match_a_hand_computed_log() {
    let log = parse_memlog(RMM_LOG, "rmm.log").unwrap();
    let tl = Timeline::from_log(&log);
    assert_eq!(tl.events, 8);
    assert_eq!(
        tl.threads,
        vec!["140281948427072".to_string(), "18446744073709551615".to_string()]
    );
    assert!(tl.has_time);
    assert_eq!(tl.in_use, vec![100, 300, 350, 150, 150, 450, 450, 350]);
    // Live intervals [start, end) in event indices.
    let intervals: Vec<(u64, usize, Option<usize>)> = tl
        .allocations
        .iter()
        .map(|a| (a.pointer - 0x7f12_a400_0000, a.start, a.end))
        .collect();
    assert_eq!(
        intervals,
        vec![
            (0x1000, 0, Some(7)),
            (0x1100, 1, Some(3)),
            (0x1300, 2, None),
            (0x1400, 5, None)
        ]
    );
    assert_eq!(tl.allocations[2].thread, 1);
    assert_eq!(tl.failures.len(), 1);
    assert_eq!(
        (tl.failures[0].index, tl.failures[0].size, tl.failures[0].line),
        (4, 1000, 6)
    );
    assert_eq!(tl.unknown_frees, vec![8]);

    let s = tl.stats();
    assert_eq!(s.peak_bytes, 450);
    assert_eq!(s.peak_event, Some(5));
    assert!((s.peak_time.unwrap() - 50e-6).abs() < 1e-9);
    assert!((s.duration.unwrap() - 70e-6).abs() < 1e-9);
    assert_eq!(
        (s.allocations, s.frees, s.failures, s.unknown_frees),
        (4, 2, 1, 1)
    );
    assert_eq!((s.never_freed, s.never_freed_bytes), (2, 350));
    assert_eq!(s.address_base, Some(0x7f12_a400_1000));
    assert_eq!(s.address_span, 0x152c - 0x1000);
    // At the peak: [0x1000,+100) [0x1300,+50) [0x1400,+300): holes of
    // 0x1300-0x1064 = 668 and 0x1400-0x1332 = 206 bytes.
    assert_eq!(s.live_at_peak, 3);
    let f = s.fragmentation_at_peak;
    assert_eq!((f.free_bytes, f.largest_gap), (874, 668));
    assert!((f.ratio() - (1.0 - 668.0 / 874.0)).abs() < 1e-12);
    let text = s.to_string();
    assert!(text.contains("peak bytes:        450 B"), "{text}");
    assert!(text.contains("fragmentation:     0.236"), "{text}");
}

#[test]
fn timeline_handles_midnight_and_missing_times() {
    let text = "Thread,Time,Action,Pointer,Size,Stream\n\
        1,23:59:59.900000,allocate,0x1000,10,0x0\n\
        1,00:00:00.100000,free,0x1000,10,0x0\n";
    let tl = Timeline::from_log(&parse_memlog(text, "m").unwrap());
    assert!((tl.times[1] - 0.2).abs() < 1e-9, "{:?}", tl.times);

    let text = "Thread,Time,Action,Pointer,Size,Stream\n1,,allocate,0x1000,10,0x0\n1,,free,0x1000,10,0x0\n";
    let tl = Timeline::from_log(&parse_memlog(text, "m").unwrap());
    assert!(!tl.has_time);
    assert_eq!(tl.stats().duration, None);
    let (svg, info) = render_svg(&tl, &TimelineOptions::default()).unwrap();
    assert!(svg.starts_with("<svg"));
    assert_eq!(info.x_axis, XAxis::Index);
}

#[test]
fn bad_input_gives_clear_errors() {
    let missing = "impl,resource,workload,params,seconds,failed\nrmm,pool,random,n=1,0.1,0\n";
    let e = expect_err(parse_alloc_csv(missing, "a.csv"));
    assert!(e.contains("a.csv:1") && e.contains("`ns_per_op`"), "{e}");

    let bad_number = "impl,resource,workload,params,seconds,ns_per_op,failed\n\
        rmm,pool,random,n=1,0.1,12,0\n\
        rmm,pool,random,n=2,0.1,abc,0\n";
    let e = expect_err(parse_alloc_csv(bad_number, "b.csv"));
    assert_eq!(e, "b.csv:3: column `ns_per_op`: `abc` is not a number");

    let short = "impl,kernel,params,seconds,throughput,unit\ncupy,fill,u32,0.1\n";
    let e = expect_err(parse_kernel_csv(short, "k.csv"));
    assert!(e.starts_with("k.csv:2: expected 6 fields"), "{e}");

    let no_header = "rmm,pool,random,n=1,0.1,12,0\n";
    let e = expect_err(parse_alloc_csv(no_header, "c.csv"));
    assert!(e.contains("c.csv:1") && e.contains("header"), "{e}");

    let only_header = "impl,resource,workload,params,seconds,ns_per_op,failed\n";
    assert!(expect_err(parse_alloc_csv(only_header, "d.csv")).contains("no data rows"));
    assert!(expect_err(parse_alloc_csv("", "e.csv")).contains("no header"));

    let log = "Thread,Time,Action,Pointer,Size,Stream\n1,12:00:00.0,allocate,0x10,8,0x0\n1,12:00:00.1,grow,0x10,8,0x0\n";
    let e = expect_err(parse_memlog(log, "m.log"));
    assert!(
        e.starts_with("m.log:3: column `Action`: unknown action `grow`"),
        "{e}"
    );
    let log = "Thread,Time,Action,Pointer,Size,Stream\n1,12:00:00.0,allocate,0xZZ,8,0x0\n";
    assert!(expect_err(parse_memlog(log, "m.log")).starts_with("m.log:2: column `Pointer`"));
    let log = "Thread,Time,Action,Pointer,Size,Stream\n1,noon,allocate,0x10,8,0x0\n";
    assert!(expect_err(parse_memlog(log, "m.log")).starts_with("m.log:2: column `Time`"));
    let log = "Thread,Time,Action,Pointer,Size,Stream\n1,12:00:00.0,allocate,0x10,-8,0x0\n";
    assert!(expect_err(parse_memlog(log, "m.log")).starts_with("m.log:2: column `Size`"));
    let log = "Thread,Time,Action,Size,Stream\n";
    assert!(expect_err(parse_memlog(log, "m.log")).contains("lacks column `pointer`"));
    assert!(expect_err(parse_memlog("# nothing\n", "m.log")).starts_with("m.log: no header"));
}

#[test]
fn ratios_pair_rows_and_merge_repeats() {
    let mut rows = parse_alloc_csv(ANCHOR_CSV, "a").unwrap().rows;
    rows.extend(parse_alloc_csv(PROJECT_CSV, "p").unwrap().rows);
    let (points, dropped) = alloc_points(&rows);
    assert_eq!(dropped, 0);
    // hot_pair was measured three times (84.5, 100, 200): the median is 100.
    let hot = points
        .iter()
        .find(|p| p.impl_name == "rmm-rs" && p.workload == "hot_pair")
        .unwrap();
    assert_eq!((hot.ns_per_op, hot.runs), (100.0, 3));
    let ratios = alloc_ratios(&points);
    let got: Vec<(&str, &str, f64)> = ratios
        .iter()
        .map(|r| {
            (
                r.resource.as_str(),
                r.workload.as_str(),
                (r.ratio * 1000.0).round() / 1000.0,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("cuda_async", "random", 1.0),
            ("pool", "random", 0.01),
            ("pool", "hot_pair", 0.592),
            ("pool", "threads8", 2.0),
        ]
    );
    let k = kernel_ratios(&parse_kernel_csv(KERNEL_CSV, "k").unwrap().rows);
    let got: Vec<(&str, &str, &str, f64)> = k
        .iter()
        .map(|r| (r.kernel.as_str(), r.params.as_str(), r.anchor.as_str(), r.ratio))
        .collect();
    assert_eq!(
        got,
        vec![
            ("fill", "u32 n=2^28", "cupy", 3860.0 / 844.0),
            ("copy", "u32 n=2^28", "cupy", 1.0),
            ("sort", "u32 n=2^28", "cupy", 0.5)
        ]
    );
}

#[test]
fn charts_are_valid_svg_with_labels() {
    let dir = TempDir::new("charts");
    let mut rows = parse_alloc_csv(ANCHOR_CSV, "a").unwrap().rows;
    rows.extend(parse_alloc_csv(PROJECT_CSV, "p").unwrap().rows);
    let kernels = parse_kernel_csv(KERNEL_CSV, "k").unwrap().rows;
    let out = write_charts(&rows, &kernels, dir.path()).unwrap();
    assert_eq!(out.written.len(), 4, "{:?}", out.written);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();

    let ns = read(ALLOC_CHART);
    assert!(ns.starts_with("<svg") && ns.trim_end().ends_with("</svg>"));
    for label in [
        "ns per operation",
        "rmm-rs pool",
        "rmm pool",
        "rmm cuda",
        "rmm-rs cuda_async",
        "random",
        "hot_pair",
    ] {
        assert!(ns.contains(label), "{ALLOC_CHART} lacks `{label}`");
    }
    assert!(ns.contains("n=100000 max=1MiB"));

    let ratio = read(RATIO_CHART);
    assert!(ratio.starts_with("<svg"));
    for label in [
        "ratio to RMM",
        "1.0 = as fast as RMM",
        "rmm-rs pool",
        "0.59",
        "2.00",
    ] {
        assert!(ratio.contains(label), "{RATIO_CHART} lacks `{label}`");
    }

    let k = read(KERNEL_CHART);
    assert!(k.starts_with("<svg"));
    for label in [
        "GB/s",
        "Gkeys/s",
        "cupy",
        "torch",
        "rmm-rs",
        "fill",
        "copy",
        "sort",
        "sort_pairs",
        "3860",
    ] {
        assert!(k.contains(label), "{KERNEL_CHART} lacks `{label}`");
    }

    let md = read(SUMMARY);
    assert!(
        md.contains("| rmm-rs | pool | hot_pair | size=256 | 169.0 | 100.0 | 0.592 | 0/0 |"),
        "{md}"
    );
    assert!(
        md.contains("| rmm-rs | fill | u32 n=2^28 | cupy | 844.00 | 3860.00 | GB/s | 4.573 |"),
        "{md}"
    );
    assert!(
        md.contains("Rows without a counterpart") && md.contains("| rmm | arena | hot_pair |"),
        "{md}"
    );
}

#[test]
fn charts_without_an_anchor_skip_the_ratio_chart() {
    let dir = TempDir::new("no-anchor");
    let rows = parse_alloc_csv(PROJECT_CSV, "p").unwrap().rows;
    let out = write_charts(&rows, &[], dir.path()).unwrap();
    assert!(dir.path().join(ALLOC_CHART).exists());
    assert!(!dir.path().join(RATIO_CHART).exists());
    assert!(
        out.notes.iter().any(|n| n.contains("no ratio chart")),
        "{:?}",
        out.notes
    );
    assert!(matches!(
        write_charts(&[], &[], dir.path()),
        Err(ReportError::NoData(_))
    ));
}

/// A deterministic log of `n` events over `threads` threads: a bump
/// allocator with random frees, a failure every 997 events.
fn synthetic_log(n: usize, threads: u64) -> String {
    let mut state = 42u64;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut text = String::from("Thread,Time,Action,Pointer,Size,Stream\n");
    let mut live: Vec<(u64, u64)> = Vec::new();
    let mut top = 0x7f00_0000_0000u64;
    for i in 0..n {
        let micros = i as u64 * 3;
        let time = format!(
            "10:{:02}:{:02}.{:06}",
            micros / 60_000_000,
            micros / 1_000_000 % 60,
            micros % 1_000_000
        );
        let thread = 140_000_000_000_000 + next() % threads;
        if i % 997 == 996 {
            text.push_str(&format!(
                "{thread},{time},allocate failure,(nil),{},0x0\n",
                1u64 << 40
            ));
        } else if !live.is_empty() && next() % 100 < 48 {
            let j = (next() % live.len() as u64) as usize;
            let (p, s) = live.swap_remove(j);
            text.push_str(&format!("{thread},{time},free,{p:#x},{s},0x0\n"));
        } else {
            let size = 256 + next() % (1 << 20);
            text.push_str(&format!("{thread},{time},allocate,{top:#x},{size},0x0\n"));
            live.push((top, size));
            top += size.div_ceil(256) * 256;
        }
    }
    text
}

#[test]
fn large_timeline_stays_small() {
    let text = synthetic_log(120_000, 8);
    let log = parse_memlog(&text, "big.log").unwrap();
    let tl = Timeline::from_log(&log);
    let s = tl.stats();
    assert_eq!(s.events, 120_000);
    assert_eq!(s.failures, 120);
    assert_eq!(s.unknown_frees, 0);
    assert_eq!(s.allocations, s.frees + s.never_freed);
    assert_eq!(s.peak_bytes, *tl.in_use.iter().max().unwrap());
    let opts = TimelineOptions {
        max_rects: 10_000,
        ..TimelineOptions::default()
    };
    let (svg, info) = render_svg(&tl, &opts).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.len() < 3 << 20, "SVG is {} bytes", svg.len());
    assert!(info.rects_drawn <= 10_000);
    assert!(info.line_points <= 2 * opts.max_points + 2);
    assert_eq!(info.color_by, ColorBy::Thread);
    assert!(svg.contains("failed allocation (120)"));
    assert!(svg.contains("thread 14000000000000"));
}

#[test]
fn timeline_svg_has_both_panels() {
    let tl = Timeline::from_log(&parse_memlog(RMM_LOG, "rmm.log").unwrap());
    let opts = TimelineOptions {
        color_by: ColorBy::Size,
        title: "hand log".into(),
        ..TimelineOptions::default()
    };
    let (svg, info) = render_svg(&tl, &opts).unwrap();
    assert!(svg.starts_with("<svg"));
    for label in [
        "hand log",
        "Bytes in use",
        "Address space",
        "failed allocation (1)",
        "1 unknown frees",
        "size ",
    ] {
        assert!(svg.contains(label), "timeline lacks `{label}`");
    }
    assert_eq!((info.allocations, info.rects_drawn, info.merged), (4, 4, 0));
    assert_eq!(info.x_axis, XAxis::Time);
}

#[test]
fn far_apart_mappings_are_collapsed_on_the_address_axis() {
    let text = "Thread,Time,Action,Pointer,Size,Stream\n\
        1,10:00:00.0,allocate,0x1000,100,0x0\n\
        1,10:00:00.1,allocate,0x1064,60,0x0\n\
        1,10:00:00.2,allocate,0x1000000000,40,0x0\n";
    let tl = Timeline::from_log(&parse_memlog(text, "far.log").unwrap());
    // Used: 160 + 40 = 200 bytes; the gap is far larger, so it becomes a band of 2% of 200.
    let map = AddressMap::new(&tl.allocations, true);
    assert_eq!(map.collapsed, 1);
    assert_eq!(
        (map.offset(0x1000), map.offset(0x1064), map.offset(0x10_0000_0000)),
        (0.0, 100.0, 164.0)
    );
    assert_eq!(map.total, 204.0);
    let full = AddressMap::new(&tl.allocations, false);
    assert_eq!(full.collapsed, 0);
    assert_eq!(full.total, (0x10_0000_0000u64 + 40 - 0x1000) as f64);
    let (svg, info) = render_svg(&tl, &TimelineOptions::default()).unwrap();
    assert_eq!(info.collapsed_gaps, 1);
    assert!(svg.contains("1 unused address gap(s) collapsed"));
}

/// The `rmm-report` program: where cargo built it, or beside the bundle's
/// `bin/` folder when the test binaries were moved to another machine
/// (scripts/gpu-bundle.sh puts it there).
fn report_binary() -> Command {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_rmm-report"));
    if built.exists() {
        return Command::new(built);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let beside = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("rmm-report"));
    match beside {
        Some(p) if p.exists() => Command::new(p),
        _ => panic!(
            "rmm-report not found at {} nor beside the test binaries",
            built.display()
        ),
    }
}

#[test]
fn binary_writes_charts_and_timeline() {
    let dir = TempDir::new("bin");
    let p = |name: &str| dir.path().join(name);
    std::fs::write(p("rmm.csv"), ANCHOR_CSV).unwrap();
    std::fs::write(p("ours.csv"), PROJECT_CSV).unwrap();
    std::fs::write(p("k.csv"), KERNEL_CSV).unwrap();
    std::fs::write(p("events.csv"), RMM_LOG).unwrap();
    let out = report_binary()
        .args(["charts", "--alloc"])
        .arg(p("rmm.csv"))
        .arg(p("ours.csv"))
        .arg("--kernels")
        .arg(p("k.csv"))
        .arg("--out")
        .arg(p("charts"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("wrote") && stdout.contains(SUMMARY), "{stdout}");
    assert!(p("charts").join(RATIO_CHART).exists());

    let out = report_binary()
        .args(["timeline", "--log"])
        .arg(p("events.csv"))
        .arg("--out")
        .arg(p("t.svg"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("peak bytes:        450 B"), "{stdout}");
    assert!(
        stdout.contains("frees of unknown pointers on line(s) 8"),
        "{stdout}"
    );
    assert!(std::fs::read_to_string(p("t.svg")).unwrap().starts_with("<svg"));
}

#[test]
fn binary_reports_errors_with_exit_codes() {
    let dir = TempDir::new("bin-err");
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "impl,resource,workload,params,seconds,ns_per_op,failed\nrmm,pool,random,n=1,0.1,x,0\n",
    )
    .unwrap();
    let out = report_binary()
        .args(["charts", "--alloc"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.csv:2: column `ns_per_op`: `x` is not a number"),
        "{stderr}"
    );

    let out = report_binary()
        .args(["charts", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = report_binary()
        .args(["timeline", "--log", "x.csv", "--out", "y.svg", "--x", "sideways"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = report_binary()
        .args(["timeline", "--log"])
        .arg(dir.path().join("absent.csv"))
        .args(["--out", "y.svg"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.csv"));
}

#[test]
fn binary_has_help_version_and_refuses_unknown_options() {
    let out = report_binary().args(["timeline", "--help"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for flag in ["--log", "--out", "--x", "--color", "--max-rects", "--full-span"] {
        assert!(stdout.contains(flag), "timeline --help lacks {flag}: {stdout}");
    }
    let out = report_binary().args(["charts", "--help"]).output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--kernels"));
    let out = report_binary().arg("--version").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("rmm-report "));
    let out = report_binary()
        .args(["timeline", "--log", "x.csv", "--out", "y.svg", "--sideways"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sideways"));
    let out = report_binary().arg("plot").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown subcommand is a usage error"
    );
}
