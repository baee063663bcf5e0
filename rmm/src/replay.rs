//! Parsing and replaying memory-event logs (RMM's `replay` benchmark and
//! `log_parser`).
//!
//! A log is the CSV that [`LoggingAdaptor`](crate::mr::LoggingAdaptor) or
//! RMM's `logging_resource_adaptor` writes: a header naming at least the
//! columns `Thread`, `Action`, `Pointer` and `Size` (in any order; `Time` and
//! `Stream` are optional), then one event per line. [`parse_log`] is tolerant:
//! spaces around fields, CRLF line ends, blank lines, thread ids of any
//! width (RMM writes OS thread ids), pointers as `0x...`, `(nil)` or decimal.
//!
//! [`replay`] runs the events against a resource with one thread per logged
//! thread, each doing its own events, and a shared event index with a
//! condition variable keeping the original global order (as RMM's replay
//! does). Every event is replayed with the synchronous calls on the default
//! stream. It reports the time taken, the peak of requested bytes, the
//! allocations that failed and, for resources that report their free blocks
//! ([`MemoryResource::free_block_stats`]), the fragmentation at the peak.
//!
//! ```
//! use rmm::mr::SimulatedMemoryResource;
//! use rmm::replay::{parse_log, replay};
//! let log = "Thread,Time,Action,Pointer,Size,Stream\n\
//!            1,10:00:00.000001,allocate,0x7f0000000000,1000,0x0\n\
//!            2,10:00:00.000002,allocate,0x7f0000000400,3000,0x0\n\
//!            1,10:00:00.000003,free,0x7f0000000000,1000,0x0\n\
//!            2,10:00:00.000004,free,0x7f0000000400,3000,0x0\n";
//! let events = parse_log(log.as_bytes())?;
//! let report = replay(&events, &SimulatedMemoryResource::new(1 << 30));
//! assert_eq!((report.threads, report.peak_bytes, report.failed_allocations), (2, 4000, 0));
//! # Ok::<(), rmm::Error>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::BufRead;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CudaAsyncMemoryResource, CudaMemoryResource,
    FreeBlockStats, ManagedMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions, SharedResource,
    SimulatedMemoryResource,
};
use crate::ptr::DevicePtr;

/// What a log line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// A successful allocation.
    Allocate,
    /// A failed allocation (pointer `(nil)`); not replayed.
    AllocateFailure,
    /// A free.
    Free,
}

/// One parsed log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// The logged thread, renumbered densely from 0 in order of appearance.
    pub thread: usize,
    /// What happened.
    pub action: Action,
    /// The logged address (0 for `(nil)`).
    pub pointer: u64,
    /// The requested size in bytes.
    pub size: usize,
    /// The logged stream handle (0 when the log has no `Stream` column).
    pub stream: u64,
}

fn bad(line: usize, what: String) -> Error {
    Error::InvalidArgument(format!("memory log line {line}: {what}"))
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).ok();
    }
    match s {
        "(nil)" | "nil" | "(null)" | "null" | "nullptr" => Some(0),
        _ => s.parse().ok(),
    }
}

