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
//! The caches are bounded twice: each (stream, bin) list holds at most
//! [`LIST_BYTES`] worth of blocks (at least [`MIN_LIST_BLOCKS`]), and all
//! of them together at most the cache's budget. A free beyond either bound
//! goes to the bin as before. Blocks of a stream that is never used again
//! stay cached until [`StreamCache::drain`] hands every cached block back
//! (the owner does that when a bin runs out of memory, after synchronising
//! the device, since those streams may no longer exist).
#![deny(unsafe_code)]

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::stream_ordered::StreamKey;
use crate::stream::CudaStreamView;

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

/// One stream's cached blocks of one bin.
#[derive(Debug)]
struct CachedList {
    key: StreamKey,
    bin: usize,
    blocks: Vec<u64>,
}

/// A stripe: the lists of the streams that hash to it.
#[derive(Debug, Default)]
struct Stripe {
    lists: Vec<CachedList>,
}

impl Stripe {
    fn position(&self, key: StreamKey, bin: usize) -> Option<usize> {
        self.lists.iter().position(|l| l.key == key && l.bin == bin)
    }
}

/// Per-(stream, bin) caches of free blocks; see the module docs.
#[derive(Debug)]
pub(crate) struct StreamCache {
    stripes: Box<[Mutex<Stripe>]>,
    cached_bytes: AtomicUsize,
    budget: usize,
}

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
pub(crate) fn list_limit(block_size: usize) -> usize {
    (LIST_BYTES / block_size.max(1)).clamp(MIN_LIST_BLOCKS, MAX_LIST_BLOCKS)
}

impl StreamCache {
    /// Empty caches that together hold at most `budget` bytes.
    pub fn new(budget: usize) -> StreamCache {
        StreamCache {
            stripes: (0..STRIPES).map(|_| Mutex::new(Stripe::default())).collect(),
            cached_bytes: AtomicUsize::new(0),
            budget,
        }
    }

    fn stripe(&self, key: StreamKey) -> std::sync::MutexGuard<'_, Stripe> {
        let mut h = KeyHasher::default();
        key.hash(&mut h);
        let i = (h.finish() >> 32) as usize % STRIPES;
        // A poisoned stripe still holds valid lists (every update is one
        // push or pop): keep using it.
        self.stripes[i].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block of bin `bin` (blocks of `block_size` bytes) last freed on
    /// `stream`, if one is cached.
    pub fn take(&self, stream: CudaStreamView, bin: usize, block_size: usize) -> Option<u64> {
        let key = StreamKey::of(stream);
        let mut stripe = self.stripe(key);
        let i = stripe.position(key, bin)?;
        let addr = stripe.lists[i].blocks.pop()?;
        drop(stripe);
        self.cached_bytes.fetch_sub(block_size, Ordering::Relaxed);
        Some(addr)
    }

    /// Caches `addr`, a block of bin `bin` (blocks of `block_size` bytes)
    /// freed on `stream`; false when the list or the whole cache is full
    /// (the caller returns the block to its bin instead).
    pub fn put(&self, stream: CudaStreamView, bin: usize, block_size: usize, addr: u64) -> bool {
        // Reserve the bytes first so that racing frees cannot overshoot.
        let before = self.cached_bytes.fetch_add(block_size, Ordering::Relaxed);
        if before + block_size > self.budget {
            self.cached_bytes.fetch_sub(block_size, Ordering::Relaxed);
            return false;
        }
        let key = StreamKey::of(stream);
        let mut stripe = self.stripe(key);
        let limit = list_limit(block_size);
        let list = match stripe.position(key, bin) {
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
        if list.blocks.len() >= limit {
            drop(stripe);
            self.cached_bytes.fetch_sub(block_size, Ordering::Relaxed);
            return false;
        }
        list.blocks.push(addr);
        true
    }

    /// Takes every cached block out: (bin, address) pairs. The blocks were
    /// freed on streams that may be gone; the caller synchronises the
    /// device before it hands them to anything stream-ordered.
    pub fn drain(&self, block_size_of: impl Fn(usize) -> usize) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        for stripe in self.stripes.iter() {
            let mut stripe = stripe.lock().unwrap_or_else(|e| e.into_inner());
            for list in stripe.lists.drain(..) {
                let size = block_size_of(list.bin);
                for addr in list.blocks {
                    self.cached_bytes.fetch_sub(size, Ordering::Relaxed);
                    out.push((list.bin, addr));
                }
            }
        }
        out
    }

    /// Bytes cached now.
    pub fn cached_bytes(&self) -> usize {
        self.cached_bytes.load(Ordering::Relaxed)
    }

    /// Lists kept, empty ones included.
    #[cfg(test)]
    fn lists(&self) -> usize {
        self.stripes.iter().map(|s| s.lock().unwrap().lists.len()).sum()
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
        assert_eq!(c.take(b, 0, 1024), None, "another stream");
        assert_eq!(c.take(a, 1, 1024), None, "another bin");
        assert_eq!(c.take(a, 0, 1024), Some(0x1000));
        assert_eq!(c.take(a, 0, 1024), None);
        assert_eq!(c.cached_bytes(), 0);
    }

    #[test]
    fn per_thread_default_streams_of_two_threads_do_not_share() {
        let c = StreamCache::new(1 << 30);
        assert!(c.put(CudaStreamView::PER_THREAD, 0, 256, 0x2000));
        let other = std::thread::spawn(move || {
            let c2 = StreamCache::new(1 << 30);
            c2.put(CudaStreamView::PER_THREAD, 0, 256, 0x3000);
            c2.take(CudaStreamView::PER_THREAD, 0, 256)
        });
        assert_eq!(other.join().unwrap(), Some(0x3000));
        let c = std::sync::Arc::new(c);
        let c2 = c.clone();
        let seen = std::thread::spawn(move || c2.take(CudaStreamView::PER_THREAD, 0, 256))
            .join()
            .unwrap();
        assert_eq!(seen, None, "another thread's per-thread default stream");
        assert_eq!(c.take(CudaStreamView::PER_THREAD, 0, 256), Some(0x2000));
    }

    #[test]
    fn lists_and_the_budget_are_bounded() {
        let size = LIST_BYTES / 8; // 8 blocks per list
        let c = StreamCache::new(12 * size);
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

    #[test]
    fn streams_that_come_and_go_leave_a_bounded_number_of_lists() {
        let c = StreamCache::new(1 << 30);
        for s in 0..10_000usize {
            let st = stream(0x10_0000 + 16 * s);
            assert!(c.put(st, 0, 1024, 0x1000));
            assert_eq!(c.take(st, 0, 1024), Some(0x1000));
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
