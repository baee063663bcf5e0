//! The memory-event log parser: the one reader of the CSV that
//! [`LoggingAdaptor`](rmm::mr::LoggingAdaptor) and RMM's
//! `logging_resource_adaptor` write, used by the replay engine
//! ([`replay`](crate::replay())) and by `rmm-report timeline` (in `tools/`).
//!
//! A log starts with a header line naming its columns, in any order and any
//! case: `Action`, `Pointer` and `Size` are required; `Thread`, `Time` and
//! `Stream` are optional (a missing `Thread` is one thread, a missing `Time`
//! no time, a missing `Stream` the default stream); other columns are
//! ignored. Then one event per line. What is tolerated:
//!
//! * a UTF-8 byte-order mark, `\r\n` line ends, blank lines, spaces around
//!   fields, double-quoted fields (`""` inside quotes is a quote), a trailing
//!   empty field (a line ending in a comma);
//! * comment lines starting with `#` (counted in [`MemoryLog::skipped`]);
//! * a repeated header line (concatenated logs; its column order may differ);
//! * actions `allocate`/`alloc`/`allocation`, `allocate failure` (also with
//!   `_` or `-`, or plain `failure`), `free`/`deallocate`/`dealloc`, in any case;
//! * pointers as `%p` writes them (`0x...`, `(nil)`), in decimal or bare hex;
//!   sizes in decimal, hex or as `1024.0`; streams in hex or decimal;
//! * thread ids of any width, kept as text ([`MemoryLog::threads`]);
//! * times `HH:MM:SS[.ffffff]`, with or without a leading date.
//!
//! Everything else is an error naming the line ([`LogError`]): no header, a
//! header without a required column, a line with too few fields, an
//! unterminated quote, an unknown action, a malformed pointer, size, time
//! or stream.
//!
//! ```
//! use rmm_replay::memlog::{parse, Action};
//! let log = "\u{feff}# written by hand\n\
//!            Thread,Action,Pointer,Size\n\
//!            7,alloc,0x7f0000000000,1000\n\
//!            \"7\",dealloc,0x7f0000000000,1000\n";
//! let log = parse(log)?;
//! assert_eq!((log.events.len(), log.skipped), (2, 1));
//! assert_eq!(log.events[1].action, Action::Free);
//! assert_eq!((log.events[1].line, log.threads[log.events[1].thread].as_str()), (4, "7"));
//! # Ok::<(), rmm_replay::memlog::LogError>(())
//! ```

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;
use std::io::Read;

use rmm::Error;

/// What a log line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A successful allocation.
    Allocate,
    /// A failed allocation (RMM logs the pointer as `(nil)`); not replayed.
    AllocateFailure,
    /// A deallocation.
    Free,
}

impl Action {
    /// Parses an action (see the module docs for the spellings).
    ///
    /// ```
    /// use rmm_replay::Action;
    /// assert_eq!(Action::parse("Deallocate"), Some(Action::Free));
    /// assert_eq!(Action::parse("allocate_failure"), Some(Action::AllocateFailure));
    /// assert_eq!(Action::parse("grow"), None);
    /// ```
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

/// One parsed log line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// The 1-based line number the event came from.
    pub line: usize,
    /// The logged thread: an index into [`MemoryLog::threads`] (threads
    /// numbered densely from 0 in order of first appearance).
    pub thread: usize,
    /// Seconds since midnight, `None` when the log has no `Time` column or
    /// the field is empty.
    pub time: Option<f64>,
    /// What happened.
    pub action: Action,
    /// The logged address (0 for `(nil)` and other null spellings).
    pub pointer: u64,
    /// The requested (or freed) size in bytes.
    pub size: usize,
    /// The logged stream handle (0 when the log has no `Stream` column or
    /// the field is empty).
    pub stream: u64,
}

/// A parsed memory-event log.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryLog {
    /// The events, in log order.
    pub events: Vec<Event>,
    /// The thread ids as written, in order of first appearance
    /// ([`Event::thread`] indexes this).
    pub threads: Vec<String>,
    /// Comment lines (`#`) skipped.
    pub skipped: usize,
}

