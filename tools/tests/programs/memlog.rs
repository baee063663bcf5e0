//! One memory-event log parser: `rmm-replay` (through `rmm_replay`) and
//! `rmm-report timeline` (through `rmm_tools::report::csv`) accept and refuse
//! the same inputs, as libraries and as programs, with the same line named.

use std::path::{Path, PathBuf};
use std::process::Command;

use rmm_tools::report::csv::parse_memlog;
use rmm_tools::report::timeline::Timeline;

const HEAD: &str = "Thread,Time,Action,Pointer,Size,Stream\n";

/// (name, log, accepted?)
fn cases() -> Vec<(&'static str, String, bool)> {
    vec![
        ("rmm", format!("{HEAD}140281948427072,12:00:00.000000,allocate,0x7f12a4001000,100,0x5601d2c3e2a0\n140281948427072,12:00:00.000010,free,0x7f12a4001000,100,0x5601d2c3e2a0\n"), true),
        ("ours", format!("{HEAD}1,10:00:00.000001,allocate,0x7f0000000000,1000,0x0\n2,10:00:00.000002,allocate failure,(nil),3000,0x0\n"), true),
        ("comments", format!("# a comment\n{HEAD}# another\n1,,allocate,0x10,8,0x0\n"), true),
        ("quoted", format!("{HEAD}\"1\",\"\",\"allocate\",\"0x10\",\"8\",\"0x0\"\n"), true),
        ("bom", format!("\u{feff}{HEAD}1,,allocate,0x10,8,0x0\r\n"), true),
        ("dealloc", format!("{HEAD}1,,alloc,0x10,8,0x0\n1,,dealloc,0x10,8,0x0\n1,,allocate,0x20,8,0x0\n1,,deallocate,0x20,8,0x0\n"), true),
        ("no time, stream or thread", "Action,Pointer,Size\nallocate,0x10,8\nfree,0x10,8\n".into(), true),
        ("no time", "Thread,Action,Pointer,Size,Stream\n1,allocate,0x10,8,0x0\n".into(), true),
        ("empty", String::new(), false),
        ("only comments", "# nothing\n".into(), false),
        ("no pointer column", "Thread,Time,Action,Size,Stream\n1,,allocate,8,0x0\n".into(), false),
        ("unknown action", format!("{HEAD}1,,allocate,0x10,8,0x0\n1,,grow,0x10,8,0x0\n"), false),
        ("bad pointer", format!("{HEAD}1,,allocate,0xzz,8,0x0\n"), false),
        ("bad size", format!("{HEAD}1,,allocate,0x10,-8,0x0\n"), false),
        ("bad time", format!("{HEAD}1,noon,allocate,0x10,8,0x0\n"), false),
        ("short line", format!("{HEAD}1,,allocate\n"), false),
        ("open quote", format!("{HEAD}\"1,,allocate,0x10,8,0x0\n"), false),
    ]
}

#[test]
fn replay_and_timeline_accept_and_refuse_the_same_logs() {
    for (name, text, accepted) in cases() {
        let replay = rmm_replay::parse_log(text.as_bytes());
        let timeline = parse_memlog(&text, "log.csv");
        assert_eq!(replay.is_ok(), accepted, "{name}: replay gave {replay:?}");
        assert_eq!(timeline.is_ok(), accepted, "{name}: timeline gave {timeline:?}");
        match (replay, timeline) {
            (Ok(events), Ok(log)) => {
                assert_eq!(events, log.events, "{name}");
                assert_eq!(Timeline::from_log(&log).events, events.len(), "{name}");
            }
            (Err(r), Err(t)) => {
                // Both name the same line (or none).
                let line = |s: &str| {
                    s.split("memory log line ")
                        .nth(1)
                        .map(|l| l.split(':').next().unwrap_or("").to_string())
                };
                let t = t.to_string();
                let t_line = t
                    .strip_prefix("log.csv:")
                    .and_then(|rest| rest.split(':').next())
                    .map(str::to_string);
                let t_line = t_line.filter(|l| l.chars().all(|c| c.is_ascii_digit()));
                assert_eq!(line(&r.to_string()), t_line, "{name}: {r} / {t}");
            }
            _ => unreachable!(),
        }
    }
}

/// A program of this package: where cargo built it, or beside the test
/// binaries' folder (the GPU bundle).
fn program(built: &str, name: &str) -> Option<PathBuf> {
    let built = PathBuf::from(built);
    if built.exists() {
        return Some(built);
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(name), dir.parent()?.join(name)]
        .into_iter()
        .find(|p| p.exists())
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("rmm-memlog-{}-{name}", std::process::id()))
}

#[test]
fn the_programs_accept_and_refuse_the_same_logs() {
    let (Some(replay), Some(report)) = (
        program(env!("CARGO_BIN_EXE_rmm-replay"), "rmm-replay"),
        program(env!("CARGO_BIN_EXE_rmm-report"), "rmm-report"),
    ) else {
        rmm_testing::report_skip(
            "the_programs_accept_and_refuse_the_same_logs",
            "programs not found",
        );
        return;
    };
    for (i, (name, text, accepted)) in cases().into_iter().enumerate() {
        let log = temp(&format!("{i}.csv"));
        let svg = temp(&format!("{i}.svg"));
        std::fs::write(&log, &text).unwrap();
        let run = |cmd: &Path, args: &[&std::ffi::OsStr]| Command::new(cmd).args(args).output().unwrap();
        let r = run(
            &replay,
            &[
                "--size".as_ref(),
                "1".as_ref(),
                "--file".as_ref(),
                log.as_os_str(),
            ],
        );
        let t = run(
            &report,
            &[
                "timeline".as_ref(),
                "--log".as_ref(),
                log.as_os_str(),
                "--out".as_ref(),
                svg.as_os_str(),
            ],
        );
        let show = |o: &std::process::Output| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        };
        assert_eq!(r.status.success(), accepted, "{name}: rmm-replay: {}", show(&r));
        assert_eq!(
            t.status.success(),
            accepted,
            "{name}: rmm-report timeline: {}",
            show(&t)
        );
        if !accepted {
            assert_eq!((r.status.code(), t.status.code()), (Some(1), Some(1)), "{name}");
        }
        let _ = std::fs::remove_file(&log);
        let _ = std::fs::remove_file(&svg);
    }
}
