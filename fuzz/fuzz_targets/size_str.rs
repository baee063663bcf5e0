//! Fuzz target `size_str`: the Python package's size parser,
//! [`rmm_replay::sizes::parse_size_str`], on arbitrary text.
//!
//! Checked on every input: no panic; an accepted size reads back the same
//! as plain decimal bytes, with a `B` unit, and as `KiB` when it is a whole
//! number of KiB; a plain run of decimal digits reads as its value (or is
//! refused as too large).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm_replay::sizes::parse_size_str;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_size_str(text);
    if let Ok(n) = parsed {
        assert_eq!(parse_size_str(&n.to_string()), Ok(n), "{text:?}");
        assert_eq!(parse_size_str(&format!(" {n} B ")), Ok(n), "{text:?}");
        if n % 1024 == 0 {
            assert_eq!(parse_size_str(&format!("{}KiB", n / 1024)), Ok(n), "{text:?}");
        }
    }
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        match t.parse::<usize>() {
            Ok(v) => assert_eq!(parsed, Ok(v), "{text:?}"),
            Err(_) => assert!(
                parsed.is_err(),
                "{text:?} overflows usize but parsed as {parsed:?}"
            ),
        }
    }
});
