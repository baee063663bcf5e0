//! # Benchmark charts and memory timelines
//!
//! The library behind the `rmm-report` binary:
//!
//! | Module | What |
//! |---|---|
//! | [`csv`] | tolerant parsers for the allocator and kernel benchmark CSVs; the memory-event log through `rmm_replay::memlog`, the one log parser |
//! | [`points`] | benchmark rows merged into points, the ratios to the anchors, and the display orders |
//! | [`charts`] | which charts are drawn from which rows (ns/op, ratio to RMM, thread scaling, kernel throughput), written with the summary |
//! | [`style`] | the charts' look: hues, log axes, value formats, the grouped bar chart and its legend |
//! | [`scaling`] | the thread-scaling chart (ns/op against host threads, project and RMM) |
//! | [`summary`] | the markdown summary of the ratios |
//! | [`timeline`] | replays a memory-event log: bytes in use, live intervals, statistics, and an SVG of the address space |
//! | [`view`] | the interactive page of a log or snapshot (`rmm-report view`): one self-contained HTML file |
//!
//! Everything here runs on the CPU and reads only files; nothing touches a GPU.
//! Bad input never panics: every parser and writer returns a [`ReportError`]
//! that names the file and, where there is one, the line.
#![forbid(unsafe_code)]

pub mod charts;
pub mod csv;
pub mod points;
pub mod scaling;
pub mod style;
pub mod summary;
pub mod timeline;
pub mod view;

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything that can go wrong while reading inputs or writing reports.
#[derive(Debug)]
pub enum ReportError {
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
    /// No header line was found before the first data line (or at all).
    NoHeader {
        /// Where the text came from (a path or a name given by the caller).
        origin: String,
        /// The columns a header must have.
        expected: String,
        /// The first data-looking line, if any.
        line: Option<usize>,
    },
    /// A header line lacks a required column.
    MissingColumn {
        /// Where the text came from.
        origin: String,
        /// The header's line number (1-based).
        line: usize,
        /// The missing column.
        column: String,
        /// The columns the header has.
        found: Vec<String>,
    },
    /// A data line could not be parsed.
    Parse {
        /// Where the text came from.
        origin: String,
        /// The line number (1-based).
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// The input has a header but no data rows.
    Empty {
        /// Where the text came from.
        origin: String,
    },
    /// Drawing a chart failed.
    Chart {
        /// The chart being drawn.
        what: String,
        /// The drawing library's message.
        message: String,
    },
    /// Nothing to draw: for example no allocator and no kernel rows at all.
    NoData(String),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            ReportError::NoHeader {
                origin,
                expected,
                line,
            } => match line {
                Some(line) => write!(
                    f,
                    "{origin}:{line}: data before any header line (expected a header with columns {expected})"
                ),
                None => write!(f, "{origin}: no header line with columns {expected} found"),
            },
            ReportError::MissingColumn {
                origin,
                line,
                column,
                found,
            } => write!(
                f,
                "{origin}:{line}: header lacks column `{column}` (found: {})",
                found.join(",")
            ),
            ReportError::Parse {
                origin,
                line,
                message,
            } => write!(f, "{origin}:{line}: {message}"),
            ReportError::Empty { origin } => write!(f, "{origin}: header found but no data rows"),
            ReportError::Chart { what, message } => write!(f, "drawing {what}: {message}"),
            ReportError::NoData(message) => write!(f, "{message}"),
        }
    }
}

impl std::error::Error for ReportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReportError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Reads a whole file as text, mapping errors to [`ReportError::Io`].
pub fn read_text(path: &Path) -> Result<String, ReportError> {
    let bytes = std::fs::read(path).map_err(|error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    // Logs may hold stray non-UTF-8 bytes (e.g. from another writer); keep going.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes text to a file, creating its parent folder, mapping errors to [`ReportError::Io`].
pub fn write_text(path: &Path, text: &str) -> Result<(), ReportError> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent).map_err(|error| ReportError::Io {
                path: parent.to_path_buf(),
                error,
            })?;
        }
    }
    std::fs::write(path, text).map_err(|error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// Formats a byte count with a binary unit, e.g. `1.50 GiB`.
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value.abs() >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{value:.0} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}
