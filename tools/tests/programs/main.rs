//! The tests of the programs and their library, one module per former test
//! binary, linked once: `demo` (rmm-demo), `memlog` (one log parser for
//! rmm-replay and rmm-report), `replay_program` (rmm-replay) and `report`
//! (rmm-report's CSV readers, charts and timeline), `view` (the data of
//! `rmm-report view`'s page; the page itself is tested in a browser by
//! tools/tests/view/view_page.py).

mod demo;
mod memlog;
mod replay_program;
mod report;
mod view;
