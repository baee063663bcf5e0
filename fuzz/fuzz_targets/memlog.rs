//! Fuzz target `memlog`: the memory-event log parser
//! ([`rmm_replay::memlog::parse`]) on arbitrary bytes, through each of its
//! three entries: `memlog::parse` (text), `rmm_replay::parse_log` (the replay
//! engine's, bytes through `memlog::read`) and `rmm-report`'s
//! `parse_memlog` (tools/src/report/csv.rs). The last two wrap the first;
//! the target checks that they agree with it.
//!
//! Checked on every input: no panic; the three entries accept and refuse
//! the same inputs (an error names the same line); every event names a line
//! of the text and a known thread; and an accepted log, written back as a
//! canonical CSV (every column, every field quoted), parses to the same
//! events and threads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm_replay::memlog::{self, Action, MemoryLog};
use rmm_tools::report::csv::parse_memlog;

/// `text` as one double-quoted CSV field.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// The log written back with every column.
fn canonical(log: &MemoryLog) -> String {
    let mut out = String::from("Thread,Time,Action,Pointer,Size,Stream\n");
    for e in &log.events {
        let time = e.time.map_or(String::new(), |t| t.to_string());
        let action = match e.action {
            Action::Allocate => "allocate",
            Action::AllocateFailure => "allocate failure",
            Action::Free => "free",
        };
        out += &format!(
            "{},{},{action},{:#x},{},{:#x}\n",
            quoted(&log.threads[e.thread]),
            quoted(&time),
            e.pointer,
            e.size,
            e.stream
        );
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = memlog::parse(&text);
    let events = rmm_replay::parse_log(data);
    let report = parse_memlog(&text, "fuzz.csv");
    match &parsed {
        Ok(log) => {
            assert_eq!(events.as_ref().ok(), Some(&log.events), "parse_log differs");
            assert_eq!(report.as_ref().ok(), Some(log), "parse_memlog differs");
        }
        Err(e) => {
            assert!(events.is_err(), "parse_log accepted what parse refused: {e}");
            let message = report
                .expect_err("parse_memlog accepted what parse refused")
                .to_string();
            if let Some(line) = e.line {
                assert!(
                    message.starts_with(&format!("fuzz.csv:{line}:")),
                    "{message} vs {e}"
                );
            }
        }
    }
    let Ok(log) = parsed else { return };
    let lines = text.lines().count();
    for e in &log.events {
        assert!((1..=lines).contains(&e.line), "event line {} of {lines}", e.line);
        assert!(e.thread < log.threads.len());
    }
    let written = canonical(&log);
    let again = memlog::parse(&written).unwrap_or_else(|e| panic!("canonical log refused: {e}\n{written}"));
    assert_eq!(
        again.threads, log.threads,
        "threads after the round trip\n{written}"
    );
    assert_eq!(again.events.len(), log.events.len());
    for (a, b) in again.events.iter().zip(&log.events) {
        let (mut a, b) = (*a, *b);
        a.line = b.line;
        assert_eq!(a, b, "event after the round trip\n{written}");
    }
});
