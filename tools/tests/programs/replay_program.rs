//! The `rmm-replay` program: it replays the RMM-format fixture over the
//! simulated resource, has `--help` and `--version`, and refuses unknown
//! options and resources with a usage error.

use std::process::Command;

/// The log in RMM's format that `rmm`'s replay tests use: one fixture, kept
/// with the library (embedded, so the test binary runs anywhere).
const FIXTURE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../rmm-replay/tests/data/rmm_log.csv"
));

/// The `rmm-replay` binary: where cargo built it, or next to this test
/// binary's directory when the binaries were moved together.
fn replay_binary() -> Option<std::path::PathBuf> {
    let built = std::path::PathBuf::from(env!("CARGO_BIN_EXE_rmm-replay"));
    if built.exists() {
        return Some(built);
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join("rmm-replay"), dir.parent()?.join("rmm-replay")]
        .into_iter()
        .find(|p| p.exists())
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("rmm-replay-bin-{}-{name}", std::process::id()))
}

#[test]
fn replay_binary_runs_the_fixture() {
    let Some(bin) = replay_binary() else {
        // Only where the test binary was shipped without the tool (a GPU bundle).
        rmm_testing::report_skip("replay_binary_runs_the_fixture", "rmm-replay binary not found");
        return;
    };
    let log = temp_path("fixture.csv");
    std::fs::write(&log, FIXTURE).unwrap();
    let out = Command::new(&bin)
        .args([
            "--file",
            log.to_str().unwrap(),
            "--resource",
            "simulated",
            "--size",
            "1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("events:                 10 on 3 thread(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("peak:                   2004608 bytes"),
        "{stdout}"
    );
    assert!(stdout.contains("fragmentation at peak:  n/a"), "{stdout}");

    let bad = Command::new(&bin)
        .args(["--file", log.to_str().unwrap(), "--resource", "nope"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown resource"));

    let missing = Command::new(&bin).output().unwrap();
    assert_eq!(missing.status.code(), Some(2), "no --file is a usage error");
    std::fs::remove_file(&log).unwrap();
}

#[test]
fn replay_binary_has_help_and_version() {
    let Some(bin) = replay_binary() else {
        rmm_testing::report_skip(
            "replay_binary_has_help_and_version",
            "rmm-replay binary not found",
        );
        return;
    };
    let help = Command::new(&bin).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for flag in ["--file", "--resource", "--size", "--verbose", "simulated-pool"] {
        assert!(text.contains(flag), "--help lacks {flag}: {text}");
    }
    let version = Command::new(&bin).arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("rmm-replay "));
    let unknown = Command::new(&bin)
        .args(["--file", "x.csv", "--bogus"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    let size = Command::new(&bin)
        .args(["--file", "x.csv", "--size", "-1"])
        .output()
        .unwrap();
    assert_eq!(size.status.code(), Some(2));
}

#[test]
fn replay_binary_starts_from_a_snapshot() {
    let Some(bin) = replay_binary() else {
        rmm_testing::report_skip(
            "replay_binary_starts_from_a_snapshot",
            "rmm-replay binary not found",
        );
        return;
    };
    use rmm::mr::{snapshot, MemoryResource, SimulatedMemoryResource, TrackingAdaptor};
    let tracked = TrackingAdaptor::new(SimulatedMemoryResource::new(1 << 30), false);
    let kept = tracked
        .allocate(40_000, 256, rmm::CudaStreamView::DEFAULT)
        .unwrap();
    let snap = temp_path("snapshot.json");
    std::fs::write(&snap, snapshot(&tracked).to_json()).unwrap();
    let log = temp_path("after-snapshot.csv");
    std::fs::write(
        &log,
        format!(
            "Thread,Time,Action,Pointer,Size,Stream\n\
             1,10:00:00.000001,allocate,0x7f0000000000,10000,0x0\n\
             1,10:00:00.000002,free,{:#x},40000,0x0\n\
             1,10:00:00.000003,free,0x7f0000000000,10000,0x0\n",
            kept.addr()
        ),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--file",
            log.to_str().unwrap(),
            "--resource",
            "simulated",
            "--size",
            "1",
        ];
        args.extend_from_slice(extra);
        let out = Command::new(&bin).args(&args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let from = run(&["--snapshot", snap.to_str().unwrap()]);
    assert!(from.contains("peak:                   50000 bytes"), "{from}");
    assert!(from.contains("unmatched frees:        0"), "{from}");
    assert!(
        from.contains("preloaded:              1 allocation(s) from the snapshot, 0 refused"),
        "{from}"
    );
    let plain = run(&[]);
    assert!(plain.contains("unmatched frees:        1"), "{plain}");
    // A file that is no snapshot is refused clearly.
    let out = Command::new(&bin)
        .args([
            "--file",
            log.to_str().unwrap(),
            "--snapshot",
            log.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("snapshot is not JSON"));
    // SAFETY: `kept` came from `tracked` with these arguments.
    unsafe { tracked.deallocate(kept, 40_000, 256, rmm::CudaStreamView::DEFAULT) };
    let _ = std::fs::remove_file(&snap);
    let _ = std::fs::remove_file(&log);
}
