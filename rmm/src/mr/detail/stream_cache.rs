//! Per-stream caches of freed fixed-size blocks, in front of the bins of
//! [`BinningMemoryResource`](crate::mr::BinningMemoryResource), so that
//! threads on their own streams do not meet on a bin's lock.
//!
//! A block freed on stream S waits in S's cache for that bin and is handed
//! out again only for an allocation on S (the stream's key, as the
//! stream-ordered core keys its free lists: the per-thread default stream
//! is a different stream on every thread). Stream order makes that reuse
//! safe without an event, exactly as the core reuses a block on the stream
//! that freed it; so a cache hit makes no driver call and takes one lock
//! that only the threads whose streams hash to the same stripe share.
//!
//! A block the cache hands out is recorded live in its stripe (address →
//! requested bytes, [`StreamCache::take`]), not in its owner's live
//! record, and a free on a stream of the same stripe checks that record,
//! removes it and caches the block again under the same lock
//! ([`StreamCache::free`]): a hot pair on a stream takes one lock per
//! operation. A free on a stream of another stripe finds the record with
//! [`StreamCache::forget`], which looks in every stripe.
//!
//! The caches are bounded twice: each (stream, bin) list holds at most
//! [`LIST_BYTES`] worth of blocks (at least [`MIN_LIST_BLOCKS`]), and all
//! of them together at most the cache's budget. A free beyond either bound
//! goes to the bin as before. The budget is shared through one atomic
//! counter, which each stripe draws from in units (a 512th of the budget,
//! at most [`BUDGET_UNIT`]) and keeps a little slack of (under two units),
//! so the threads of different stripes do not meet on that counter's cache
//! line on every operation. So the cache may refuse a block while up to a
//! quarter of the budget is reserved by other stripes and unused. Blocks of a stream that is never used again
//! stay cached until [`StreamCache::drain`] hands every cached block back
//! (the owner does that when a bin runs out of memory, after synchronising
//! the device, since those streams may no longer exist).
#![deny(unsafe_code)]

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::live_set::{BadFree, LiveMap};
use super::spin_lock::{SpinGuard, SpinLock};
use super::stream_ordered::StreamKey;
use crate::stream::CudaStreamView;

/// What [`StreamCache::free`] came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheFree {
    /// Its record was here; the block is cached again.
    Cached,
    /// Its record was here and is gone, but the cache is full: the caller
    /// returns the block to its bin.
    Uncached,
    /// Its record is here with another size: refused, nothing changed.
    Refused(BadFree),
    /// No record here: the caller looks in its live record.
    NotHere,
}

/// Bytes one (stream, bin) list may hold.
pub(crate) const LIST_BYTES: usize = 16 << 20;
/// Blocks one list may hold whatever their size.
pub(crate) const MIN_LIST_BLOCKS: usize = 4;
/// Blocks one list may hold however small they are.
const MAX_LIST_BLOCKS: usize = 64;
/// Stripes (independent locks) of a cache.
const STRIPES: usize = 64;
/// Lists a stripe keeps before it drops its empty ones.
const STRIPE_LISTS: usize = 32;
/// A stripe reserves the shared budget in units of at most this many bytes.
pub(crate) const BUDGET_UNIT: usize = 1 << 20;

/// One stream's cached blocks of one bin.
#[derive(Debug)]
struct CachedList {
    key: StreamKey,
    bin: usize,
    blocks: Vec<u64>,
}

/// A stripe: the lists of the streams that hash to it, the bytes they
/// hold, and the part of the shared budget the stripe has reserved
/// (`cached <= reserved`; a multiple of the cache's unit).
#[derive(Debug, Default)]
struct Stripe {
    lists: Vec<CachedList>,
    cached: usize,
    reserved: usize,
    /// The live allocations this stripe's lists handed out (address →
    /// requested bytes): their owner's live record keeps none of them, so
    /// that a hot pair on a stream takes this one lock and no other.
    live: LiveMap,
}

impl Stripe {
    #[inline]
    fn position(&self, key: StreamKey, bin: usize) -> Option<usize> {
        self.lists.iter().position(|l| l.key == key && l.bin == bin)
    }
}

/// Per-(stream, bin) caches of free blocks; see the module docs.
#[derive(Debug)]
pub(crate) struct StreamCache {
    stripes: Box<[StripeSlot]>,
    /// Budget bytes the stripes have reserved, at most `budget`.
    reserved: AtomicUsize,
    budget: usize,
    /// What a stripe reserves at a time: `budget / 512`, between 1 byte
    /// and [`BUDGET_UNIT`].
    unit: usize,
}

/// One stripe's lock, on its own cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct StripeSlot(SpinLock<Stripe>);

