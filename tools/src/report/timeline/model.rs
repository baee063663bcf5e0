//! The timeline's model: a memory-event log replayed into allocations with
//! their live intervals, bytes in use after each event, failures and
//! statistics ([`Timeline`]), the fragmentation of live blocks, and the
//! address axis ([`AddressMap`]).
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fmt;

use crate::report::human_bytes;
use rmm::mr::FreeBlockStats;
use rmm_replay::memlog::{Action, MemoryLog};

/// One successful allocation and, if it was freed, when.
#[derive(Debug, Clone, PartialEq)]
pub struct Allocation {
    /// The address.
    pub pointer: u64,
    /// The size as logged at allocation.
    pub size: u64,
    /// Index into [`Timeline::threads`].
    pub thread: usize,
    /// Index of the allocating event.
    pub start: usize,
    /// Index of the freeing event; `None` if never freed.
    pub end: Option<usize>,
    /// The log line of the allocation.
    pub line: usize,
}

/// A failed allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Index of the event.
    pub index: usize,
    /// The requested size.
    pub size: u64,
    /// Index into [`Timeline::threads`].
    pub thread: usize,
    /// The log line.
    pub line: usize,
}

/// A replayed memory-event log.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Number of events.
    pub events: usize,
    /// The distinct thread ids, in order of first appearance.
    pub threads: Vec<String>,
    /// Whether every event had a time.
    pub has_time: bool,
    /// Time of each event in seconds after the first event, made monotone
    /// (a time earlier than the previous event's, as can happen between
    /// threads, is raised to it; a jump back of more than 12 h is taken as
    /// midnight passing). Event indices when the log has no times.
    pub times: Vec<f64>,
    /// Bytes in use after each event.
    pub in_use: Vec<u64>,
    /// Every successful allocation, in log order.
    pub allocations: Vec<Allocation>,
    /// Every failed allocation, in log order.
    pub failures: Vec<Failure>,
    /// Log lines of frees whose pointer was not live.
    pub unknown_frees: Vec<usize>,
    /// Frees of a null pointer (ignored).
    pub null_frees: usize,
    /// Allocations that returned a pointer that was still live (the earlier
    /// one is then taken as freed at that point).
    pub reused_live: usize,
    /// Frees whose logged size differs from the allocation's (the
    /// allocation's size is used).
    pub size_mismatches: usize,
}

/// Fragmentation of a set of live blocks inside the address range they span.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fragmentation {
    /// Lowest live address.
    pub low: u64,
    /// One past the highest live byte.
    pub high: u64,
    /// Bytes in `[low, high)` not covered by a live block.
    pub free_bytes: u64,
    /// The largest hole in `[low, high)`.
    pub largest_gap: u64,
    /// The number of holes in `[low, high)`.
    pub holes: usize,
}

impl Fragmentation {
    /// The holes as the free blocks of a resource would be reported.
    pub fn as_free_blocks(&self) -> FreeBlockStats {
        FreeBlockStats {
            free_bytes: usize::try_from(self.free_bytes).unwrap_or(usize::MAX),
            largest_free_block: usize::try_from(self.largest_gap).unwrap_or(usize::MAX),
            free_blocks: self.holes,
        }
    }

    /// The fragmentation of the holes, with the library's one definition,
    /// [`FreeBlockStats::fragmentation`] (`1 - largest_gap / free_bytes`, 0
    /// when there is no hole).
    ///
    /// ```
    /// use rmm_tools::report::timeline::fragmentation;
    /// // [0,10) [20,30) [35,40): holes of 10 and 5 bytes.
    /// let f = fragmentation(&[(20, 10), (0, 10), (35, 5)]);
    /// assert!((f.ratio() - (1.0 - 10.0 / 15.0)).abs() < 1e-12);
    /// ```
    pub fn ratio(&self) -> f64 {
        self.as_free_blocks().fragmentation()
    }
}

