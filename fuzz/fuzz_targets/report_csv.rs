//! Fuzz target `report_csv`: the benchmark-result CSV readers of
//! `rmm-report` ([`parse_alloc_csv`] and [`parse_kernel_csv`] in
//! tools/src/report/csv.rs), on arbitrary text. That format (one row per
//! benchmark case) is not the memory-event log; the log has its own target,
//! `memlog`.
//!
//! Checked on every input: no panic; every row of an accepted table names a
//! line of the text; an error names a line of the text (or none).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm_tools::report::csv::{parse_alloc_csv, parse_kernel_csv};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count();
    match parse_alloc_csv(text, "fuzz.csv") {
        Ok(parsed) => {
            assert!(!parsed.rows.is_empty());
            assert!(parsed.rows.iter().all(|r| (1..=lines).contains(&r.line)));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    match parse_kernel_csv(text, "fuzz.csv") {
        Ok(parsed) => {
            assert!(!parsed.rows.is_empty());
            assert!(parsed.rows.iter().all(|r| (1..=lines).contains(&r.line)));
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
