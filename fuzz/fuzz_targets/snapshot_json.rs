//! Fuzz target `snapshot_json`: the snapshot reader,
//! [`rmm::mr::Snapshot::from_json`], on arbitrary text.
//!
//! Checked on every input: no panic; a snapshot it accepts writes back
//! ([`Snapshot::to_json`](rmm::mr::Snapshot::to_json)) to JSON that reads
//! as the same snapshot.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rmm::mr::Snapshot;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(snapshot) = Snapshot::from_json(text) {
        let json = snapshot.to_json();
        let again = Snapshot::from_json(&json)
            .unwrap_or_else(|e| panic!("{text:?} read, but its own JSON {json:?} did not: {e}"));
        assert_eq!(again, snapshot, "round trip of {text:?}");
    }
});