/// Parses a memory-event log (see the module docs).
///
/// # Errors
/// [`Error::InvalidArgument`] naming the line for a missing header or
/// column, an unknown action or a malformed number; [`Error::Logic`] for a
/// read error.
pub fn parse_log(reader: impl BufRead) -> Result<Vec<Event>> {
    let mut lines = reader.lines().enumerate();
    let header = loop {
        match lines.next() {
            None => return Err(bad(1, "empty log: no header".into())),
            Some((i, line)) => {
                let line = line.map_err(|e| Error::Logic(format!("reading the memory log: {e}")))?;
                if !line.trim().is_empty() {
                    break (i + 1, line);
                }
            }
        }
    };
    let columns: Vec<String> = header
        .1
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let find = |name: &str| columns.iter().position(|c| c == name);
    let col = |name: &str| find(name).ok_or_else(|| bad(header.0, format!("header has no {name:?} column")));
    let (c_thread, c_action, c_pointer, c_size) =
        (col("thread")?, col("action")?, col("pointer")?, col("size")?);
    let c_stream = find("stream");
    let mut threads: HashMap<String, usize> = HashMap::new();
    let mut events = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let line = line.map_err(|e| Error::Logic(format!("reading the memory log: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let field = |c: usize| {
            fields
                .get(c)
                .copied()
                .ok_or_else(|| bad(n, format!("{} fields, expected {}", fields.len(), columns.len())))
        };
        let next_id = threads.len();
        let thread = *threads.entry(field(c_thread)?.to_string()).or_insert(next_id);
        let action = match field(c_action)?.to_ascii_lowercase().as_str() {
            "allocate" => Action::Allocate,
            "allocate failure" | "allocate_failure" => Action::AllocateFailure,
            "free" => Action::Free,
            other => return Err(bad(n, format!("unknown action {other:?}"))),
        };
        let pointer = field(c_pointer)?;
        let pointer = parse_u64(pointer).ok_or_else(|| bad(n, format!("bad pointer {pointer:?}")))?;
        let size = field(c_size)?;
        let size = size
            .parse::<usize>()
            .map_err(|_| bad(n, format!("bad size {size:?}")))?;
        let stream = match c_stream {
            Some(c) => {
                let s = field(c)?;
                parse_u64(s).ok_or_else(|| bad(n, format!("bad stream {s:?}")))?
            }
            None => 0,
        };
        events.push(Event {
            thread,
            action,
            pointer,
            size,
            stream,
        });
    }
    Ok(events)
}

/// What a replay measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// Events in the log.
    pub events: usize,
    /// Threads in the log (= replay threads).
    pub threads: usize,
    /// Wall time of the replay (threads started to all events done).
    pub elapsed: Duration,
    /// Highest sum of requested bytes outstanding.
    pub peak_bytes: usize,
    /// Allocations that failed in the replay.
    pub failed_allocations: usize,
    /// `allocate failure` lines in the log (skipped).
    pub logged_failures: usize,
    /// Frees of pointers the replay does not hold (never allocated, or their
    /// allocation failed in the replay); skipped.
    pub unmatched_frees: usize,
    /// Allocations the log never frees; freed after the replay.
    pub leaked_allocations: usize,
    /// Bytes of those allocations.
    pub leaked_bytes: usize,
    /// Events logged on a stream other than the default ones, replayed on
    /// the default stream.
    pub non_default_streams: usize,
    /// The resource's free blocks when the peak was reached (`None` when the
    /// resource does not report them).
    pub free_blocks_at_peak: Option<FreeBlockStats>,
}

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: usize| b as f64 / (1u64 << 20) as f64;
        writeln!(
            f,
            "{:<24}{} on {} thread(s)",
            "events:", self.events, self.threads
        )?;
        writeln!(f, "{:<24}{:.3} ms", "time:", self.elapsed.as_secs_f64() * 1e3)?;
        writeln!(
            f,
            "{:<24}{} bytes ({:.3} MiB)",
            "peak:",
            self.peak_bytes,
            mib(self.peak_bytes)
        )?;
        writeln!(f, "{:<24}{}", "failed allocations:", self.failed_allocations)?;
        writeln!(f, "{:<24}{} (skipped)", "logged failures:", self.logged_failures)?;
        writeln!(f, "{:<24}{}", "unmatched frees:", self.unmatched_frees)?;
        writeln!(
            f,
            "{:<24}{} allocation(s), {} bytes",
            "leaks in the log:", self.leaked_allocations, self.leaked_bytes
        )?;
        if self.non_default_streams > 0 {
            writeln!(
                f,
                "{:<24}{} event(s), replayed on the default stream",
                "non-default streams:", self.non_default_streams
            )?;
        }
        match &self.free_blocks_at_peak {
            Some(s) => write!(
                f,
                "{:<24}{:.2}% (largest free block {} of {} free bytes in {} block(s))",
                "fragmentation at peak:",
                s.fragmentation() * 100.0,
                s.largest_free_block,
                s.free_bytes,
                s.free_blocks
            ),
            None => write!(f, "{:<24}n/a", "fragmentation at peak:"),
        }
    }
}

/// State shared by the replay threads; only the thread whose turn it is
/// touches it, the rest wait on the condition variable.
struct Shared {
    next: usize,
    live: HashMap<u64, (DevicePtr, usize)>,
    current: usize,
    peak: usize,
    at_peak: Option<FreeBlockStats>,
    failed: usize,
    unmatched: usize,
    /// Set when a replay thread panicked, so that the others stop waiting.
    aborted: bool,
}

/// Marks the replay aborted when a replay thread unwinds.
struct AbortOnPanic<'a>(&'a Mutex<Shared>, &'a Condvar);

impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).aborted = true;
            self.1.notify_all();
        }
    }
}

