//! The live-allocation record: which addresses a resource handed out, and
//! with which requested size, so that a free can be checked before it is
//! trusted (DESIGN.md §3: misuse is detected, not trusted).
//!
//! * [`LiveMap`]: address → requested bytes, for callers that already hold
//!   a lock (the stream-ordered core, the simulated resource, the
//!   statistics adaptor) or keep one per arena (the arena: one record per
//!   stream's arena, so its threads do not share a lock).
//! * [`LiveSet`]: the same, sharded over several mutexes by address, for
//!   resources and adaptors that have no lock of their own on the hot path
//!   (binning, limiting, the system and SAM headroom resources).
//!
//! A free is accepted only when its pointer is the start of a live
//! allocation and its size is the size that allocation was requested with.
//! Everything else (a double free, a foreign, never-allocated or interior
//! pointer, a wrong size) is a [`BadFree`]: the caller logs it at error
//! level with [`log_bad_free`] and changes nothing. One hash insert per
//! allocation, one lookup and remove per free.
#![forbid(unsafe_code)]

use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::free_list::{shrink_if_sparse, AddrMap};

/// Why a free was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BadFree {
    /// The pointer starts no live allocation: a double free, or a foreign,
    /// never-allocated or interior pointer.
    NotLive,
    /// The pointer is live, but was allocated with this many bytes.
    WrongSize(usize),
}

/// Logs a refused free at error level: resource, pointer, sizes, reason.
pub(crate) fn log_bad_free(name: &str, addr: u64, bytes: usize, bad: BadFree) {
    match bad {
        BadFree::NotLive => log::error!(
            "{name}: free of {addr:#x} ({bytes} bytes), which is not a live allocation \
             (double free, or a foreign, never-allocated or interior pointer); ignored"
        ),
        BadFree::WrongSize(size) => log::error!(
            "{name}: free of {addr:#x} with {bytes} bytes, but it was allocated with {size} bytes; ignored"
        ),
    }
}

/// Live allocations: address → requested bytes. Not synchronised.
#[derive(Debug, Default, Clone)]
pub(crate) struct LiveMap {
    map: AddrMap<usize>,
    /// The last record made by [`insert_unique`](Self::insert_unique),
    /// kept out of `map` until the next one: a resource that hands a block
    /// back and frees it again (the arena's stash) records and checks it
    /// with no hash lookup. Never also in `map`.
    unhashed: Option<(u64, usize)>,
}

impl LiveMap {
    /// Every live allocation as (address, requested bytes), in no order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.map.iter().map(|(&a, &n)| (a, n)).chain(self.unhashed)
    }

    /// Records a new allocation; false (and no change) when `addr` is
    /// already live, which would be a bug of the resource itself.
    pub fn insert(&mut self, addr: u64, bytes: usize) -> bool {
        if self.unhashed.is_some_and(|(a, _)| a == addr) {
            return false;
        }
        match self.map.entry(addr) {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(bytes);
                true
            }
        }
    }

    /// Removes the allocation at `addr` if it was requested with `bytes`;
    /// otherwise changes nothing and says why.
    #[inline]
    pub fn remove(&mut self, addr: u64, bytes: usize) -> Result<(), BadFree> {
        if let Some((a, n)) = self.unhashed {
            if a == addr {
                if n != bytes {
                    return Err(BadFree::WrongSize(n));
                }
                self.unhashed = None;
                return Ok(());
            }
        }
        // One hash lookup: the entry is removed only when the size matches.
        match self.map.entry(addr) {
            Entry::Vacant(_) => Err(BadFree::NotLive),
            Entry::Occupied(e) if *e.get() != bytes => Err(BadFree::WrongSize(*e.get())),
            Entry::Occupied(e) => {
                e.remove();
                shrink_if_sparse(&mut self.map);
                Ok(())
            }
        }
    }

    /// Records a new allocation at an address the caller knows is not
    /// live (the arena's stash: a block whose record a checked free has
    /// just removed, and which nothing handed out since). It skips the
    /// duplicate check; the record it displaces goes into the hash table.
    #[inline]
    pub fn insert_unique(&mut self, addr: u64, bytes: usize) {
        debug_assert!(
            !self.map.contains_key(&addr),
            "insert_unique of a live address {addr:#x}"
        );
        if let Some((a, n)) = self.unhashed.replace((addr, bytes)) {
            debug_assert_ne!(a, addr, "insert_unique of a live address {addr:#x}");
            self.map.insert(a, n);
        }
    }

    /// Number of live allocations.
    pub fn len(&self) -> usize {
        self.map.len() + usize::from(self.unhashed.is_some())
    }
}

/// Number of shards of a [`LiveSet`] (a power of two).
const SHARDS: usize = 64;