/// Computes the fragmentation of `(address, size)` blocks (overlaps are merged).
pub fn fragmentation(blocks: &[(u64, u64)]) -> Fragmentation {
    let mut sorted: Vec<(u64, u64)> = blocks.iter().filter(|b| b.1 > 0).copied().collect();
    sorted.sort_unstable();
    let Some(&(first, _)) = sorted.first() else {
        return Fragmentation {
            low: 0,
            high: 0,
            free_bytes: 0,
            largest_gap: 0,
            holes: 0,
        };
    };
    let mut end = first;
    let (mut free_bytes, mut largest_gap, mut holes) = (0u64, 0u64, 0usize);
    for &(addr, size) in &sorted {
        if addr > end {
            let gap = addr - end;
            free_bytes += gap;
            largest_gap = largest_gap.max(gap);
            holes += 1;
        }
        end = end.max(addr.saturating_add(size));
    }
    Fragmentation {
        low: first,
        high: end,
        free_bytes,
        largest_gap,
        holes,
    }
}

/// Summary statistics of a [`Timeline`].
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineStats {
    /// Number of events.
    pub events: usize,
    /// Number of distinct threads.
    pub threads: usize,
    /// Successful allocations.
    pub allocations: usize,
    /// Frees that matched a live allocation.
    pub frees: usize,
    /// Failed allocations.
    pub failures: usize,
    /// Frees of pointers that were not live.
    pub unknown_frees: usize,
    /// Allocations never freed.
    pub never_freed: usize,
    /// Bytes of the allocations never freed.
    pub never_freed_bytes: u64,
    /// The most bytes in use at once.
    pub peak_bytes: u64,
    /// The first event at which `peak_bytes` was reached (`None` without allocations).
    pub peak_event: Option<usize>,
    /// Its time in seconds after the first event, if the log has times.
    pub peak_time: Option<f64>,
    /// Seconds from the first to the last event, if the log has times.
    pub duration: Option<f64>,
    /// Lowest address allocated.
    pub address_base: Option<u64>,
    /// From the lowest address to one past the highest byte allocated.
    pub address_span: u64,
    /// Live allocations at the peak.
    pub live_at_peak: usize,
    /// Fragmentation of the live blocks at the peak.
    pub fragmentation_at_peak: Fragmentation,
}

impl fmt::Display for TimelineStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "events:            {} ({} thread(s))",
            self.events, self.threads
        )?;
        writeln!(
            f,
            "allocations:       {} ({} freed)",
            self.allocations, self.frees
        )?;
        writeln!(f, "failures:          {}", self.failures)?;
        writeln!(f, "unknown frees:     {}", self.unknown_frees)?;
        writeln!(
            f,
            "never freed:       {} ({})",
            self.never_freed,
            human_bytes(self.never_freed_bytes as f64)
        )?;
        write!(
            f,
            "peak bytes:        {} ({} B)",
            human_bytes(self.peak_bytes as f64),
            self.peak_bytes
        )?;
        match (self.peak_event, self.peak_time) {
            (Some(e), Some(t)) => writeln!(f, " at event {e}, {t:.6} s")?,
            (Some(e), None) => writeln!(f, " at event {e}")?,
            _ => writeln!(f)?,
        }
        if let Some(d) = self.duration {
            writeln!(f, "duration:          {d:.6} s")?;
        }
        if let Some(base) = self.address_base {
            writeln!(
                f,
                "address range:     {base:#x} + {}",
                human_bytes(self.address_span as f64)
            )?;
        }
        let frag = &self.fragmentation_at_peak;
        write!(
            f,
            "fragmentation:     {:.3} at peak ({} live blocks, {} free in the used range, largest hole {})",
            frag.ratio(),
            self.live_at_peak,
            human_bytes(frag.free_bytes as f64),
            human_bytes(frag.largest_gap as f64)
        )
    }
}