/// A malformed log: what was wrong and on which line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogError {
    /// The 1-based line, `None` when the error is about the whole log (no header).
    pub line: Option<usize>,
    /// What was wrong.
    pub message: String,
}

impl fmt::Display for LogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for LogError {}

impl From<LogError> for Error {
    fn from(e: LogError) -> Error {
        Error::InvalidArgument(format!("memory log {e}"))
    }
}

/// The columns a header must name.
const REQUIRED: [&str; 3] = ["action", "pointer", "size"];
/// The columns a header may name.
const OPTIONAL: [&str; 3] = ["thread", "time", "stream"];

/// Splits one CSV line into trimmed fields; double quotes group commas and
/// `""` inside quotes is a quote.
///
/// # Errors
/// A message for an unterminated double quote.
///
/// ```
/// use rmm_replay::memlog::split_csv_line;
/// assert_eq!(split_csv_line(r#"a, "b,c" ,d"#).unwrap(), vec!["a", "b,c", "d"]);
/// assert_eq!(split_csv_line(r#""x""y",z"#).unwrap(), vec!["x\"y", "z"]);
/// assert!(split_csv_line(r#""open,a"#).is_err());
/// ```
pub fn split_csv_line(line: &str) -> Result<Vec<String>, String> {
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

/// Parses a time of day `HH:MM:SS[.ffffff]` into seconds since midnight.
///
/// A leading date (`2026-11-30 12:00:00.5` or `...T12:00:00.5`) is ignored,
/// `MM:SS` works, and a plain number is taken as seconds.
///
/// ```
/// use rmm_replay::memlog::parse_time_of_day;
/// assert_eq!(parse_time_of_day("01:02:03.5"), Some(3723.5));
/// assert_eq!(parse_time_of_day("2026-11-30 00:00:01.25"), Some(1.25));
/// assert_eq!(parse_time_of_day("noon"), None);
/// ```
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

/// Parses a pointer as `%p` writes it; `(nil)`, `nil`, `null`, `(null)`,
/// `nullptr`, `0x0`, `0` and an empty field are 0. Decimal and bare hex
/// work too.
///
/// # Errors
/// A message for anything else.
///
/// ```
/// use rmm_replay::memlog::parse_pointer;
/// assert_eq!(parse_pointer("(nil)"), Ok(0));
/// assert_eq!(parse_pointer("0x7f12a4000000"), Ok(0x7f12_a400_0000));
/// assert!(parse_pointer("zz").is_err());
/// ```
pub fn parse_pointer(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if matches!(
        lower.as_str(),
        "" | "(nil)" | "nil" | "null" | "(null)" | "nullptr"
    ) {
        return Ok(0);
    }
    let parsed = if let Some(hex) = lower.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok()
    } else if lower.chars().all(|c| c.is_ascii_digit()) {
        lower.parse::<u64>().ok()
    } else if lower.chars().all(|c| c.is_ascii_hexdigit()) {
        u64::from_str_radix(&lower, 16).ok()
    } else {
        None
    };
    parsed.ok_or_else(|| format!("`{t}` is not a pointer"))
}

/// Parses a size: decimal, `0x` hex, or a whole number written as `1024.0`.
fn parse_size(text: &str) -> Option<usize> {
    let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else {
        text.parse::<u64>().ok().or_else(|| {
            text.parse::<f64>()
                .ok()
                .filter(|v| v.fract() == 0.0 && *v >= 0.0 && *v < 1.8e19)
                .map(|v| v as u64)
        })
    };
    parsed.and_then(|v| usize::try_from(v).ok())
}

/// The current header: the index of each column in a line.
struct Columns {
    /// Line number of the header.
    line: usize,
    /// Number of fields of the header.
    width: usize,
    action: usize,
    pointer: usize,
    size: usize,
    thread: Option<usize>,
    time: Option<usize>,
    stream: Option<usize>,
    /// Fields a data line needs (one past the largest index).
    needed: usize,
}