/// Replays `events` against `mr` (see the module docs).
///
/// A log that is inconsistent (a free of a pointer that was never
/// allocated, or whose allocation failed here) is replayed as far as it
/// makes sense; the report counts what was skipped.
///
/// # Panics
/// When the resource panics on a replay thread (the other threads stop and
/// the panic is passed on).
pub fn replay(events: &[Event], mr: &dyn MemoryResource) -> ReplayReport {
    let mut per_thread: BTreeMap<usize, Vec<(usize, Event)>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        per_thread.entry(e.thread).or_default().push((i, *e));
    }
    let shared = Mutex::new(Shared {
        next: 0,
        live: HashMap::new(),
        current: 0,
        peak: 0,
        at_peak: None,
        failed: 0,
        unmatched: 0,
        aborted: false,
    });
    let turn = Condvar::new();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for mine in per_thread.values() {
            let (shared, turn) = (&shared, &turn);
            scope.spawn(move || {
                let _abort = AbortOnPanic(shared, turn);
                for &(index, e) in mine {
                    // A poisoned lock only means another replay thread
                    // panicked; `aborted` says so, so go on with the data.
                    let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                    while s.next != index && !s.aborted {
                        s = turn.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                    if s.aborted {
                        return;
                    }
                    apply(&mut s, &e, mr);
                    s.next += 1;
                    drop(s);
                    turn.notify_all();
                }
            });
        }
    });
    let elapsed = start.elapsed();
    let mut s = shared.into_inner().unwrap_or_else(|e| e.into_inner());
    let leaked_allocations = s.live.len();
    let leaked_bytes = s.live.values().map(|&(_, b)| b).sum();
    for (_, (p, b)) in s.live.drain() {
        // SAFETY: `p` was allocated from `mr` with `b` bytes by this replay
        // and not freed; all replay threads have finished.
        unsafe { mr.deallocate_sync(p, b, 256) };
    }
    ReplayReport {
        events: events.len(),
        threads: per_thread.len(),
        elapsed,
        peak_bytes: s.peak,
        failed_allocations: s.failed,
        logged_failures: events
            .iter()
            .filter(|e| e.action == Action::AllocateFailure)
            .count(),
        unmatched_frees: s.unmatched,
        leaked_allocations,
        leaked_bytes,
        non_default_streams: events.iter().filter(|e| e.stream > 2).count(),
        free_blocks_at_peak: s.at_peak,
    }
}

fn apply(s: &mut Shared, e: &Event, mr: &dyn MemoryResource) {
    match e.action {
        Action::AllocateFailure => {}
        Action::Allocate => match mr.allocate_sync(e.size, 256) {
            Ok(p) => {
                if e.pointer != 0 {
                    if let Some((old, old_size)) = s.live.insert(e.pointer, (p, e.size)) {
                        // The log reuses an address it never freed: free the
                        // older block so it does not leak.
                        s.unmatched += 1;
                        s.current -= old_size;
                        // SAFETY: `old` was allocated from `mr` with `old_size` bytes here.
                        unsafe { mr.deallocate_sync(old, old_size, 256) };
                    }
                    s.current += e.size;
                } else if !p.is_null() {
                    // SAFETY: `p` was just allocated from `mr` with these arguments.
                    unsafe { mr.deallocate_sync(p, e.size, 256) };
                }
                if s.current > s.peak {
                    s.peak = s.current;
                    s.at_peak = mr.free_block_stats();
                }
            }
            Err(err) => {
                s.failed += 1;
                log::debug!("replay: allocation of {} bytes failed: {err}", e.size);
            }
        },
        Action::Free => {
            if e.pointer == 0 {
                return;
            }
            match s.live.remove(&e.pointer) {
                Some((p, b)) => {
                    s.current -= b;
                    // SAFETY: `p` was allocated from `mr` with `b` bytes by this replay.
                    unsafe { mr.deallocate_sync(p, b, 256) };
                }
                None => s.unmatched += 1,
            }
        }
    }
}

/// Names [`make_resource`] knows.
pub const RESOURCE_NAMES: &[&str] = &[
    "simulated",
    "simulated-pool",
    "simulated-binning",
    "simulated-arena",
    "cuda",
    "cuda_async",
    "managed",
    "pool",
    "binning",
    "arena",
];

