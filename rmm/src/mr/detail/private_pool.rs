//! The bookkeeping of one graph-private pool, on plain integers: the chunks
//! it holds, its free blocks by list, its live blocks, and the frees of
//! shared memory it defers until its graphs are gone.
//!
//! A block handed out while a stream captures belongs to the graph being
//! captured (and to every graph that shares its pool): it stays reserved
//! until the pool is released, and is reused only where the graph's stream
//! order makes that safe:
//!
//! * a block freed during capture `c` on stream `s` sits in list
//!   [`ListKey::Captured`] `{ c, s }`: capture `c` reuses it only on `s`
//!   (later work on `s` in the graph is ordered after the free); any other
//!   capture of the pool may take it, since graphs sharing a pool never
//!   replay at the same time;
//! * a block freed outside any capture sits in [`ListKey::Idle`], which
//!   every later capture may take.
//!
//! Blocks are cut best-fit from 256-byte aligned chunks (the
//! [`CoalescingFreeList`] of the pool resource) and never merge across a
//! chunk's start. Frees are checked against the live blocks (address →
//! requested bytes): a double free, a foreign or interior pointer, or a
//! wrong size is a [`BadFree`] and changes nothing. Nothing here touches
//! memory or the driver; the glue that does is `graph_memory`.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use super::free_list::{AddrMap, CoalescingFreeList};
use super::live_set::BadFree;
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};

/// The free list a block sits in (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ListKey<K> {
    /// Freed on stream `stream` during the capture with driver id `capture`.
    Captured {
        /// The driver's capture id.
        capture: u64,
        /// The freeing stream's key.
        stream: K,
    },
    /// Freed outside any capture.
    Idle,
}

impl<K: PartialEq> ListKey<K> {
    /// True when capture `capture` may take this list's blocks on `stream`.
    fn serves(&self, capture: u64, stream: &K) -> bool {
        match self {
            ListKey::Idle => true,
            ListKey::Captured {
                capture: c,
                stream: s,
            } => *c != capture || s == stream,
        }
    }
}

/// A free of shared (not private) memory made on a capturing stream: handed
/// back to the resource when the pool is released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeferredFree {
    /// The pointer.
    pub addr: u64,
    /// The requested bytes.
    pub bytes: usize,
    /// The requested alignment.
    pub alignment: usize,
}

/// What a released pool gives back: its chunks (address, size) to their
/// source, then the deferred frees to the resource.
#[derive(Debug, Default)]
pub(crate) struct Released {
    /// The chunks, by address.
    pub chunks: Vec<(u64, usize)>,
    /// The shared frees made during its captures.
    pub deferred: Vec<DeferredFree>,
    /// Live blocks still recorded (only when the owner was gone).
    pub leaked_blocks: usize,
}

/// One graph-private pool. Not synchronised: the owner holds a lock.
#[derive(Debug)]
pub(crate) struct PrivatePool<K> {
    chunks: BTreeMap<u64, usize>,
    lists: HashMap<ListKey<K>, CoalescingFreeList>,
    live: AddrMap<usize>,
    deferred: Vec<DeferredFree>,
    reserved: usize,
    live_bytes: usize,
}

impl<K> Default for PrivatePool<K> {
    fn default() -> Self {
        PrivatePool {
            chunks: BTreeMap::new(),
            lists: HashMap::new(),
            live: AddrMap::default(),
            deferred: Vec::new(),
            reserved: 0,
            live_bytes: 0,
        }
    }
}

/// The block size that serves `bytes`: a multiple of 256.
pub(crate) fn block_size(bytes: usize) -> Option<usize> {
    align_up(bytes, CUDA_ALLOCATION_ALIGNMENT)
}

impl<K: Copy + Eq + Hash> PrivatePool<K> {
    fn is_head(chunks: &BTreeMap<u64, usize>, addr: u64) -> bool {
        chunks.contains_key(&addr)
    }

