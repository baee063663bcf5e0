//! Tolerant parsers for the three CSV formats the reports read.
//!
//! * allocator benchmark rows (`impl,resource,workload,params,seconds,ns_per_op,failed`,
//!   see `shared/anchors/WORKLOADS.md`);
//! * kernel benchmark rows (`impl,kernel,params,seconds,throughput,unit`, see
//!   `shared/anchors/KERNELS.md`);
//! * RMM's memory-event log (`Thread,Time,Action,Pointer,Size,Stream`, written by
//!   RMM's `logging_resource_adaptor` and by this project's logging adaptor),
//!   through the one parser, [`rmm_replay::memlog`] (its own rules; errors
//!   here name the file).
//!
//! What "tolerant" means here for the benchmark CSVs:
//! * blank lines, `#` comments, and lines without a comma (stray program output)
//!   are skipped; skipped non-blank lines are counted in [`Parsed::skipped`];
//! * header names are matched case-insensitively, in any order, and extra
//!   columns are ignored;
//! * files may be concatenated: a repeated header line starts a new section
//!   (its column order may differ);
//! * a UTF-8 byte-order mark, `\r\n` line ends and double-quoted fields work;
//! * a trailing empty field (a line ending in a comma) is ignored.
//!
//! What is an error (with the line number): data before any header, a header
//! missing a required column, a line with too few fields, a number that does
//! not parse.
#![forbid(unsafe_code)]

use std::path::Path;

use rmm_replay::memlog::{self, split_csv_line, MemoryLog};

use super::{read_text, ReportError};

/// The allocator benchmark's columns, in the order of WORKLOADS.md: the one
/// home of its header, which the benchmarks and `rmm-demo` print through
/// [`alloc_header`] and the parser requires.
pub const ALLOC_COLUMNS: [&str; 7] = [
    "impl",
    "resource",
    "workload",
    "params",
    "seconds",
    "ns_per_op",
    "failed",
];
/// The kernel benchmark's columns, in the order of KERNELS.md (printed
/// through [`kernel_header`]).
pub const KERNEL_COLUMNS: [&str; 6] = ["impl", "kernel", "params", "seconds", "throughput", "unit"];

/// The allocator benchmark's header line (without line end):
/// `impl,resource,workload,params,seconds,ns_per_op,failed`.
pub fn alloc_header() -> String {
    ALLOC_COLUMNS.join(",")
}

/// The kernel benchmark's header line (without line end):
/// `impl,kernel,params,seconds,throughput,unit`.
pub fn kernel_header() -> String {
    KERNEL_COLUMNS.join(",")
}

/// Rows parsed from one text, with the number of non-blank lines skipped as noise.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<T> {
    /// The data rows, in file order.
    pub rows: Vec<T>,
    /// Non-blank lines that were neither a header nor a data row (comments, stray output).
    pub skipped: usize,
}

impl<T> Default for Parsed<T> {
    fn default() -> Self {
        Parsed {
            rows: Vec::new(),
            skipped: 0,
        }
    }
}

/// One row of the allocator benchmark CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocRow {
    /// `rmm` for the anchor, anything else (e.g. `rmm-rs`) for the project.
    pub impl_name: String,
    /// The memory resource (`cuda`, `cuda_async`, `pool`, ...).
    pub resource: String,
    /// The workload (`random`, `hot_pair`, `threads8`, ...).
    pub workload: String,
    /// The workload's parameters, e.g. `n=10000 max=64MiB`.
    pub params: String,
    /// Wall time of the timed region in seconds.
    pub seconds: f64,
    /// Nanoseconds per allocate or deallocate call.
    pub ns_per_op: f64,
    /// Allocations that failed with out-of-memory (0 when the field is empty).
    pub failed: u64,
    /// The 1-based line number the row came from.
    pub line: usize,
}