impl Timeline {
    /// Replays the events of a parsed log in log order.
    ///
    /// ```
    /// use rmm_tools::report::csv::parse_memlog;
    /// use rmm_tools::report::timeline::Timeline;
    /// let log = parse_memlog("Action,Pointer,Size\nalloc,0x10,8\nalloc,0x20,8\nfree,0x10,8\n", "l").unwrap();
    /// assert_eq!(Timeline::from_log(&log).in_use, vec![8, 16, 8]);
    /// ```
    pub fn from_log(log: &MemoryLog) -> Timeline {
        let events = &log.events;
        let threads = log.threads.clone();
        let has_time = !events.is_empty() && events.iter().all(|e| e.time.is_some());
        let mut times = Vec::with_capacity(events.len());
        let mut in_use = Vec::with_capacity(events.len());
        let mut allocations: Vec<Allocation> = Vec::new();
        let mut failures = Vec::new();
        let mut unknown_frees = Vec::new();
        let (mut null_frees, mut reused_live, mut size_mismatches) = (0, 0, 0);
        let mut live: HashMap<u64, usize> = HashMap::new();
        let mut bytes: u64 = 0;
        let (mut offset, mut last_raw, mut last_abs, mut first_abs) =
            (0.0f64, None::<f64>, 0.0f64, None::<f64>);

        for (index, event) in events.iter().enumerate() {
            let thread = event.thread;
            let size = event.size as u64;
            if has_time {
                let raw = event.time.unwrap_or(0.0);
                if let Some(prev) = last_raw {
                    if raw + 43_200.0 < prev {
                        offset += 86_400.0; // midnight
                    }
                }
                last_raw = Some(raw);
                let abs = (raw + offset).max(last_abs);
                last_abs = abs;
                let first = *first_abs.get_or_insert(abs);
                times.push(abs - first);
            } else {
                times.push(index as f64);
            }
            match (event.action, (event.pointer != 0).then_some(event.pointer)) {
                (Action::Allocate, Some(pointer)) => {
                    if let Some(previous) = live.remove(&pointer) {
                        reused_live += 1;
                        allocations[previous].end = Some(index);
                        bytes = bytes.saturating_sub(allocations[previous].size);
                    }
                    live.insert(pointer, allocations.len());
                    allocations.push(Allocation {
                        pointer,
                        size,
                        thread,
                        start: index,
                        end: None,
                        line: event.line,
                    });
                    bytes = bytes.saturating_add(size);
                }
                (Action::Allocate, None) | (Action::AllocateFailure, _) => failures.push(Failure {
                    index,
                    size,
                    thread,
                    line: event.line,
                }),
                (Action::Free, Some(pointer)) => match live.remove(&pointer) {
                    Some(a) => {
                        let allocation = &mut allocations[a];
                        allocation.end = Some(index);
                        if size != 0 && size != allocation.size {
                            size_mismatches += 1;
                        }
                        bytes = bytes.saturating_sub(allocation.size);
                    }
                    None => unknown_frees.push(event.line),
                },
                (Action::Free, None) => null_frees += 1,
            }
            in_use.push(bytes);
        }
        Timeline {
            events: events.len(),
            threads,
            has_time,
            times,
            in_use,
            allocations,
            failures,
            unknown_frees,
            null_frees,
            reused_live,
            size_mismatches,
        }
    }

    /// The allocations live right after event `index`.
    pub fn live_after(&self, index: usize) -> Vec<&Allocation> {
        self.allocations
            .iter()
            .filter(|a| a.start <= index && a.end.is_none_or(|e| e > index))
            .collect()
    }

    /// The first event at which the most bytes were in use, and that amount.
    pub fn peak(&self) -> Option<(usize, u64)> {
        let mut best: Option<(usize, u64)> = None;
        for (i, &b) in self.in_use.iter().enumerate() {
            if b > 0 && best.is_none_or(|(_, m)| b > m) {
                best = Some((i, b));
            }
        }
        best
    }

    /// Computes the summary statistics.
    pub fn stats(&self) -> TimelineStats {
        let peak = self.peak();
        let live = peak.map(|(i, _)| self.live_after(i)).unwrap_or_default();
        let blocks: Vec<(u64, u64)> = live.iter().map(|a| (a.pointer, a.size)).collect();
        let never: Vec<&Allocation> = self.allocations.iter().filter(|a| a.end.is_none()).collect();
        let base = self.allocations.iter().map(|a| a.pointer).min();
        let top = self
            .allocations
            .iter()
            .map(|a| a.pointer.saturating_add(a.size))
            .max();
        TimelineStats {
            events: self.events,
            threads: self.threads.len(),
            allocations: self.allocations.len(),
            frees: self.allocations.iter().filter(|a| a.end.is_some()).count() - self.reused_live,
            failures: self.failures.len(),
            unknown_frees: self.unknown_frees.len(),
            never_freed: never.len(),
            never_freed_bytes: never.iter().map(|a| a.size).sum(),
            peak_bytes: peak.map_or(0, |p| p.1),
            peak_event: peak.map(|p| p.0),
            peak_time: if self.has_time {
                peak.map(|p| self.times[p.0])
            } else {
                None
            },
            duration: if self.has_time {
                self.times.last().copied()
            } else {
                None
            },
            address_base: base,
            address_span: match (base, top) {
                (Some(b), Some(t)) => t - b,
                _ => 0,
            },
            live_at_peak: live.len(),
            fragmentation_at_peak: fragmentation(&blocks),
        }
    }
}