impl Columns {
    /// Reads a header line, or says why `fields` is not one.
    fn from_header(fields: &[String], line: usize) -> Result<Columns, LogError> {
        let names: Vec<String> = fields.iter().map(|f| f.to_ascii_lowercase()).collect();
        let find = |name: &str| names.iter().position(|n| n == name);
        let known = REQUIRED
            .iter()
            .chain(&OPTIONAL)
            .filter(|c| find(c).is_some())
            .count();
        if known == 0 {
            return Err(LogError {
                line: Some(line),
                message: format!(
                    "expected a header naming the columns Action, Pointer, Size (and optionally \
                     Thread, Time, Stream), found `{}`",
                    fields.join(",")
                ),
            });
        }
        let required = |name: &str| {
            find(name).ok_or_else(|| LogError {
                line: Some(line),
                message: format!("header lacks column `{name}` (found: {})", fields.join(",")),
            })
        };
        let (action, pointer, size) = (required("action")?, required("pointer")?, required("size")?);
        let (thread, time, stream) = (find("thread"), find("time"), find("stream"));
        let needed = [Some(action), Some(pointer), Some(size), thread, time, stream]
            .into_iter()
            .flatten()
            .max()
            .map_or(0, |m| m + 1);
        Ok(Columns {
            line,
            width: fields.len(),
            action,
            pointer,
            size,
            thread,
            time,
            stream,
            needed,
        })
    }

    /// Whether `fields` is a (repeated) header line rather than data.
    fn is_header(&self, fields: &[String]) -> bool {
        fields
            .get(self.action)
            .is_some_and(|f| f.eq_ignore_ascii_case("action"))
            || fields.iter().any(|f| f.eq_ignore_ascii_case("action"))
                && fields.iter().any(|f| f.eq_ignore_ascii_case("pointer"))
    }
}

/// Parses a memory-event log (see the module docs).
///
/// # Errors
/// [`LogError`] naming the line for anything malformed; a log without a
/// header (empty, or only comments) has no line. A header without events is
/// an empty log, not an error.
pub fn parse(text: &str) -> Result<MemoryLog, LogError> {
    let mut columns: Option<Columns> = None;
    let mut log = MemoryLog::default();
    let mut thread_ids: HashMap<String, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim_start_matches('\u{feff}').trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            log.skipped += 1;
            continue;
        }
        let bad = |message: String| LogError {
            line: Some(number),
            message,
        };
        let mut fields = split_csv_line(line).map_err(bad)?;
        let cols = match &columns {
            Some(c) if !c.is_header(&fields) => c,
            _ => {
                columns = Some(Columns::from_header(&fields, number)?);
                continue;
            }
        };
        // A trailing comma leaves one empty field too many: drop it.
        while fields.len() > cols.width && fields.last().is_some_and(|f| f.is_empty()) {
            fields.pop();
        }
        if fields.len() < cols.needed {
            return Err(bad(format!(
                "expected {} fields as in the header on line {}, found {}",
                cols.width,
                cols.line,
                fields.len()
            )));
        }
        let action = Action::parse(&fields[cols.action]).ok_or_else(|| {
            bad(format!(
                "column `Action`: unknown action `{}` (expected allocate, allocate failure or free)",
                fields[cols.action]
            ))
        })?;
        let pointer =
            parse_pointer(&fields[cols.pointer]).map_err(|m| bad(format!("column `Pointer`: {m}")))?;
        let size = &fields[cols.size];
        let size =
            parse_size(size).ok_or_else(|| bad(format!("column `Size`: `{size}` is not a size in bytes")))?;
        let time = match cols.time.map(|c| fields[c].as_str()) {
            None | Some("") => None,
            Some(t) => Some(
                parse_time_of_day(t)
                    .ok_or_else(|| bad(format!("column `Time`: `{t}` is not a time HH:MM:SS.ffffff")))?,
            ),
        };
        let stream = match cols.stream.map(|c| fields[c].as_str()) {
            None => 0,
            Some(s) => {
                parse_pointer(s).map_err(|_| bad(format!("column `Stream`: `{s}` is not a stream handle")))?
            }
        };
        let name = cols.thread.map_or("", |c| fields[c].as_str());
        let next = thread_ids.len();
        let thread = *thread_ids.entry(name.to_string()).or_insert_with(|| {
            log.threads.push(name.to_string());
            next
        });
        log.events.push(Event {
            line: number,
            thread,
            time,
            action,
            pointer,
            size,
            stream,
        });
    }
    if columns.is_none() {
        return Err(LogError {
            line: None,
            message:
                "no header line with columns Action, Pointer, Size found (the log is empty or only comments)"
                    .into(),
        });
    }
    Ok(log)
}