/// A multiplicative hash of a stream key (its handle, and for the
/// per-thread default stream its thread): cheap, and spreads handles that
/// differ only in their low bits.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// Most blocks of `block_size` bytes one list holds.
#[inline]
pub(crate) fn list_limit(block_size: usize) -> usize {
    (LIST_BYTES / block_size.max(1)).clamp(MIN_LIST_BLOCKS, MAX_LIST_BLOCKS)
}

impl StreamCache {
    /// Empty caches that together hold at most `budget` bytes.
    pub fn new(budget: usize) -> StreamCache {
        StreamCache {
            stripes: (0..STRIPES).map(|_| StripeSlot::default()).collect(),
            reserved: AtomicUsize::new(0),
            budget,
            unit: (budget / (8 * STRIPES)).clamp(1, BUDGET_UNIT),
        }
    }

    #[inline]
    fn stripe(&self, key: StreamKey) -> SpinGuard<'_, Stripe> {
        let mut h = KeyHasher::default();
        key.hash(&mut h);
        let i = (h.finish() >> 32) as usize % STRIPES;
        self.stripes[i].0.lock()
    }

    /// Makes `stripe`'s reservation cover `bytes` more cached bytes; false
    /// when the shared budget cannot.
    #[inline]
    fn reserve(&self, stripe: &mut Stripe, bytes: usize) -> bool {
        let want = stripe.cached + bytes;
        if want <= stripe.reserved {
            return true;
        }
        let more = (want - stripe.reserved).next_multiple_of(self.unit);
        let before = self.reserved.fetch_add(more, Ordering::Relaxed);
        if before + more > self.budget {
            self.reserved.fetch_sub(more, Ordering::Relaxed);
            return false;
        }
        stripe.reserved += more;
        true
    }

    /// Gives back the part of `stripe`'s reservation beyond one unit of
    /// slack, once the slack reaches two units.
    #[inline]
    fn release_slack(&self, stripe: &mut Stripe) {
        let slack = stripe.reserved - stripe.cached;
        if slack >= 2 * self.unit {
            let back = (slack - self.unit) / self.unit * self.unit;
            stripe.reserved -= back;
            self.reserved.fetch_sub(back, Ordering::Relaxed);
        }
    }

    /// A block of bin `bin` (blocks of `block_size` bytes) last freed on
    /// `stream`, if one is cached, recorded here as live with `bytes`.
    #[inline]
    pub fn take(&self, stream: CudaStreamView, bin: usize, block_size: usize, bytes: usize) -> Option<u64> {
        let key = StreamKey::of(stream);
        let mut stripe = self.stripe(key);
        let i = stripe.position(key, bin)?;
        let addr = stripe.lists[i].blocks.pop()?;
        stripe.cached -= block_size;
        self.release_slack(&mut stripe);
        // A cached block is free: no record of it is live anywhere.
        stripe.live.insert_unique(addr, bytes);
        Some(addr)
    }

    /// The free of `addr` (`bytes`) on `stream` when
    /// [`take`](Self::take) handed it out on a stream of the same stripe:
    /// its record is removed and the block cached again (bin `bin`, blocks
    /// of `block_size` bytes), all under the one stripe lock.
    #[inline]
    pub fn free(
        &self,
        stream: CudaStreamView,
        addr: u64,
        bytes: usize,
        bin: usize,
        block_size: usize,
    ) -> CacheFree {
        let key = StreamKey::of(stream);
        let mut guard = self.stripe(key);
        match guard.live.remove(addr, bytes) {
            Ok(()) => {}
            Err(BadFree::NotLive) => return CacheFree::NotHere,
            Err(bad) => return CacheFree::Refused(bad),
        }
        if self.put_locked(&mut guard, key, bin, block_size, addr) {
            CacheFree::Cached
        } else {
            CacheFree::Uncached
        }
    }

    /// Removes the record of `addr` (`bytes`) from whichever stripe holds
    /// it (a free on a stream of another stripe than the allocation's).
    pub fn forget(&self, addr: u64, bytes: usize) -> Result<(), BadFree> {
        for slot in self.stripes.iter() {
            let mut stripe = slot.0.lock();
            match stripe.live.remove(addr, bytes) {
                Err(BadFree::NotLive) => continue,
                r => return r,
            }
        }
        Err(BadFree::NotLive)
    }

    /// Caches `addr`, a block of bin `bin` (blocks of `block_size` bytes)
    /// freed on `stream`; false when the list or the whole cache is full
    /// (the caller returns the block to its bin instead).
    pub fn put(&self, stream: CudaStreamView, bin: usize, block_size: usize, addr: u64) -> bool {
        let key = StreamKey::of(stream);
        let mut guard = self.stripe(key);
        self.put_locked(&mut guard, key, bin, block_size, addr)
    }

    /// [`put`](Self::put) into the stripe of `key`, held locked.
    #[inline]
    fn put_locked(
        &self,
        stripe: &mut Stripe,
        key: StreamKey,
        bin: usize,
        block_size: usize,
        addr: u64,
    ) -> bool {
        let limit = list_limit(block_size);
        let found = stripe.position(key, bin);
        if found.is_some_and(|i| stripe.lists[i].blocks.len() >= limit) || !self.reserve(stripe, block_size) {
            return false;
        }
        let list = match found {
            Some(i) => &mut stripe.lists[i],
            None => {
                // Streams come and go: forget the empty lists of a crowded
                // stripe (rarely, so a list that empties and refills keeps
                // its allocation).
                if stripe.lists.len() >= STRIPE_LISTS {
                    stripe.lists.retain(|l| !l.blocks.is_empty());
                }
                stripe.lists.push(CachedList {
                    key,
                    bin,
                    blocks: Vec::with_capacity(limit),
                });
                stripe.lists.last_mut().expect("just pushed")
            }
        };
        list.blocks.push(addr);
        stripe.cached += block_size;
        true
    }

    /// Takes every cached block out: (bin, address) pairs. The blocks were
    /// freed on streams that may be gone; the caller synchronises the
    /// device before it hands them to anything stream-ordered.
    pub fn drain(&self, block_size_of: impl Fn(usize) -> usize) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        for slot in self.stripes.iter() {
            let mut stripe = slot.0.lock();
            for list in std::mem::take(&mut stripe.lists) {
                stripe.cached -= block_size_of(list.bin) * list.blocks.len();
                out.extend(list.blocks.into_iter().map(|addr| (list.bin, addr)));
            }
            self.release_slack(&mut stripe);
        }
        out
    }

    /// Bytes cached now (each stripe's lock taken in turn).
    pub fn cached_bytes(&self) -> usize {
        self.stripes.iter().map(|slot| slot.0.lock().cached).sum()
    }

    /// Lists kept, empty ones included.
    #[cfg(test)]
    fn lists(&self) -> usize {
        self.stripes.iter().map(|s| s.0.lock().lists.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(unsafe_code)]
    fn stream(raw: usize) -> CudaStreamView<'static> {
        // SAFETY: the handles only serve as keys here; no driver call sees them.
        unsafe { CudaStreamView::from_raw(raw) }
    }

    #[test]
    fn a_block_comes_back_only_on_its_stream_and_bin() {
        let c = StreamCache::new(1 << 30);
        let (a, b) = (stream(0x5000), stream(0x5010));
        assert!(c.put(a, 0, 1024, 0x1000));
        assert_eq!(c.cached_bytes(), 1024);
        assert_eq!(c.take(b, 0, 1024, 1), None, "another stream");
        assert_eq!(c.take(a, 1, 1024, 1), None, "another bin");
        assert_eq!(c.take(a, 0, 1024, 1), Some(0x1000));
        assert_eq!(c.take(a, 0, 1024, 1), None);
        assert_eq!(c.cached_bytes(), 0);
    }

    #[test]
    fn per_thread_default_streams_of_two_threads_do_not_share() {
        let c = StreamCache::new(1 << 30);
        assert!(c.put(CudaStreamView::PER_THREAD, 0, 256, 0x2000));
        let other = std::thread::spawn(move || {
            let c2 = StreamCache::new(1 << 30);
            c2.put(CudaStreamView::PER_THREAD, 0, 256, 0x3000);
            c2.take(CudaStreamView::PER_THREAD, 0, 256, 1)
        });
        assert_eq!(other.join().unwrap(), Some(0x3000));
        let c = std::sync::Arc::new(c);
        let c2 = c.clone();
        let seen = std::thread::spawn(move || c2.take(CudaStreamView::PER_THREAD, 0, 256, 1))
            .join()
            .unwrap();
        assert_eq!(seen, None, "another thread's per-thread default stream");
        assert_eq!(c.take(CudaStreamView::PER_THREAD, 0, 256, 1), Some(0x2000));
    }

    #[test]
    fn lists_and_the_budget_are_bounded() {
        let size = LIST_BYTES / 8; // 8 blocks per list
                                   // Room for 12 blocks, and for the stripes' slack (under a unit each).
        let c = StreamCache::new(12 * size + size / 2);
        let (a, b) = (stream(0x5000), stream(0x5010));
        let limit = list_limit(size);
        assert_eq!(limit, 8);
        for i in 0..limit as u64 {
            assert!(c.put(a, 0, size, 0x10_0000 * (i + 1)));
        }
        assert!(!c.put(a, 0, size, 0xdead_0000), "list full");
        assert_eq!(c.cached_bytes(), 8 * size);
        for i in 0..4u64 {
            assert!(c.put(b, 0, size, 0x100_0000 * (i + 1)));
        }
        assert!(!c.put(b, 0, size, 0xbeef_0000), "budget spent");
        assert_eq!(c.cached_bytes(), 12 * size);
        assert_eq!(list_limit(1), MAX_LIST_BLOCKS);
        assert_eq!(list_limit(1 << 30), MIN_LIST_BLOCKS);
    }

    /// A block the cache handed out is live in it: a free on a stream of
    /// its stripe caches it again at once, a wrong size or a second free
    /// is refused there or not found, and `forget` finds it from anywhere.
    #[test]
    fn handed_out_blocks_are_checked_by_the_cache() {
        let c = StreamCache::new(1 << 30);
        let (a, b) = (stream(0x1100), stream(0x2200));
        assert!(c.put(a, 0, 1024, 0x1000));
        assert_eq!(c.take(a, 0, 1024, 1000), Some(0x1000));
        assert_eq!(
            c.free(a, 0x1000, 999, 0, 1024),
            CacheFree::Refused(BadFree::WrongSize(1000))
        );
        assert_eq!(c.free(a, 0x1000, 1000, 0, 1024), CacheFree::Cached);
        assert_eq!(c.free(a, 0x1000, 1000, 0, 1024), CacheFree::NotHere);
        assert_eq!(c.forget(0x1000, 1000), Err(BadFree::NotLive));
        assert_eq!(c.take(a, 0, 1024, 1000), Some(0x1000));
        assert_eq!(c.forget(0x1000, 1), Err(BadFree::WrongSize(1000)));
        assert_eq!(c.forget(0x1000, 1000), Ok(()));
        assert_eq!(c.free(b, 0x1000, 1000, 0, 1024), CacheFree::NotHere);
    }

    #[test]
    fn streams_that_come_and_go_leave_a_bounded_number_of_lists() {
        let c = StreamCache::new(1 << 30);
        for s in 0..10_000usize {
            let st = stream(0x10_0000 + 16 * s);
            assert!(c.put(st, 0, 1024, 0x1000));
            assert_eq!(c.take(st, 0, 1024, 1), Some(0x1000));
            // Its user frees it (elsewhere): the record goes.
            assert_eq!(c.forget(0x1000, 1), Ok(()));
        }
        assert!(c.lists() <= STRIPES * STRIPE_LISTS, "{} lists", c.lists());
        // Lists that hold blocks are kept however crowded their stripe is.
        for s in 0..3000usize {
            assert!(c.put(stream(0x90_0000 + 16 * s), 0, 1024, 0x1000 + s as u64));
        }
        let mut back = c.drain(|_| 1024);
        back.sort_unstable();
        assert_eq!(back.len(), 3000);
        assert_eq!(c.cached_bytes(), 0);
    }

    #[test]
    fn threads_on_many_stripes_never_cache_beyond_the_budget() {
        let budget = 40 * BUDGET_UNIT;
        let c = std::sync::Arc::new(StreamCache::new(budget));
        let accepted: usize = (0..4)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    let mut ok = 0;
                    for s in 0..64usize {
                        let st = stream(0x40_0000 * (t + 1) + 16 * s);
                        for k in 0..8u64 {
                            if c.put(st, 0, 256 << 10, 0x1000 * (k + 1)) {
                                ok += 1;
                            }
                        }
                        // Take some back, so stripes also give slack back.
                        if s % 3 == 0 {
                            if let Some(a) = c.take(st, 0, 256 << 10, 1) {
                                assert_eq!(c.forget(a, 1), Ok(()));
                            }
                        }
                    }
                    ok
                })
            })
            .map(|h| h.join().unwrap())
            .sum();
        assert!(accepted > 0);
        assert!(c.cached_bytes() <= budget, "{} cached", c.cached_bytes());
        assert!(c.reserved.load(Ordering::Relaxed) <= budget);
        c.drain(|_| 256 << 10);
        assert_eq!(c.cached_bytes(), 0);
        // What stays reserved is under one unit of slack per stripe.
        assert!(c.reserved.load(Ordering::Relaxed) <= STRIPES * BUDGET_UNIT);
        // And the budget is usable again.
        assert!(c.put(stream(0x77_0000), 1, 4 << 20, 0x9000));
    }

    #[test]
    fn drain_returns_everything_once() {
        let c = StreamCache::new(1 << 30);
        for s in 0..100usize {
            assert!(c.put(
                stream(0x5000 + 16 * s),
                s % 3,
                512 << (s % 3),
                0x1000 * (s as u64 + 1)
            ));
        }
        let mut all = c.drain(|bin| 512 << bin);
        assert_eq!(c.cached_bytes(), 0);
        all.sort();
        assert_eq!(all.len(), 100);
        all.dedup();
        assert_eq!(all.len(), 100);
        assert!(c.drain(|bin| 512 << bin).is_empty());
    }
}
