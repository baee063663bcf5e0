//! The replay engine: runs a memory-event log's events against a resource
//! (see the crate docs).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::BufRead;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use rmm::mr::{BlockState, FreeBlockStats, MemoryResource, Snapshot};
use rmm::{DevicePtr, Result};

use crate::memlog::{self, Action, Event};

/// Parses a memory-event log into its events ([`memlog::read`] keeps the
/// thread names and the skipped-line count too).
///
/// # Errors
/// [`Error::InvalidArgument`](rmm::Error::InvalidArgument) naming the line for anything malformed (see
/// [`memlog`]); [`Error::Io`](rmm::Error::Io) for a read error.
pub fn parse_log(reader: impl BufRead) -> Result<Vec<Event>> {
    memlog::read(reader).map(|log| log.events)
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
    /// Live allocations of a snapshot made before the log's events
    /// ([`replay_from_snapshot`]); 0 for a plain replay.
    pub preloaded_allocations: usize,
    /// Those of them the resource refused.
    pub preload_failures: usize,
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
        if self.preloaded_allocations + self.preload_failures > 0 {
            writeln!(
                f,
                "{:<24}{} allocation(s) from the snapshot, {} refused",
                "preloaded:", self.preloaded_allocations, self.preload_failures
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
    replay_preloaded(events, mr, &[])
}

/// Replays `events` against `mr` starting from `snapshot`: the snapshot's
/// live allocations ([`snapshot_allocations`]) are allocated first, keyed
/// by their snapshot addresses, so that the log's frees of them free them
/// and the peak counts them (what a log that starts after the snapshot
/// needs).
///
/// ```
/// use rmm::mr::{snapshot, MemoryResource, SimulatedMemoryResource, TrackingAdaptor};
/// use rmm_replay::{parse_log, replay_from_snapshot};
/// let traced = TrackingAdaptor::new(SimulatedMemoryResource::new(1 << 30), false);
/// let p = traced.allocate(4096, 256, rmm::CudaStreamView::DEFAULT)?;
/// let snap = snapshot(&traced);
/// let log = format!("Thread,Time,Action,Pointer,Size,Stream\n1,10:00:00.000001,free,{:#x},4096,0x0\n", p.addr());
/// let report = replay_from_snapshot(&snap, &parse_log(log.as_bytes())?, &SimulatedMemoryResource::new(1 << 30));
/// assert_eq!((report.preloaded_allocations, report.unmatched_frees, report.peak_bytes), (1, 0, 4096));
/// # unsafe { traced.deallocate(p, 4096, 256, rmm::CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn replay_from_snapshot(snapshot: &Snapshot, events: &[Event], mr: &dyn MemoryResource) -> ReplayReport {
    replay_preloaded(events, mr, &snapshot_allocations(snapshot))
}

/// The live allocations of a snapshot as (address, bytes): a tracking
/// adaptor's when the stack has one, else the used blocks of the topmost
/// layer that lists blocks.
pub fn snapshot_allocations(snapshot: &Snapshot) -> Vec<(u64, usize)> {
    if !snapshot.live_allocations.is_empty() {
        return snapshot
            .live_allocations
            .iter()
            .map(|a| (a.address, a.size))
            .collect();
    }
    snapshot
        .layers
        .iter()
        .find_map(|l| l.blocks.as_ref())
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b.state == BlockState::Used)
                .map(|b| (b.address, b.size))
                .collect()
        })
        .unwrap_or_default()
}

/// Allocates `preload` (address, bytes) from `mr` into the replay's live
/// map; returns how many the resource refused.
fn preload_into(s: &mut Shared, preload: &[(u64, usize)], mr: &dyn MemoryResource) -> usize {
    let mut refused = 0;
    for &(addr, size) in preload {
        match mr.allocate_sync(size, 256) {
            Ok(p) if s.live.contains_key(&addr) || addr == 0 => {
                // SAFETY: `p` was just allocated from `mr` with these arguments.
                unsafe { mr.deallocate_sync(p, size, 256) };
                refused += 1;
            }
            Ok(p) => {
                s.live.insert(addr, (p, size));
                s.current += size;
            }
            Err(e) => {
                log::debug!("replay: preloading {size} bytes of the snapshot failed: {e}");
                refused += 1;
            }
        }
    }
    s.peak = s.current;
    s.at_peak = mr.free_block_stats();
    refused
}

fn replay_preloaded(events: &[Event], mr: &dyn MemoryResource, preload: &[(u64, usize)]) -> ReplayReport {
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
    let preload_failures = preload_into(&mut shared.lock().unwrap_or_else(|e| e.into_inner()), preload, mr);
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
        preloaded_allocations: preload.len() - preload_failures,
        preload_failures,
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