    /// Hands out `bytes` (> 0) to capture `capture` on stream `stream`:
    /// from that stream's own list of the capture, else best fit from the
    /// lists the capture may use. Lists are never merged, so a block keeps
    /// the key it was freed with. `None`: no block fits; add a chunk
    /// ([`add_chunk`](Self::add_chunk)) and retry.
    pub fn allocate(&mut self, bytes: usize, capture: u64, stream: K) -> Option<u64> {
        let size = block_size(bytes)?;
        let own = ListKey::Captured { capture, stream };
        let mut addr = self.lists.get_mut(&own).and_then(|l| l.allocate(size));
        if addr.is_none() {
            // The smallest fitting block over the usable lists.
            let best = self
                .lists
                .iter()
                .filter(|(k, l)| **k != own && k.serves(capture, &stream) && l.largest() >= size)
                .map(|(k, l)| (l.best_fit_size(size).unwrap_or(usize::MAX), *k))
                .min_by_key(|&(n, _)| n)
                .map(|(_, k)| k);
            addr = best.and_then(|k| self.lists.get_mut(&k).and_then(|l| l.allocate(size)));
        }
        let addr = addr?;
        self.live.insert(addr, bytes);
        self.live_bytes += size;
        Some(addr)
    }

    /// Adds a fresh chunk `[addr, addr + size)` (256-byte aligned, size a
    /// multiple of 256) to the list of `capture` on `stream`. False (and no
    /// change) when it overlaps a chunk the pool holds.
    pub fn add_chunk(&mut self, addr: u64, size: usize, capture: u64, stream: K) -> bool {
        let Some(end) = addr.checked_add(size as u64) else {
            return false;
        };
        let overlaps = self
            .chunks
            .range(..end)
            .next_back()
            .is_some_and(|(&s, &n)| s + n as u64 > addr);
        if size == 0 || overlaps {
            return false;
        }
        self.chunks.insert(addr, size);
        self.reserved += size;
        let chunks = &self.chunks;
        self.lists
            .entry(ListKey::Captured { capture, stream })
            .or_default()
            .insert(addr, size, |h| Self::is_head(chunks, h))
    }

    #[cfg(test)]
    /// True when `addr` lies inside one of the pool's chunks.
    pub fn owns(&self, addr: u64) -> bool {
        self.chunks
            .range(..=addr)
            .next_back()
            .is_some_and(|(&s, &n)| addr < s + n as u64)
    }

    /// Frees a live block of `bytes` into list `key`; a free that names no
    /// live block, or a wrong size, is refused and changes nothing.
    pub fn free(&mut self, addr: u64, bytes: usize, key: ListKey<K>) -> Result<(), BadFree> {
        match self.live.get(&addr) {
            None => return Err(BadFree::NotLive),
            Some(&n) if n != bytes => return Err(BadFree::WrongSize(n)),
            Some(_) => {}
        }
        self.live.remove(&addr);
        let size = block_size(bytes).unwrap_or(bytes);
        self.live_bytes -= size;
        let chunks = &self.chunks;
        let inserted = self
            .lists
            .entry(key)
            .or_default()
            .insert(addr, size, |h| Self::is_head(chunks, h));
        debug_assert!(inserted, "a live block overlapped a free one");
        Ok(())
    }

    /// Keeps a free of shared memory until the pool is released.
    pub fn defer(&mut self, free: DeferredFree) {
        self.deferred.push(free);
    }

    /// True when no block is live (the pool may be released once its
    /// graphs are gone).
    pub fn is_idle(&self) -> bool {
        self.live.is_empty()
    }

    /// Bytes of chunks held.
    pub fn reserved_bytes(&self) -> usize {
        self.reserved
    }

    /// Bytes of live blocks (rounded to 256).
    pub fn live_bytes(&self) -> usize {
        self.live_bytes
    }

    #[cfg(test)]
    /// Bytes of free blocks, over all lists.
    pub fn free_bytes(&self) -> usize {
        self.lists.values().map(|l| l.free_bytes()).sum()
    }

    #[cfg(test)]
    /// Number of chunks held.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Number of deferred frees held.
    pub fn deferred_count(&self) -> usize {
        self.deferred.len()
    }