/// Builds a resource to replay against, by name:
///
/// * without a GPU: `simulated` (a simulated device of `size` bytes),
///   `simulated-pool` (a pool that may grow to `size` over it, as RMM's
///   replay does with `--size`), `simulated-binning` (bins of 256 KiB to
///   4 MiB over that pool), `simulated-arena` (an arena of `size` bytes over it);
/// * on a GPU: `cuda`, `cuda_async`, `managed`, `pool` (over cuda, growing
///   from 0), `binning` (256 KiB to 4 MiB bins over that pool), `arena`
///   (over cuda, half of free memory).
///
/// To add one, add a match arm.
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown name; [`Error::Logic`] when a
/// GPU resource is asked for without a usable GPU; the resource's own errors.
pub fn make_resource(name: &str, size: usize) -> Result<SharedResource> {
    let needs_gpu = || {
        if crate::device::is_available() {
            Ok(())
        } else {
            Err(Error::Logic(format!(
                "resource {name:?} needs a GPU and none is usable"
            )))
        }
    };
    Ok(match name {
        "simulated" => SharedResource::new(SimulatedMemoryResource::new(size)),
        "cuda" => {
            needs_gpu()?;
            SharedResource::new(CudaMemoryResource::new())
        }
        "cuda_async" => {
            needs_gpu()?;
            SharedResource::new(CudaAsyncMemoryResource::new()?)
        }
        "managed" => {
            needs_gpu()?;
            SharedResource::new(ManagedMemoryResource::new())
        }
        "simulated-pool" => SharedResource::new(simulated_pool(size)?),
        "simulated-binning" => SharedResource::new(BinningMemoryResource::with_fixed_bins(
            simulated_pool(size)?,
            18,
            22,
        )?),
        "simulated-arena" => SharedResource::new(ArenaMemoryResource::new(
            SimulatedMemoryResource::new(size),
            ArenaOptions::default().arena_size(crate::align::align_down(size, 256)),
        )?),
        "pool" => {
            needs_gpu()?;
            SharedResource::new(PoolMemoryResource::new(
                CudaMemoryResource::new(),
                PoolOptions::default(),
            )?)
        }
        "binning" => {
            needs_gpu()?;
            let pool = PoolMemoryResource::new(CudaMemoryResource::new(), PoolOptions::default())?;
            SharedResource::new(BinningMemoryResource::with_fixed_bins(pool, 18, 22)?)
        }
        "arena" => {
            needs_gpu()?;
            SharedResource::new(ArenaMemoryResource::new(
                CudaMemoryResource::new(),
                ArenaOptions::default(),
            )?)
        }
        other => {
            return Err(Error::InvalidArgument(format!(
                "unknown resource {other:?}; known: {}",
                RESOURCE_NAMES.join(", ")
            )))
        }
    })
}

/// A pool that may grow to `size` bytes over a simulated device of `size` bytes.
fn simulated_pool(size: usize) -> Result<PoolMemoryResource<SimulatedMemoryResource>> {
    let max = crate::align::align_down(size, 256);
    PoolMemoryResource::new(
        SimulatedMemoryResource::new(size),
        PoolOptions::default().maximum_pool_size(max),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerant_parsing() {
        let log = "\n  Pointer , Thread,Action , Size\r\n\
                   0x7F00,  140234567890123 , allocate, 10\r\n\
                   \n\
                   (nil),42,allocate failure,99\n\
                   0x7f00,140234567890123,free,10\n";
        let ev = parse_log(log.as_bytes()).unwrap();
        assert_eq!(
            ev,
            vec![
                Event {
                    thread: 0,
                    action: Action::Allocate,
                    pointer: 0x7f00,
                    size: 10,
                    stream: 0
                },
                Event {
                    thread: 1,
                    action: Action::AllocateFailure,
                    pointer: 0,
                    size: 99,
                    stream: 0
                },
                Event {
                    thread: 0,
                    action: Action::Free,
                    pointer: 0x7f00,
                    size: 10,
                    stream: 0
                },
            ]
        );
    }

    #[test]
    fn parse_errors_name_the_line() {
        let no_header = parse_log("".as_bytes()).unwrap_err();
        assert!(no_header.to_string().contains("no header"), "{no_header}");
        let missing = parse_log("Thread,Time,Action,Size\n".as_bytes()).unwrap_err();
        assert!(missing.to_string().contains("\"pointer\""), "{missing}");
        let head = "Thread,Time,Action,Pointer,Size,Stream\n";
        let e = parse_log(format!("{head}1,t,allocate,0x10,1,0x0\n1,t,realloc,0x10,1,0x0\n").as_bytes())
            .unwrap_err();
        assert!(
            e.to_string().contains("line 3") && e.to_string().contains("realloc"),
            "{e}"
        );
        let e = parse_log(format!("{head}1,t,allocate,0xzz,1,0x0\n").as_bytes()).unwrap_err();
        assert!(e.to_string().contains("bad pointer"), "{e}");
        let e = parse_log(format!("{head}1,t,allocate,0x10,-1,0x0\n").as_bytes()).unwrap_err();
        assert!(e.to_string().contains("bad size"), "{e}");
        let e = parse_log(format!("{head}1,t,allocate\n").as_bytes()).unwrap_err();
        assert!(e.to_string().contains("3 fields"), "{e}");
    }

    #[test]
    fn unknown_resource_is_an_error() {
        let e = make_resource("bogus", 1 << 30).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("simulated"));
        assert!(make_resource("simulated", 1 << 30).unwrap().is_simulated());
    }
}