/// Maps addresses to offsets on the address axis: relative to the lowest
/// address, with gaps that no allocation ever touched and that are larger
/// than all the memory ever allocated collapsed to a thin band (so that
/// allocations in far-apart mappings, as `cudaMalloc` gives, stay visible).
#[derive(Debug, Clone, PartialEq)]
pub struct AddressMap {
    /// Start address of each stretch drawn without collapsing.
    starts: Vec<u64>,
    /// Offset on the axis of each stretch's start.
    offsets: Vec<f64>,
    /// Length of the axis.
    pub total: f64,
    /// Number of gaps collapsed.
    pub collapsed: usize,
    /// Offsets on the axis where gaps were collapsed (the middle of each band).
    pub collapsed_at: Vec<f64>,
}

impl AddressMap {
    /// Builds the map of a timeline's allocations; `collapse` allows collapsing gaps.
    pub fn new(allocations: &[Allocation], collapse: bool) -> AddressMap {
        let mut blocks: Vec<(u64, u64)> = allocations
            .iter()
            .map(|a| (a.pointer, a.pointer.saturating_add(a.size.max(1))))
            .collect();
        blocks.sort_unstable();
        let Some(&(base, _)) = blocks.first() else {
            return AddressMap {
                starts: vec![0],
                offsets: vec![0.0],
                total: 1.0,
                collapsed: 0,
                collapsed_at: Vec::new(),
            };
        };
        // The union of every address ever allocated.
        let mut union: Vec<(u64, u64)> = Vec::new();
        for (lo, hi) in blocks {
            match union.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => union.push((lo, hi)),
            }
        }
        let used: u64 = union.iter().map(|(lo, hi)| hi - lo).sum();
        let top = union.last().map_or(base, |u| u.1);
        let threshold = used.max(1);
        let band = (used as f64 * 0.02).max(1.0);
        let (mut starts, mut offsets, mut collapsed_at) = (vec![base], vec![0.0], Vec::new());
        let mut offset = 0.0;
        let mut stretch_start = base;
        for pair in union.windows(2) {
            let (end, next) = (pair[0].1, pair[1].0);
            if collapse && next - end > threshold {
                offset += (end - stretch_start) as f64;
                collapsed_at.push(offset + band / 2.0);
                offset += band;
                starts.push(next);
                offsets.push(offset);
                stretch_start = next;
            }
        }
        let total = (offset + (top - stretch_start) as f64).max(1.0);
        AddressMap {
            collapsed: collapsed_at.len(),
            starts,
            offsets,
            total,
            collapsed_at,
        }
    }

    /// The stretches drawn without collapsing: `(start address, axis offset)`,
    /// in address order; an address maps to its stretch's offset plus its
    /// distance from the stretch's start ([`AddressMap::offset`]).
    pub fn stretches(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.starts.iter().copied().zip(self.offsets.iter().copied())
    }

    /// The axis offset of an address (addresses below the first stretch map to 0).
    pub fn offset(&self, address: u64) -> f64 {
        let i = self.starts.partition_point(|s| *s <= address).saturating_sub(1);
        self.offsets[i] + address.saturating_sub(self.starts[i]) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragmentation_of_blocks() {
        // [0,10) [20,30) [35,40): holes 10 and 5.
        let f = fragmentation(&[(20, 10), (0, 10), (35, 5)]);
        assert_eq!((f.low, f.high, f.free_bytes, f.largest_gap), (0, 40, 15, 10));
        assert!((f.ratio() - (1.0 - 10.0 / 15.0)).abs() < 1e-12);
        assert_eq!(f.holes, 2);
        assert_eq!(fragmentation(&[]).ratio(), 0.0);
        assert_eq!(fragmentation(&[(0, 10), (5, 10)]).free_bytes, 0);
    }
}