/// A [`LiveMap`] sharded over [`SHARDS`] mutexes by address, plus a count
/// of refused frees. Thread safe; each operation takes one shard's lock.
///
/// Lock order: a shard lock is a leaf. It is held only for one hash
/// operation, never while another lock of ours is taken, never across an
/// upstream or driver call; its callers (binning, limiting, the system and
/// SAM headroom resources) hold no other lock when they take it.
#[derive(Debug)]
pub(crate) struct LiveSet {
    shards: Box<[Shard]>,
    bad_frees: AtomicUsize,
}

/// One shard, on its own cache lines (threads working on different shards
/// must not contend through false sharing).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(Mutex<LiveMap>);

impl Default for LiveSet {
    fn default() -> Self {
        LiveSet {
            shards: (0..SHARDS).map(|_| Shard::default()).collect(),
            bad_frees: AtomicUsize::new(0),
        }
    }
}

impl LiveSet {
    fn shard(&self, addr: u64) -> MutexGuard<'_, LiveMap> {
        // Addresses are multiples of 256 (or at least of small powers of
        // two): mix before picking a shard.
        let h = addr.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58;
        let i = (h as usize) & (SHARDS - 1);
        self.shards[i].0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a new allocation; logs (as a bug of `name`) and returns
    /// false when `addr` is already live.
    pub fn insert(&self, name: &str, addr: u64, bytes: usize) -> bool {
        let fresh = self.shard(addr).insert(addr, bytes);
        if !fresh {
            log::error!("{name}: handed out {addr:#x} ({bytes} bytes) while it is live (internal error)");
        }
        fresh
    }

    /// Removes the allocation at `addr` if it was requested with `bytes`;
    /// otherwise logs the misuse for `name`, counts it and returns false.
    pub fn remove(&self, name: &str, addr: u64, bytes: usize) -> bool {
        let r = self.shard(addr).remove(addr, bytes);
        match r {
            Ok(()) => true,
            Err(bad) => {
                self.bad_frees.fetch_add(1, Ordering::Relaxed);
                log_bad_free(name, addr, bytes, bad);
                false
            }
        }
    }

    /// Removes the allocation at `addr` if it was requested with `bytes`;
    /// otherwise changes nothing, logs nothing and says why (the caller
    /// may look elsewhere, then report with [`refused`](Self::refused)).
    pub fn take(&self, addr: u64, bytes: usize) -> Result<(), BadFree> {
        self.shard(addr).remove(addr, bytes)
    }

    /// Counts and logs a free refused for `name`.
    pub fn refused(&self, name: &str, addr: u64, bytes: usize, bad: BadFree) {
        self.bad_frees.fetch_add(1, Ordering::Relaxed);
        log_bad_free(name, addr, bytes, bad);
    }

    /// Number of frees refused so far.
    pub fn bad_frees(&self) -> usize {
        self.bad_frees.load(Ordering::Relaxed)
    }

    /// Number of live allocations.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.0.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_double_unknown_and_wrong_size() {
        let set = LiveSet::default();
        assert!(set.insert("t", 0x1000, 100));
        assert!(!set.insert("t", 0x1000, 100));
        assert!(!set.remove("t", 0x1000, 101));
        assert!(!set.remove("t", 0x1100, 100));
        assert!(!set.remove("t", 0x1080, 100));
        assert!(set.remove("t", 0x1000, 100));
        assert!(!set.remove("t", 0x1000, 100));
        assert_eq!((set.bad_frees(), set.len()), (4, 0));
    }

    /// A record made by `insert_unique` is checked like any other: a
    /// duplicate `insert`, a wrong size and a second free are refused,
    /// whether it is still outside the hash table or was displaced into it.
    #[test]
    fn unique_records_are_checked_like_the_others() {
        let mut live = LiveMap::default();
        assert!(live.insert(0x1000, 10));
        live.insert_unique(0x2000, 20);
        assert_eq!(live.len(), 2);
        assert!(!live.insert(0x2000, 20));
        assert_eq!(live.remove(0x2000, 21), Err(BadFree::WrongSize(20)));
        assert_eq!(live.remove(0x2000, 20), Ok(()));
        assert_eq!(live.remove(0x2000, 20), Err(BadFree::NotLive));
        assert_eq!(live.len(), 1);
        // Displaced into the table by the next unique record.
        live.insert_unique(0x3000, 30);
        live.insert_unique(0x4000, 40);
        assert_eq!(live.len(), 3);
        assert!(!live.insert(0x3000, 30));
        assert_eq!(live.remove(0x3000, 31), Err(BadFree::WrongSize(30)));
        assert_eq!(live.remove(0x3000, 30), Ok(()));
        assert_eq!(live.remove(0x3000, 30), Err(BadFree::NotLive));
        assert_eq!(live.remove(0x4000, 40), Ok(()));
        assert_eq!(live.remove(0x1000, 10), Ok(()));
        assert_eq!(live.len(), 0);
    }
}
