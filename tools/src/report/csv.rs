//! Tolerant parsers for the three CSV formats the reports read.
//!
//! * allocator benchmark rows (`impl,resource,workload,params,seconds,ns_per_op,failed`,
//!   see `shared/anchors/WORKLOADS.md`);
//! * kernel benchmark rows (`impl,kernel,params,seconds,throughput,unit`, see
//!   `shared/anchors/KERNELS.md`);
//! * RMM's memory-event log (`Thread,Time,Action,Pointer,Size,Stream`, written by
//!   RMM's `logging_resource_adaptor` and by this project's logging adaptor).
//!
//! What "tolerant" means here:
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
//! not parse, an unknown memory-event action.

use std::path::Path;

use super::{read_text, ReportError};

/// The allocator benchmark's columns, in the order of WORKLOADS.md.
pub const ALLOC_COLUMNS: [&str; 7] = [
    "impl",
    "resource",
    "workload",
    "params",
    "seconds",
    "ns_per_op",
    "failed",
];
/// The kernel benchmark's columns, in the order of KERNELS.md.
pub const KERNEL_COLUMNS: [&str; 6] = ["impl", "kernel", "params", "seconds", "throughput", "unit"];
/// The memory-event log's columns, in the order RMM writes them.
pub const MEMLOG_COLUMNS: [&str; 6] = ["thread", "time", "action", "pointer", "size", "stream"];

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

/// What a memory-event line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A successful allocation.
    Allocate,
    /// An allocation that failed (RMM logs the pointer as `(nil)`).
    AllocateFailure,
    /// A deallocation.
    Free,
}

impl Action {
    /// Parses an action as RMM writes it (`allocate`, `allocate failure`, `free`);
    /// also accepts `allocate_failure`, `failure` and `deallocate`.
    pub fn parse(text: &str) -> Option<Action> {
        let t = text.trim().to_ascii_lowercase().replace(['_', '-'], " ");
        match t.as_str() {
            "allocate" | "alloc" | "allocation" => Some(Action::Allocate),
            "allocate failure" | "allocation failure" | "alloc failure" | "failure" => {
                Some(Action::AllocateFailure)
            }
            "free" | "deallocate" | "dealloc" => Some(Action::Free),
            _ => None,
        }
    }
}

/// One line of a memory-event log.
#[derive(Debug, Clone, PartialEq)]
pub struct MemEvent {
    /// The thread id exactly as written (RMM writes large decimal ids).
    pub thread: String,
    /// Seconds since midnight (`%H:%M:%S.%f`), or `None` when the field is empty.
    pub time: Option<f64>,
    /// What happened.
    pub action: Action,
    /// The address; `None` for `(nil)`, `0x0`, `nil` or an empty field.
    pub pointer: Option<u64>,
    /// Bytes requested (or freed).
    pub size: u64,
    /// The stream as written (hex), kept as text.
    pub stream: String,
    /// The 1-based line number the event came from.
    pub line: usize,
}

/// One data line with the required fields in the order the caller asked for.
struct Record {
    line: usize,
    fields: Vec<String>,
}