/// One row of the kernel benchmark CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRow {
    /// `cupy` / `torch` for the anchors, anything else for the project.
    pub impl_name: String,
    /// The kernel (`fill`, `copy`, `sort`, ...).
    pub kernel: String,
    /// The parameters, e.g. `u32 n=2^28`.
    pub params: String,
    /// The best timed repetition in seconds.
    pub seconds: f64,
    /// Throughput in `unit`.
    pub throughput: f64,
    /// `GB/s`, `Gkeys/s`, ...
    pub unit: String,
    /// The 1-based line number the row came from.
    pub line: usize,
}

/// One data line with the required fields in the order the caller asked for.
struct Record {
    line: usize,
    fields: Vec<String>,
}

fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase()
}

/// Reads the data records of a table, each with the `required` columns in order.
fn read_table(text: &str, origin: &str, required: &[&str]) -> Result<(Vec<Record>, usize), ReportError> {
    // For the current section: the index in the line of each required column,
    // and the number of columns the header has.
    let mut mapping: Option<(Vec<usize>, usize, usize)> = None;
    let mut records = Vec::new();
    let mut skipped = 0;
    let mut saw_header = false;
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') || !line.contains(',') {
            skipped += 1;
            continue;
        }
        let fields = split_csv_line(line).map_err(|message| ReportError::Parse {
            origin: origin.into(),
            line: number,
            message,
        })?;
        let names: Vec<String> = fields.iter().map(|f| normalise(f)).collect();
        let hits = required.iter().filter(|r| names.iter().any(|n| n == *r)).count();
        // A header names at least half of the required columns (so a header
        // with a missing column is still recognised and reported as such).
        if hits * 2 >= required.len() && hits > 0 {
            let mut indices = Vec::with_capacity(required.len());
            for column in required {
                match names.iter().position(|n| n == column) {
                    Some(i) => indices.push(i),
                    None => {
                        return Err(ReportError::MissingColumn {
                            origin: origin.into(),
                            line: number,
                            column: (*column).to_string(),
                            found: fields.clone(),
                        })
                    }
                }
            }
            mapping = Some((indices, fields.len(), number));
            saw_header = true;
            continue;
        }
        let Some((indices, width, header_line)) = &mapping else {
            return Err(ReportError::NoHeader {
                origin: origin.into(),
                expected: required.join(","),
                line: Some(number),
            });
        };
        let mut fields = fields;
        // A trailing comma leaves one empty field too many: drop it.
        while fields.len() > *width && fields.last().is_some_and(|f| f.is_empty()) {
            fields.pop();
        }
        let needed = indices.iter().copied().max().map_or(0, |m| m + 1);
        if fields.len() < needed {
            return Err(ReportError::Parse {
                origin: origin.into(),
                line: number,
                message: format!(
                    "expected {width} fields as in the header on line {header_line}, found {}",
                    fields.len()
                ),
            });
        }
        let picked = indices.iter().map(|&i| fields[i].clone()).collect();
        records.push(Record {
            line: number,
            fields: picked,
        });
    }
    if !saw_header {
        return Err(ReportError::NoHeader {
            origin: origin.into(),
            expected: required.join(","),
            line: None,
        });
    }
    if records.is_empty() {
        return Err(ReportError::Empty {
            origin: origin.into(),
        });
    }
    Ok((records, skipped))
}

fn parse_f64(value: &str, column: &str, origin: &str, line: usize) -> Result<f64, ReportError> {
    value.parse::<f64>().map_err(|_| ReportError::Parse {
        origin: origin.into(),
        line,
        message: format!("column `{column}`: `{value}` is not a number"),
    })
}

fn parse_u64(value: &str, column: &str, origin: &str, line: usize) -> Result<u64, ReportError> {
    let parsed = if let Some(hex) = value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        value.parse::<u64>().ok().or_else(|| {
            // Tolerate `1024.0` style integers.
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.fract() == 0.0 && *v >= 0.0 && *v < 1.8e19)
                .map(|v| v as u64)
        })
    };
    parsed.ok_or_else(|| ReportError::Parse {
        origin: origin.into(),
        line,
        message: format!("column `{column}`: `{value}` is not a non-negative integer"),
    })
}