/// Reads and parses a memory-event log. Bytes that are not UTF-8 (a stray
/// writer) are replaced, not refused.
///
/// # Errors
/// [`Error::InvalidArgument`] for a malformed log (from [`LogError`]),
/// [`Error::Io`] for a read error.
///
/// ```
/// let log = rmm_replay::memlog::read("Action,Pointer,Size\nfree,0x10,8\n".as_bytes())?;
/// assert_eq!(log.events[0].pointer, 0x10);
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn read(mut reader: impl Read) -> Result<MemoryLog, Error> {
    let mut bytes = Vec::new();
    reader
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("reading the memory log", &e))?;
    Ok(parse(&String::from_utf8_lossy(&bytes))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "Thread,Time,Action,Pointer,Size,Stream\n";

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn rmm_log() {
        let text = "Thread,Time,Action,Pointer,Size,Stream\n\
            140281948427072,12:00:00.000000,allocate,0x7f12a4001000,100,0x5601d2c3e2a0\n\
            18446744073709551615,12:00:00.000040,allocate failure,(nil),1000,0x0\n\
            140281948427072,12:00:00.000070,free,0x7f12a4001000,100,0x5601d2c3e2a0\n";
        let log = parse(text).unwrap();
        assert_eq!(log.threads, vec!["140281948427072", "18446744073709551615"]);
        assert_eq!(
            log.events[0],
            Event {
                line: 2,
                thread: 0,
                time: Some(43200.0),
                action: Action::Allocate,
                pointer: 0x7f12_a400_1000,
                size: 100,
                stream: 0x5601_d2c3_e2a0
            }
        );
        assert_eq!(
            (log.events[1].action, log.events[1].pointer, log.events[1].thread),
            (Action::AllocateFailure, 0, 1)
        );
        assert_eq!(log.events[2].action, Action::Free);
    }

    #[test]
    fn our_log() {
        // What LoggingAdaptor writes: the same columns, small thread ids.
        let text =
            "Thread,Time,Action,Pointer,Size,Stream\n1,10:00:00.000001,allocate,0x7f0000000000,1000,0x0\n";
        let log = parse(text).unwrap();
        assert_eq!(
            (log.threads.len(), log.events[0].size, log.events[0].stream),
            (1, 1000, 0)
        );
    }

    #[test]
    fn comment_lines_are_skipped_and_counted() {
        let text = format!("# first\n{HEAD}# between\n1,,allocate,0x10,8,0x0\n  # indented\n");
        let log = parse(&text).unwrap();
        assert_eq!((log.events.len(), log.skipped), (1, 3));
        assert_eq!(log.events[0].line, 4);
    }

    #[test]
    fn quoted_fields() {
        let text =
            format!("{HEAD}\"1\",\"12:00:00\",\"allocate\",\"0x10\",\"8\",\"0x0\"\n\"a,b\",,free,0x10,8,\n");
        let log = parse(&text).unwrap();
        assert_eq!(log.threads, vec!["1", "a,b"]);
        assert_eq!(log.events[1].time, None);
        assert!(err(&format!("{HEAD}\"1,,allocate,0x10,8,0x0\n"))
            .starts_with("line 2: unterminated double quote"));
    }

    #[test]
    fn byte_order_mark_and_crlf() {
        let text = "\u{feff}Thread,Time,Action,Pointer,Size,Stream\r\n1,,allocate,0x10,8,0x0\r\n";
        assert_eq!(parse(text).unwrap().events.len(), 1);
    }

    #[test]
    fn action_spellings() {
        let text = format!(
            "{HEAD}1,,allocate,0x10,8,0x0\n1,,alloc,0x20,8,0x0\n1,,ALLOCATION,0x30,8,0x0\n\
             1,,dealloc,0x10,8,0x0\n1,,deallocate,0x20,8,0x0\n1,,Free,0x30,8,0x0\n\
             1,,allocate_failure,(nil),8,0x0\n1,,failure,(nil),8,0x0\n"
        );
        let actions: Vec<Action> = parse(&text).unwrap().events.iter().map(|e| e.action).collect();
        use Action::*;
        assert_eq!(
            actions,
            vec![
                Allocate,
                Allocate,
                Allocate,
                Free,
                Free,
                Free,
                AllocateFailure,
                AllocateFailure
            ]
        );
    }

    #[test]
    fn optional_columns_may_be_missing() {
        let log = parse("Action,Pointer,Size\nallocate,0x10,8\nfree,0x10,8\n").unwrap();
        assert_eq!(log.threads, vec![""]);
        let e = log.events[0];
        assert_eq!((e.thread, e.time, e.stream), (0, None, 0));
        let log = parse("Size,Pointer,thread,ACTION\n8,0x10,3,allocate\n").unwrap();
        assert_eq!((log.threads[0].as_str(), log.events[0].pointer), ("3", 0x10));
        // A header and no events: an empty log.
        assert!(parse(HEAD).unwrap().events.is_empty());
    }

    #[test]
    fn repeated_header_and_trailing_comma() {
        let text = "time,thread,action,size,pointer,stream\n\
            2026-11-30 09:00:01.5,7,allocate,256,0x10000,0x0,\n\
            Thread,Time,Action,Pointer,Size,Stream\n\
            7,09:00:02.0,free,0x10000,256,0x0\n";
        let log = parse(text).unwrap();
        assert_eq!(log.events.len(), 2);
        assert_eq!(log.events[0].time, Some(9.0 * 3600.0 + 1.5));
        assert_eq!((log.events[1].pointer, log.events[1].thread), (0x10000, 0));
    }

    #[test]
    fn malformed_lines_name_the_line() {
        assert!(err("").contains("no header"));
        assert!(err("# only a comment\n").contains("no header"));
        assert!(err("1,t,allocate,0x10,1,0x0\n").starts_with("line 1: expected a header"));
        assert!(err("Thread,Time,Action,Size\n").starts_with("line 1: header lacks column `pointer`"));
        let e = err(&format!("{HEAD}1,,allocate,0x10,1,0x0\n1,,realloc,0x10,1,0x0\n"));
        assert!(
            e.starts_with("line 3: column `Action`: unknown action `realloc`"),
            "{e}"
        );
        assert!(err(&format!("{HEAD}1,,allocate,0xzz,1,0x0\n")).starts_with("line 2: column `Pointer`"));
        assert!(err(&format!("{HEAD}1,,allocate,0x10,-1,0x0\n")).starts_with("line 2: column `Size`"));
        assert!(err(&format!("{HEAD}1,noon,allocate,0x10,1,0x0\n")).starts_with("line 2: column `Time`"));
        assert!(err(&format!("{HEAD}1,,allocate,0x10,1,stream\n")).starts_with("line 2: column `Stream`"));
        let e = err(&format!("{HEAD}1,t,allocate\n"));
        assert!(
            e.starts_with("line 2: expected 6 fields as in the header on line 1, found 3"),
            "{e}"
        );
        assert!(err(&format!("{HEAD}stray program output\n")).starts_with("line 2: expected 6 fields"));
    }

    #[test]
    fn errors_convert_to_invalid_argument() {
        let e = read("Action,Pointer,Size\ngrow,0x10,8\n".as_bytes()).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("memory log line 2")),
            "{e}"
        );
    }

    #[test]
    fn read_errors_are_io_errors() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "gone"))
            }
        }
        let e = read(Broken).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Io {
                    kind: std::io::ErrorKind::BrokenPipe,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.to_string(), "I/O error: reading the memory log: gone");
    }
}