/// Splits one CSV line; double quotes group commas, `""` inside quotes is a quote.
fn split_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if in_quotes => {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    in_quotes = false;
                }
            }
            '"' if field.trim().is_empty() => {
                field.clear();
                in_quotes = true;
            }
            ',' if !in_quotes => fields.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    if in_quotes {
        return Err("unterminated double quote".into());
    }
    fields.push(field);
    Ok(fields.into_iter().map(|f| f.trim().to_string()).collect())
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
        let fields = split_line(line).map_err(|message| ReportError::Parse {
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

/// Parses a time of day `HH:MM:SS[.ffffff]` into seconds since midnight.
///
/// A leading date (`2026-11-30 12:00:00.5` or `...T12:00:00.5`) is ignored, and
/// a plain number is taken as seconds.
pub fn parse_time_of_day(text: &str) -> Option<f64> {
    let t = text.trim();
    let t = t.rsplit([' ', 'T']).next().unwrap_or(t);
    let parts: Vec<&str> = t.split(':').collect();
    let value = match parts.as_slice() {
        [h, m, s] => {
            let h: u32 = h.parse().ok()?;
            let m: u32 = m.parse().ok()?;
            let s: f64 = s.parse().ok()?;
            if m >= 60 || !(0.0..61.0).contains(&s) {
                return None;
            }
            f64::from(h) * 3600.0 + f64::from(m) * 60.0 + s
        }
        [m, s] => {
            let m: u32 = m.parse().ok()?;
            let s: f64 = s.parse().ok()?;
            f64::from(m) * 60.0 + s
        }
        [s] => s.parse().ok()?,
        _ => return None,
    };
    value.is_finite().then_some(value)
}

/// Parses a pointer as `%p` writes it; `(nil)`, `nil`, `null`, `0x0`, `0` and
/// an empty field are `Ok(None)`.
pub fn parse_pointer(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "" | "(nil)" | "nil" | "null" | "(null)" | "nullptr"
    ) {
        return Ok(None);
    }
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).map_err(|_| format!("`{t}` is not a hex pointer"))?
    } else if lower.chars().all(|c| c.is_ascii_digit()) {
        lower
            .parse::<u64>()
            .map_err(|_| format!("`{t}` is not a pointer"))?
    } else if lower.chars().all(|c| c.is_ascii_hexdigit()) {
        u64::from_str_radix(&lower, 16).map_err(|_| format!("`{t}` is not a pointer"))?
    } else {
        return Err(format!("`{t}` is not a pointer"));
    };
    Ok((value != 0).then_some(value))
}

/// Parses a memory-event log (RMM's `Thread,Time,Action,Pointer,Size,Stream`).
pub fn parse_memlog(text: &str, origin: &str) -> Result<Parsed<MemEvent>, ReportError> {
    let (records, skipped) = read_table(text, origin, &MEMLOG_COLUMNS)?;
    let mut rows = Vec::with_capacity(records.len());
    for Record { line, fields } in records {
        let err = |message: String| ReportError::Parse {
            origin: origin.into(),
            line,
            message,
        };
        let time = if fields[1].is_empty() {
            None
        } else {
            Some(parse_time_of_day(&fields[1]).ok_or_else(|| {
                err(format!(
                    "column `Time`: `{}` is not a time HH:MM:SS.ffffff",
                    fields[1]
                ))
            })?)
        };
        let action = Action::parse(&fields[2]).ok_or_else(|| {
            err(format!(
                "column `Action`: unknown action `{}` (expected allocate, allocate failure or free)",
                fields[2]
            ))
        })?;
        let pointer = parse_pointer(&fields[3]).map_err(|m| err(format!("column `Pointer`: {m}")))?;
        let size = parse_u64(&fields[4], "Size", origin, line)?;
        // A null free is a no-op (kept, the timeline ignores it); a null
        // successful allocation makes no sense.
        if pointer.is_none() && action == Action::Allocate {
            return Err(err(format!(
                "column `Pointer`: `{}` for a successful allocation",
                fields[3]
            )));
        }
        rows.push(MemEvent {
            thread: fields[0].clone(),
            time,
            action,
            pointer,
            size,
            stream: fields[5].clone(),
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

/// Reads and parses one memory-event log file.
pub fn read_memlog_file(path: &Path) -> Result<Parsed<MemEvent>, ReportError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_handles_quotes() {
        assert_eq!(split_line(r#"a,"b,c",d"#).unwrap(), vec!["a", "b,c", "d"]);
        assert_eq!(split_line(r#""x""y",z"#).unwrap(), vec!["x\"y", "z"]);
        assert!(split_line(r#""open,a"#).is_err());
    }

    #[test]
    fn time_of_day() {
        assert_eq!(parse_time_of_day("01:02:03.5"), Some(3723.5));
        assert_eq!(parse_time_of_day("2026-11-30 00:00:01.25"), Some(1.25));
        assert_eq!(parse_time_of_day("x:1:2"), None);
    }

    #[test]
    fn pointers() {
        assert_eq!(parse_pointer("(nil)"), Ok(None));
        assert_eq!(parse_pointer("0x0"), Ok(None));
        assert_eq!(parse_pointer("0x7f12a4000000"), Ok(Some(0x7f12_a400_0000)));
        assert!(parse_pointer("zz").is_err());
    }
}