/// Parses allocator benchmark CSV text. `origin` names the text in errors.
pub fn parse_alloc_csv(text: &str, origin: &str) -> Result<Parsed<AllocRow>, ReportError> {
    let (records, skipped) = read_table(text, origin, &ALLOC_COLUMNS)?;
    let mut rows = Vec::with_capacity(records.len());
    for Record { line, fields } in records {
        let failed = if fields[6].is_empty() {
            0
        } else {
            parse_u64(&fields[6], "failed", origin, line)?
        };
        rows.push(AllocRow {
            impl_name: fields[0].clone(),
            resource: fields[1].clone(),
            workload: fields[2].clone(),
            params: fields[3].clone(),
            seconds: parse_f64(&fields[4], "seconds", origin, line)?,
            ns_per_op: parse_f64(&fields[5], "ns_per_op", origin, line)?,
            failed,
            line,
        });
    }
    Ok(Parsed { rows, skipped })
}

/// Parses kernel benchmark CSV text. `origin` names the text in errors.
pub fn parse_kernel_csv(text: &str, origin: &str) -> Result<Parsed<KernelRow>, ReportError> {
    let (records, skipped) = read_table(text, origin, &KERNEL_COLUMNS)?;
    let mut rows = Vec::with_capacity(records.len());
    for Record { line, fields } in records {
        rows.push(KernelRow {
            impl_name: fields[0].clone(),
            kernel: fields[1].clone(),
            params: fields[2].clone(),
            seconds: parse_f64(&fields[3], "seconds", origin, line)?,
            throughput: parse_f64(&fields[4], "throughput", origin, line)?,
            unit: fields[5].clone(),
            line,
        });
    }
    Ok(Parsed { rows, skipped })
}

/// Reads and parses allocator CSV files, concatenating their rows.
pub fn read_alloc_files<P: AsRef<Path>>(paths: &[P]) -> Result<Parsed<AllocRow>, ReportError> {
    read_many(paths, parse_alloc_csv)
}

/// Reads and parses kernel CSV files, concatenating their rows.
pub fn read_kernel_files<P: AsRef<Path>>(paths: &[P]) -> Result<Parsed<KernelRow>, ReportError> {
    read_many(paths, parse_kernel_csv)
}

/// Parses a memory-event log with the one parser, [`rmm_replay::memlog`]
/// (the replay engine's), naming `origin` in errors.
///
/// ```
/// use rmm_tools::report::csv::parse_memlog;
/// let log = parse_memlog("Action,Pointer,Size\nalloc,0x10,8\n", "mine.csv").unwrap();
/// assert_eq!(log.events.len(), 1);
/// let e = parse_memlog("Action,Pointer,Size\ngrow,0x10,8\n", "mine.csv").unwrap_err();
/// assert!(e.to_string().starts_with("mine.csv:2: column `Action`"));
/// ```
pub fn parse_memlog(text: &str, origin: &str) -> Result<MemoryLog, ReportError> {
    memlog::parse(text).map_err(|e| match e.line {
        Some(line) => ReportError::Parse {
            origin: origin.into(),
            line,
            message: e.message,
        },
        None => ReportError::NoData(format!("{origin}: {}", e.message)),
    })
}

/// Reads and parses one memory-event log file (see [`parse_memlog`]).
pub fn read_memlog_file(path: &Path) -> Result<MemoryLog, ReportError> {
    parse_memlog(&read_text(path)?, &path.display().to_string())
}

fn read_many<P: AsRef<Path>, T>(
    paths: &[P],
    parse: fn(&str, &str) -> Result<Parsed<T>, ReportError>,
) -> Result<Parsed<T>, ReportError> {
    let mut all = Parsed {
        rows: Vec::new(),
        skipped: 0,
    };
    for path in paths {
        let path = path.as_ref();
        let parsed = parse(&read_text(path)?, &path.display().to_string())?;
        all.rows.extend(parsed.rows);
        all.skipped += parsed.skipped;
    }
    Ok(all)
}
