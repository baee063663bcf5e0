//! A count of the error-level log records of the calling thread, for tests
//! that check that misuse is logged (once) and that valid work logs nothing.
//!
//! The first call installs a `log` logger that counts error records per
//! thread (and keeps nothing else); a process with another logger already
//! installed keeps it, and the count then stays 0, which such a test sees
//! as a failure rather than a pass.
//!
//! ```
//! let before = rmm_testing::error_log_count();
//! log::error!("a refused free");
//! assert_eq!(rmm_testing::error_log_count(), before + 1);
//! ```
#![forbid(unsafe_code)]

use std::cell::Cell;

thread_local! {
    static ERRORS: Cell<usize> = const { Cell::new(0) };
}

struct CountErrors;

impl log::Log for CountErrors {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Error
    }

    fn log(&self, r: &log::Record<'_>) {
        if r.level() == log::Level::Error {
            ERRORS.with(|e| e.set(e.get() + 1));
        }
    }

    fn flush(&self) {}
}

static LOGGER: CountErrors = CountErrors;

/// The error-level log records of this thread so far (installing the
/// counting logger on the first call).
pub fn error_log_count() -> usize {
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(log::LevelFilter::Error);
    }
    ERRORS.with(Cell::get)
}