    /// Empties the pool: its chunks and deferred frees, for the caller to
    /// hand back; live blocks still recorded are counted as leaked.
    pub fn release(&mut self) -> Released {
        let released = Released {
            chunks: std::mem::take(&mut self.chunks).into_iter().collect(),
            deferred: std::mem::take(&mut self.deferred),
            leaked_blocks: self.live.len(),
        };
        *self = PrivatePool::default();
        released
    }

    #[cfg(test)]
    /// Checks the invariants: every list's blocks lie in chunks and are
    /// coalesced; live and free bytes add up to the reserved bytes; no live
    /// block overlaps a free one.
    pub fn check(&self) -> Result<(), String> {
        let chunks = &self.chunks;
        let mut free = Vec::new();
        for l in self.lists.values() {
            l.check(|h| Self::is_head(chunks, h))?;
            free.extend(l.blocks());
        }
        let mut all: Vec<(u64, usize)> = free.clone();
        all.extend(self.live.iter().map(|(&a, &b)| (a, block_size(b).unwrap_or(b))));
        all.sort_unstable();
        for w in all.windows(2) {
            if w[0].0 + w[0].1 as u64 > w[1].0 {
                return Err(format!("blocks overlap at {:#x}", w[1].0));
            }
        }
        for &(a, n) in &all {
            if !self.owns(a) || !self.owns(a + n as u64 - 1) {
                return Err(format!("block {a:#x}+{n} outside the chunks"));
            }
        }
        let free_bytes: usize = free.iter().map(|&(_, n)| n).sum();
        if free_bytes + self.live_bytes != self.reserved {
            return Err(format!(
                "free {free_bytes} + live {} != reserved {}",
                self.live_bytes, self.reserved
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const U: u64 = 256;

    #[test]
    fn a_capture_reuses_its_frees_only_on_the_freeing_stream() {
        let mut p = PrivatePool::<u32>::default();
        assert_eq!(p.allocate(1000, 7, 1), None);
        assert!(p.add_chunk(1 << 20, 4096, 7, 1));
        let a = p.allocate(1000, 7, 1).unwrap();
        assert_eq!(a, 1 << 20);
        p.free(
            a,
            1000,
            ListKey::Captured {
                capture: 7,
                stream: 1,
            },
        )
        .unwrap();
        // Stream 2 of the same capture: not the freed block (no order in the graph).
        let b = p.allocate(1000, 7, 2);
        assert_eq!(b, None);
        // Stream 1 again: the freed block.
        assert_eq!(p.allocate(1000, 7, 1), Some(a));
        p.free(
            a,
            1000,
            ListKey::Captured {
                capture: 7,
                stream: 1,
            },
        )
        .unwrap();
        // Another capture sharing the pool: any stream.
        assert_eq!(p.allocate(1000, 8, 3), Some(a));
        p.check().unwrap();
    }

    #[test]
    fn frees_are_checked() {
        let mut p = PrivatePool::<u32>::default();
        assert!(p.add_chunk(4096, 4096, 1, 0));
        assert!(!p.add_chunk(4096 + 256, 256, 1, 0), "overlapping chunk refused");
        let a = p.allocate(300, 1, 0).unwrap();
        assert_eq!(p.free(a, 200, ListKey::Idle), Err(BadFree::WrongSize(300)));
        assert_eq!(p.free(a + 256, 300, ListKey::Idle), Err(BadFree::NotLive));
        assert_eq!(p.free(a, 300, ListKey::Idle), Ok(()));
        assert_eq!(p.free(a, 300, ListKey::Idle), Err(BadFree::NotLive));
        assert!(p.is_idle());
        p.defer(DeferredFree {
            addr: 99 << 20,
            bytes: 10,
            alignment: 256,
        });
        let r = p.release();
        assert_eq!(r.chunks, vec![(4096, 4096)]);
        assert_eq!(r.deferred.len(), 1);
        assert_eq!((p.reserved_bytes(), p.chunk_count(), r.leaked_blocks), (0, 0, 0));
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Unit {
        Live,
        Free(ListKey<u32>),
    }

    #[derive(Debug, Clone)]
    enum Op {
        Alloc {
            units: usize,
            capture: u64,
            stream: u32,
        },
        Free {
            which: usize,
            capture: Option<u64>,
            stream: u32,
        },
        BadFree {
            which: usize,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1usize..12, 0u64..3, 0u32..3).prop_map(|(units, capture, stream)| Op::Alloc {
                units,
                capture,
                stream
            }),
            (any::<usize>(), proptest::option::of(0u64..3), 0u32..3).prop_map(|(which, capture, stream)| {
                Op::Free {
                    which,
                    capture,
                    stream,
                }
            }),
            any::<usize>().prop_map(|which| Op::BadFree { which }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random allocations by captures on streams, frees inside and
        /// outside captures, and bad frees, against a per-unit model: a
        /// block is handed out only from units that are fresh or free in a
        /// list the capture may use (never a unit freed by the same capture
        /// on another stream, never a live unit); live and free bytes add up
        /// to the chunks; bad frees change nothing; the release returns
        /// every chunk exactly once.
        #[test]
        fn matches_model(ops in proptest::collection::vec(op(), 1..300)) {
            let mut p = PrivatePool::<u32>::default();
            let mut model: BTreeMap<u64, Unit> = BTreeMap::new();
            let mut live: Vec<(u64, usize)> = Vec::new();
            let mut next_chunk = 1u64 << 30;
            let mut chunks = Vec::new();
            for o in ops {
                match o {
                    Op::Alloc { units, capture, stream } => {
                        let bytes = units * U as usize - 17;
                        let addr = match p.allocate(bytes, capture, stream) {
                            Some(a) => a,
                            None => {
                                let size = units.max(16) * U as usize;
                                prop_assert!(p.add_chunk(next_chunk, size, capture, stream));
                                for u in 0..size as u64 / U {
                                    model.insert(next_chunk + u * U, Unit::Free(ListKey::Idle));
                                }
                                chunks.push((next_chunk, size));
                                // A gap between chunks half of the time keeps heads honest.
                                next_chunk += size as u64 + if chunks.len() % 2 == 0 { 0 } else { 4 * U };
                                p.allocate(bytes, capture, stream).expect("a fresh chunk holds the request")
                            }
                        };
                        for u in 0..units as u64 {
                            match model.get(&(addr + u * U)) {
                                Some(Unit::Free(k)) => prop_assert!(k.serves(capture, &stream),
                                    "capture {capture} on {stream} got a unit of {k:?}"),
                                other => prop_assert!(false, "unit {:#x} handed out while {other:?}", addr + u * U),
                            }
                            model.insert(addr + u * U, Unit::Live);
                        }
                        live.push((addr, bytes));
                    }
                    Op::Free { which, capture, stream } if !live.is_empty() => {
                        let (addr, bytes) = live.swap_remove(which % live.len());
                        let key = match capture {
                            Some(capture) => ListKey::Captured { capture, stream },
                            None => ListKey::Idle,
                        };
                        prop_assert_eq!(p.free(addr, bytes, key), Ok(()));
                        for u in 0..block_size(bytes).unwrap() as u64 / U {
                            model.insert(addr + u * U, Unit::Free(key));
                        }
                    }
                    Op::BadFree { which } if !live.is_empty() => {
                        let (addr, bytes) = live[which % live.len()];
                        prop_assert_eq!(p.free(addr, bytes + 1, ListKey::Idle), Err(BadFree::WrongSize(bytes)));
                        prop_assert_eq!(p.free(addr + 1, bytes, ListKey::Idle), Err(BadFree::NotLive));
                    }
                    _ => {}
                }
                p.check().map_err(TestCaseError::fail)?;
                let free_units = model.values().filter(|u| matches!(u, Unit::Free(_))).count();
                prop_assert_eq!(p.free_bytes(), free_units * U as usize);
                prop_assert_eq!(p.reserved_bytes(), model.len() * U as usize);
                prop_assert_eq!(p.is_idle(), live.is_empty());
            }
            let r = p.release();
            prop_assert_eq!(r.chunks, chunks);
            prop_assert_eq!(r.leaked_blocks, live.len());
        }
    }
}
