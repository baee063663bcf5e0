//! The `rmm-demo` binary: it runs to the end, says where it ran on its first
//! line, prints a row per resource, and writes its CSV, chart, event log and
//! timeline. One test forces the simulated path (CPU everywhere); the other
//! runs on whatever the machine has (the GPU path on a GPU machine).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rmm_tools::report::csv::{parse_alloc_csv, parse_memlog};

/// A fresh, empty folder under the system temp folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    /// The folder's path, not created (the demo creates it).
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("rmm-demo-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        TempDir(dir)
    }
    /// The folder.
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The demo binary: cargo's, or the one beside the test binaries' folder
/// (the GPU bundle).
fn demo_binary() -> Command {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_rmm-demo"));
    if built.exists() {
        return Command::new(built);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let beside = exe.parent().and_then(|d| d.parent()).map(|d| d.join("rmm-demo"));
    match beside {
        Some(p) if p.exists() => Command::new(p),
        _ => panic!(
            "rmm-demo not found at {} nor beside the test binaries",
            built.display()
        ),
    }
}

/// Runs the demo with `args` and `--out out`; returns its output and stdout.
fn run_demo(args: &[&str], out: &Path) -> (Output, String) {
    let output = demo_binary()
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run rmm-demo");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&output.stderr));
    (output, stdout)
}

/// The table row of `resource`: (ops, failures).
fn table_row(stdout: &str, resource: &str) -> (u64, u64) {
    let line = stdout
        .lines()
        .find(|l| {
            let mut f = l.split_whitespace();
            f.next() == Some(resource) && f.next().is_some_and(|ops| ops.parse::<u64>().is_ok())
        })
        .unwrap_or_else(|| panic!("no table row for {resource}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    (
        fields[1].parse().expect("ops"),
        fields.last().and_then(|f| f.parse().ok()).expect("failures"),
    )
}

/// Checks the files the demo writes into `out`.
fn check_outputs(out: &Path, resources: &[&str]) {
    let csv = std::fs::read_to_string(out.join("results.csv")).expect("results.csv");
    let rows = parse_alloc_csv(&csv, "results.csv")
        .expect("results.csv parses")
        .rows;
    assert_eq!(rows.len(), resources.len() * 4, "3 phases + all per resource");
    for r in resources {
        assert!(rows.iter().any(|row| row.resource == *r && row.workload == "all"));
    }
    assert!(rows.iter().all(|r| r.ns_per_op > 0.0 && r.failed == 0));
    for svg in ["ns_per_op.svg", "pool_timeline.svg"] {
        let text = std::fs::read_to_string(out.join(svg)).expect(svg);
        assert!(text.contains("<svg"), "{svg} is an SVG");
    }
    let log = std::fs::read_to_string(out.join("pool_events.csv")).expect("pool_events.csv");
    let events = parse_memlog(&log, "pool_events.csv")
        .expect("event log parses")
        .events;
    assert!(events.len() > 1000, "{} events", events.len());
    let page = std::fs::read_to_string(out.join("pool_view.html")).expect("pool_view.html");
    let header = format!("\"events\":{}", events.len());
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains(&header),
        "pool_view.html holds the log"
    );
}

#[test]
fn demo_on_the_simulated_device() {
    let out = TempDir::new("simulated");
    let (output, stdout) = run_demo(&["--simulated", "--steps", "3000"], out.path());
    assert!(output.status.success(), "exit status {}", output.status);
    assert!(
        stdout.lines().next().unwrap_or("").contains("NO GPU USED"),
        "first line says no GPU is used"
    );
    assert!(stdout.contains("bookkeeping cost only"));
    let resources = ["simulated", "pool", "binning", "arena"];
    let (ops, _) = table_row(&stdout, "simulated");
    for r in resources {
        assert_eq!(table_row(&stdout, r), (ops, 0), "{r}: same workload, no failure");
    }
    check_outputs(out.path(), &resources);
}

#[test]
fn demo_on_this_machine() {
    let out = TempDir::new("default");
    let (output, stdout) = run_demo(&["--steps", "2000"], out.path());
    assert!(output.status.success(), "exit status {}", output.status);
    let first = stdout.lines().next().unwrap_or("");
    let resources: &[&str] = if rmm::device::is_available() {
        assert!(first.contains("GPU found"), "first line: {first}");
        &["cuda", "cuda_async", "pool", "binning", "arena"]
    } else {
        assert!(first.contains("NO GPU USED"), "first line: {first}");
        &["simulated", "pool", "binning", "arena"]
    };
    for r in resources {
        assert_eq!(table_row(&stdout, r).1, 0, "{r}: no failure");
    }
    check_outputs(out.path(), resources);
}
