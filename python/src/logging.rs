//! RMM's logging-level functions over the crate's debug logger
//! (`rmm::logger`, the `log` facade): `set_logging_level`,
//! `get_logging_level`, `should_log`, `flush_logger`.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU8, Ordering};

use log::LevelFilter;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt, PyString};

/// Levels as rapids-logger numbers them (`rmm.level_enum`).
const NAMES: [&str; 7] = ["trace", "debug", "info", "warn", "error", "critical", "off"];

/// `level_enum.n_levels`: the number of levels, also accepted as a level
/// (as rapids-logger does); like `off`, nothing is logged at it.
const N_LEVELS: u8 = NAMES.len() as u8;

/// The level set from Python (index into `NAMES`, or `N_LEVELS`); info by
/// default.
static LEVEL: AtomicU8 = AtomicU8::new(2);

fn filter(level: u8) -> LevelFilter {
    match level {
        0 => LevelFilter::Trace,
        1 => LevelFilter::Debug,
        2 => LevelFilter::Info,
        3 => LevelFilter::Warn,
        4 | 5 => LevelFilter::Error,
        _ => LevelFilter::Off,
    }
}

/// Installs the crate's debug logger (`RMM_DEBUG_LOG_FILE`,
/// `RMM_DEBUG_LOG_LEVEL`); keeps a logger someone installed first.
pub(crate) fn install() {
    if rmm::logger::init().is_err() && !log_installed() {
        // A bad RMM_DEBUG_LOG_LEVEL or file: log to stderr at info.
        let _ = rmm::logger::init_with(LevelFilter::Info, None);
    }
    let initial = match log::max_level() {
        LevelFilter::Trace => 0,
        LevelFilter::Debug => 1,
        LevelFilter::Info => 2,
        LevelFilter::Warn => 3,
        LevelFilter::Error => 4,
        LevelFilter::Off => 6,
    };
    LEVEL.store(initial, Ordering::Relaxed);
}

fn log_installed() -> bool {
    // `log` has no query for an installed logger; a level above Off means
    // someone (us or another) set one up.
    log::max_level() != LevelFilter::Off
}

fn level_arg(level: &Bound<'_, PyAny>) -> PyResult<u8> {
    if level.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(
            "level must be a level name or rmm_rs.level_enum, not bool",
        ));
    }
    if let Ok(s) = level.cast::<PyString>() {
        let name = s.extract::<String>()?.trim().to_ascii_lowercase();
        let name = match name.as_str() {
            "warning" => "warn",
            "err" => "error",
            other => other,
        }
        .to_string();
        return NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| i as u8)
            .ok_or_else(|| {
                PyValueError::new_err(format!("unknown logging level {name:?}; one of {NAMES:?}"))
            });
    }
    if level.is_instance_of::<PyInt>() {
        let n: i64 = level.extract()?;
        return u8::try_from(n)
            .ok()
            .filter(|&n| n <= N_LEVELS)
            .ok_or_else(|| PyValueError::new_err(format!("logging level {n} is not in 0..={N_LEVELS}")));
    }
    Err(PyTypeError::new_err(format!(
        "level must be a level name or rmm_rs.level_enum, not {}",
        level.get_type().name()?
    )))
}

/// Sets the debug logger's level (`"trace"` .. `"off"` or `level_enum`).
#[pyfunction]
fn set_logging_level(level: &Bound<'_, PyAny>) -> PyResult<()> {
    let l = level_arg(level)?;
    LEVEL.store(l, Ordering::Relaxed);
    rmm::logger::set_level(filter(l));
    Ok(())
}

/// The current level as an int (`rmm_rs.level_enum` wraps it).
#[pyfunction]
fn _get_logging_level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// True when a message at `level` would be logged.
#[pyfunction]
fn should_log(level: &Bound<'_, PyAny>) -> PyResult<bool> {
    let l = level_arg(level)?;
    let current = LEVEL.load(Ordering::Relaxed);
    // `off` (6) and `n_levels` (7) log nothing.
    Ok(l < 6 && current < 6 && l >= current)
}

/// Writes buffered debug log lines out.
#[pyfunction]
fn flush_logger() {
    log::logger().flush();
}

/// Writes `message` to the debug log at `level` (for tests and for the
/// package's Python side).
#[pyfunction]
fn _log(level: &Bound<'_, PyAny>, message: &str) -> PyResult<()> {
    let l = level_arg(level)?;
    match l {
        0 => log::trace!("{message}"),
        1 => log::debug!("{message}"),
        2 => log::info!("{message}"),
        3 => log::warn!("{message}"),
        4 | 5 => log::error!("{message}"),
        _ => {}
    }
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_logging_level, m)?)?;
    m.add_function(wrap_pyfunction!(_get_logging_level, m)?)?;
    m.add_function(wrap_pyfunction!(should_log, m)?)?;
    m.add_function(wrap_pyfunction!(flush_logger, m)?)?;
    m.add_function(wrap_pyfunction!(_log, m)?)?;
    Ok(())
}
