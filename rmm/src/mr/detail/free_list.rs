//! Free-list bookkeeping of the sub-allocators, on plain integers.
//!
//! Addresses are `u64`, sizes `usize`; nothing here touches memory or the
//! driver, so all of it is tested on machines without a GPU (unit tests and
//! model-based property tests below).
//!
//! * [`CoalescingFreeList`]: free blocks indexed by address (for coalescing)
//!   and by `(size, address)` (for best fit). Insert, best-fit allocate and
//!   remove are O(log n). Blocks never merge across a *head*, the first byte
//!   of an upstream chunk, which the caller names through a predicate.
//! * [`FixedSizeFreeList`]: a FIFO of equal blocks, O(1) both ways.
//! * `FreeBlocks` (crate-internal): what the stream-ordered core needs from either.
#![forbid(unsafe_code)]

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// What the stream-ordered sub-allocator core needs from a free list.
pub(crate) trait FreeBlocks: Default + Send + 'static {
    /// True when [`take`](Self::take) of `size` bytes would succeed.
    fn fits(&self, size: usize) -> bool;
    /// Removes `size` bytes and returns their address (splitting as needed).
    fn take(&mut self, size: usize) -> Option<u64>;
    /// Adds a free block, merging with neighbours not separated by a head.
    /// Returns false (and changes nothing) when the block overlaps a free one.
    fn put(&mut self, addr: u64, size: usize, is_head: impl Fn(u64) -> bool) -> bool;
    /// Moves every block of `other` into `self`.
    fn absorb(&mut self, other: &mut Self, is_head: impl Fn(u64) -> bool);
    /// True when no block is free.
    fn is_empty(&self) -> bool;
    /// Total free bytes.
    fn free_bytes(&self) -> usize;
    /// Every free block as (address, size), for snapshots; a size of 0
    /// means the list does not know it (a fixed-size list never given one).
    fn blocks(&self) -> Vec<(u64, usize)>;
}

/// A hasher for block addresses: one folded 128-bit multiply (addresses are
/// multiples of 256, so their low bits alone would hash badly).
#[derive(Debug, Default, Clone, Copy)]
pub struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        let m = u128::from(self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by addresses.
pub(crate) type AddrMap<V> = HashMap<u64, V, BuildHasherDefault<AddrHasher>>;

/// Gives back most of an address map's table once it holds under a
/// sixteenth of its capacity (hash tables never shrink by themselves).
///
/// A table grown for a burst of blocks and then left nearly empty costs
/// every later operation a cache miss on a random line of a table of
/// megabytes: after `random` with 100 000 allocations, the pool's next
/// rows ran 25% slower per operation than on fresh tables. The table had
/// at least 7/16 of its capacity in use when it last grew, so shrinking is
/// paid for by the 3/8 of its capacity removed since: amortised O(1).
pub(crate) fn shrink_if_sparse<V>(map: &mut AddrMap<V>) {
    const SMALL: usize = 512;
    let capacity = map.capacity();
    if capacity > SMALL && map.len() < capacity / 16 {
        map.shrink_to((map.len() * 4).max(SMALL / 2));
    }
}

fn size_key(size: usize, addr: u64) -> u128 {
    ((size as u128) << 64) | u128::from(addr)
}

/// Free blocks of a coalescing best-fit allocator.
///
/// Boundary tags in two hash maps (block start to size, block end to start)
/// make coalescing O(1); an ordered set of `(size, address)` makes best fit
/// O(log n). Blocks of 256 MiB or more (chunk tails, large spans: at most
/// memory / 256 MiB of them) sit in a short list scanned linearly instead,
/// so the ever-resized tail of a pool costs no tree update. Invariants (checked by `check` in tests): the
/// three indexes hold the same blocks; no two blocks overlap; two adjacent
/// blocks exist only when the second starts at a head; `free_bytes` is
/// their total size.
#[derive(Debug, Clone)]
pub struct CoalescingFreeList {
    by_start: AddrMap<usize>,
    by_end: AddrMap<u64>,
    /// Blocks below `huge_at` bytes, by `(size, address)`.
    by_size: BTreeSet<u128>,
    /// Blocks of `huge_at` bytes or more (a few chunk tails and spans);
    /// scanned linearly, so resizing them costs no tree update.
    huge: Vec<(u64, usize)>,
    huge_at: usize,
    bytes: usize,
}

impl Default for CoalescingFreeList {
    fn default() -> Self {
        CoalescingFreeList {
            by_start: AddrMap::default(),
            by_end: AddrMap::default(),
            by_size: BTreeSet::new(),
            huge: Vec::new(),
            huge_at: HUGE,
            bytes: 0,
        }
    }
}

/// Blocks at least this large live in the short `huge` list.
const HUGE: usize = 256 << 20;

impl CoalescingFreeList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty list that keeps blocks of `bytes` or more in its short
    /// linear list (for tests of that path with small sizes).
    pub fn with_huge_threshold(bytes: usize) -> Self {
        CoalescingFreeList {
            huge_at: bytes.max(1),
            ..Self::default()
        }
    }

    #[cfg(test)]
    /// Number of free blocks.
    pub fn len(&self) -> usize {
        self.by_start.len()
    }

    /// True when no block is free.
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }

    /// Total free bytes.
    pub fn free_bytes(&self) -> usize {
        self.bytes
    }

    /// Number of free blocks.
    pub fn block_count(&self) -> usize {
        self.by_start.len()
    }

    /// Size of the largest free block (0 when empty).
    pub fn largest(&self) -> usize {
        let small = self.by_size.last().map_or(0, |&k| (k >> 64) as usize);
        self.huge.iter().map(|&(_, n)| n).max().unwrap_or(0).max(small)
    }

    fn index_insert(&mut self, size: usize, addr: u64) {
        if size >= self.huge_at {
            self.huge.push((addr, size));
        } else {
            self.by_size.insert(size_key(size, addr));
        }
    }

    fn index_remove(&mut self, size: usize, addr: u64) {
        if size >= self.huge_at {
            if let Some(i) = self.huge.iter().position(|&(a, _)| a == addr) {
                self.huge.swap_remove(i);
            }
        } else {
            self.by_size.remove(&size_key(size, addr));
        }
    }

    /// The best fit for `size`: the smallest block that holds it, lowest
    /// address among equals.
    fn best_fit(&self, size: usize) -> Option<(u64, usize)> {
        // An emptied tree keeps its root node: skip the descent when no
        // small block is free (the arena's usual state, one huge block per
        // superblock).
        if size < self.huge_at && !self.by_size.is_empty() {
            if let Some(&k) = self.by_size.range(size_key(size, 0)..).next() {
                return Some((k as u64, (k >> 64) as usize));
            }
        }
        self.huge
            .iter()
            .filter(|&&(_, n)| n >= size)
            .min_by_key(|&&(a, n)| (n, a))
            .copied()
    }

    /// The size of the block a best-fit allocation of `size` bytes would
    /// cut from, if any.
    pub fn best_fit_size(&self, size: usize) -> Option<usize> {
        self.best_fit(size).map(|(_, n)| n)
    }

    fn unlink(&mut self, addr: u64, size: usize) {
        self.by_start.remove(&addr);
        self.by_end.remove(&(addr + size as u64));
        self.index_remove(size, addr);
        self.bytes -= size;
        self.shrink_if_sparse();
    }

    /// Shrinks the boundary-tag tables once they are mostly empty
    /// ([`shrink_if_sparse`]).
    fn shrink_if_sparse(&mut self) {
        shrink_if_sparse(&mut self.by_start);
        shrink_if_sparse(&mut self.by_end);
    }

    /// Adds the free block `[addr, addr + size)`, merging it with the free
    /// block that ends at `addr` (unless `addr` is a head) and the one that
    /// starts at its end (unless that is a head).
    ///
    /// Returns false, changing nothing, when the block is empty or when a
    /// free block starts where it starts or ends where it ends (a double
    /// free; a free of a block in the middle of a larger free block is not
    /// detected here: the live record of the stream-ordered core, checked
    /// before the list sees a free, refuses every double free).
    pub fn insert(&mut self, addr: u64, size: usize, is_head: impl Fn(u64) -> bool) -> bool {
        self.insert_merged(addr, size, is_head).is_some()
    }

    /// As [`insert`](Self::insert), returning the free block the new one
    /// ended up in (after merging), or `None` when it was refused.
    pub fn insert_merged(
        &mut self,
        addr: u64,
        size: usize,
        is_head: impl Fn(u64) -> bool,
    ) -> Option<(u64, usize)> {
        let end = addr.checked_add(size as u64)?;
        if size == 0 {
            return None;
        }
        // Each index is touched as little as possible (on the hot path of a
        // block freed next to the free rest of its chunk: three hash
        // operations). The neighbours' entries double as the overlap
        // checks: two free blocks are adjacent only across a head, so when
        // a free block starts at `end` (not a head) none ends there, and
        // when one ends at `addr` (not a head) none starts there.
        let next = if is_head(end) {
            None
        } else {
            self.by_start.remove(&end)
        };
        if next.is_none() && self.by_end.contains_key(&end) {
            return None;
        }
        let ns = next.unwrap_or(0);
        let prev = if is_head(addr) {
            None
        } else {
            self.by_end.remove(&addr)
        };
        let (start, len) = match prev {
            Some(pa) => {
                let ps = (addr - pa) as usize;
                let len = ps + size + ns;
                if let Some(v) = self.by_start.get_mut(&pa) {
                    *v = len;
                }
                self.index_remove(ps, pa);
                (pa, len)
            }
            None => match self.by_start.entry(addr) {
                Entry::Occupied(_) => {
                    // A free block starts here: a double free. Undo.
                    if let Some(ns) = next {
                        self.by_start.insert(end, ns);
                    }
                    return None;
                }
                Entry::Vacant(v) => {
                    v.insert(size + ns);
                    (addr, size + ns)
                }
            },
        };
        let new_end = start + len as u64;
        match next {
            Some(ns) => {
                self.index_remove(ns, end);
                if let Some(v) = self.by_end.get_mut(&new_end) {
                    *v = start;
                }
            }
            None => {
                self.by_end.insert(new_end, start);
            }
        }
        self.index_insert(len, start);
        self.bytes += size;
        if prev.is_some() && next.is_some() {
            // Two blocks became one.
            self.shrink_if_sparse();
        }
        Some((start, len))
    }

    /// Best fit: removes `size` bytes from the front of the smallest block
    /// that holds them (lowest address among equals) and returns their
    /// address; the rest of the block stays free.
    pub fn allocate(&mut self, size: usize) -> Option<u64> {
        self.allocate_block(size).map(|(a, _)| a)
    }

    /// As [`allocate`](Self::allocate), also returning the size of the free
    /// block the bytes were cut from.
    pub fn allocate_block(&mut self, size: usize) -> Option<(u64, usize)> {
        let (ba, bs) = self.best_fit(size)?;
        self.index_remove(bs, ba);
        self.by_start.remove(&ba);
        self.bytes -= size;
        let end = ba + bs as u64;
        if bs > size {
            // The rest keeps the block's end: update that entry in place.
            let rest = ba + size as u64;
            self.by_start.insert(rest, bs - size);
            if let Some(v) = self.by_end.get_mut(&end) {
                *v = rest;
            }
            self.index_insert(bs - size, rest);
        } else {
            self.by_end.remove(&end);
            self.shrink_if_sparse();
        }
        Some((ba, bs))
    }

    /// Removes the free block that starts at `addr` and returns its size.
    pub fn remove(&mut self, addr: u64) -> Option<usize> {
        let size = *self.by_start.get(&addr)?;
        self.unlink(addr, size);
        Some(size)
    }

    /// The free block that ends exactly at `end`, if any.
    pub fn block_ending_at(&self, end: u64) -> Option<(u64, usize)> {
        self.by_end.get(&end).map(|&a| (a, (end - a) as usize))
    }

    #[cfg(test)]
    /// All free blocks, by address.
    pub fn blocks(&self) -> Vec<(u64, usize)> {
        let mut v: Vec<(u64, usize)> = self.by_start.iter().map(|(&a, &s)| (a, s)).collect();
        v.sort_unstable();
        v
    }

    /// Removes every block and returns them (in no particular order).
    pub fn drain(&mut self) -> Vec<(u64, usize)> {
        self.by_size.clear();
        self.huge.clear();
        self.by_end.clear();
        self.bytes = 0;
        self.by_start.drain().collect()
    }

    #[cfg(test)]
    /// Checks the invariants; returns a description of the first violation.
    pub fn check(&self, is_head: impl Fn(u64) -> bool) -> Result<(), String> {
        if self.by_start.len() != self.by_size.len() + self.huge.len()
            || self.by_start.len() != self.by_end.len()
        {
            return Err("indexes differ in length".into());
        }
        let mut total = 0usize;
        let mut prev_end: Option<u64> = None;
        for (a, s) in self.blocks() {
            if s == 0 {
                return Err(format!("empty block at {a:#x}"));
            }
            let indexed = if s >= self.huge_at {
                self.huge.contains(&(a, s))
            } else {
                self.by_size.contains(&size_key(s, a))
            };
            if !indexed {
                return Err(format!("block {a:#x}+{s} missing from the size index"));
            }
            if self.by_end.get(&(a + s as u64)) != Some(&a) {
                return Err(format!("block {a:#x}+{s} missing from the end index"));
            }
            if let Some(pe) = prev_end {
                if pe > a {
                    return Err(format!("blocks overlap at {a:#x}"));
                }
                if pe == a && !is_head(a) {
                    return Err(format!("adjacent blocks not merged at {a:#x}"));
                }
            }
            prev_end = Some(a + s as u64);
            total += s;
        }
        if total != self.bytes {
            return Err(format!("free bytes {} but blocks sum to {total}", self.bytes));
        }
        Ok(())
    }
}

impl FreeBlocks for CoalescingFreeList {
    fn fits(&self, size: usize) -> bool {
        self.largest() >= size
    }
    fn take(&mut self, size: usize) -> Option<u64> {
        self.allocate(size)
    }
    fn put(&mut self, addr: u64, size: usize, is_head: impl Fn(u64) -> bool) -> bool {
        self.insert(addr, size, is_head)
    }
    fn absorb(&mut self, other: &mut Self, is_head: impl Fn(u64) -> bool) {
        if self.is_empty() {
            std::mem::swap(self, other);
            return;
        }
        for (a, s) in other.drain() {
            if !self.insert(a, s, &is_head) {
                log::error!("free list merge: block {a:#x}+{s} overlaps a free block; dropped");
            }
        }
    }
    fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }
    fn free_bytes(&self) -> usize {
        self.bytes
    }
    fn blocks(&self) -> Vec<(u64, usize)> {
        self.by_start.iter().map(|(&a, &n)| (a, n)).collect()
    }
}

/// Free blocks of one fixed size: a FIFO (reuse in the order freed).
#[derive(Debug, Default, Clone)]
pub struct FixedSizeFreeList {
    blocks: VecDeque<u64>,
    block_size: usize,
}

impl FixedSizeFreeList {
    #[cfg(test)]
    /// An empty list of `block_size`-byte blocks.
    pub fn new(block_size: usize) -> Self {
        FixedSizeFreeList {
            blocks: VecDeque::new(),
            block_size,
        }
    }

    #[cfg(test)]
    /// True when no block is free.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Takes the oldest free block.
    pub fn pop(&mut self) -> Option<u64> {
        self.blocks.pop_front()
    }

    /// Adds a free block at the back.
    pub fn push(&mut self, addr: u64) {
        self.blocks.push_back(addr);
    }
}

impl FreeBlocks for FixedSizeFreeList {
    fn fits(&self, size: usize) -> bool {
        !self.blocks.is_empty() && (self.block_size == 0 || size <= self.block_size)
    }
    fn take(&mut self, size: usize) -> Option<u64> {
        if self.block_size != 0 && size > self.block_size {
            return None;
        }
        self.pop()
    }
    fn put(&mut self, addr: u64, size: usize, _is_head: impl Fn(u64) -> bool) -> bool {
        if self.block_size == 0 {
            self.block_size = size;
        }
        self.push(addr);
        true
    }
    fn absorb(&mut self, other: &mut Self, _is_head: impl Fn(u64) -> bool) {
        if self.block_size == 0 {
            self.block_size = other.block_size;
        }
        self.blocks.append(&mut other.blocks);
    }
    fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
    fn blocks(&self) -> Vec<(u64, usize)> {
        self.blocks.iter().map(|&a| (a, self.block_size)).collect()
    }
    fn free_bytes(&self) -> usize {
        self.blocks.len() * self.block_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::detail::live_set::{BadFree, LiveMap};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const NO_HEADS: fn(u64) -> bool = |_| false;

    #[test]
    fn best_fit_and_split() {
        let mut l = CoalescingFreeList::new();
        assert!(l.insert(0, 1024, NO_HEADS));
        assert!(l.insert(4096, 256, NO_HEADS));
        assert!(l.insert(8192, 512, NO_HEADS));
        // Best fit for 300 is the 512 block, not the first or largest.
        assert_eq!(l.allocate(300), Some(8192));
        assert_eq!(l.block_ending_at(8704), Some((8492, 212)));
        assert_eq!(l.allocate(256), Some(4096));
        assert_eq!(l.allocate(2000), None);
        assert_eq!(l.free_bytes(), 1024 + 212);
        l.check(NO_HEADS).unwrap();
    }

    #[test]
    fn coalesces_both_sides_but_not_across_heads() {
        let mut l = CoalescingFreeList::new();
        assert!(l.insert(0, 256, NO_HEADS));
        assert!(l.insert(512, 256, NO_HEADS));
        assert!(l.insert(256, 256, NO_HEADS));
        assert_eq!(l.len(), 1);
        assert_eq!(l.largest(), 768);
        let heads = |a: u64| a == 1024;
        assert!(l.insert(1024, 256, heads));
        assert!(l.insert(768, 256, heads));
        assert_eq!(l.blocks(), vec![(0, 1024), (1024, 256)]);
        l.check(heads).unwrap();
    }

    #[test]
    fn double_free_is_refused() {
        let mut l = CoalescingFreeList::new();
        assert!(l.insert(1000, 500, NO_HEADS));
        assert!(!l.insert(1000, 500, NO_HEADS));
        assert!(!l.insert(1000, 10, NO_HEADS));
        assert!(!l.insert(1400, 100, NO_HEADS));
        assert!(!l.insert(5, 0, NO_HEADS));
        assert!(!l.insert(u64::MAX - 1, 10, NO_HEADS));
        assert!(l.insert(900, 100, NO_HEADS));
        assert_eq!(l.blocks(), vec![(900, 600)]);
        l.check(NO_HEADS).unwrap();
    }

    #[test]
    fn refused_insert_puts_back_the_unlinked_neighbour() {
        // [1000, 1200) starts where a free block starts and ends where
        // another one starts: the second is unlinked for the merge before
        // the first is found, and must come back unchanged.
        let mut l = CoalescingFreeList::new();
        assert!(l.insert(1000, 100, NO_HEADS));
        assert!(l.insert(1200, 100, NO_HEADS));
        assert_eq!(l.insert_merged(1000, 200, NO_HEADS), None);
        assert_eq!(l.blocks(), vec![(1000, 100), (1200, 100)]);
        assert_eq!(l.free_bytes(), 200);
        l.check(NO_HEADS).unwrap();
        // The gap between them still merges both ways.
        assert_eq!(l.insert_merged(1100, 100, NO_HEADS), Some((1000, 300)));
        l.check(NO_HEADS).unwrap();
    }

    #[test]
    fn fixed_size_is_fifo() {
        let mut l = FixedSizeFreeList::new(256);
        for a in [0u64, 256, 512] {
            assert!(l.put(a, 256, NO_HEADS));
        }
        assert!(l.fits(100) && !l.fits(257));
        assert_eq!(l.take(256), Some(0));
        let mut other = FixedSizeFreeList::new(256);
        other.put(1024, 256, NO_HEADS);
        l.absorb(&mut other, NO_HEADS);
        assert!(other.is_empty());
        assert_eq!(l.free_bytes(), 3 * 256);
        assert_eq!(
            (l.pop(), l.pop(), l.pop(), l.pop()),
            (Some(256), Some(512), Some(1024), None)
        );
    }

    /// The model: one flag per 256-byte unit of a few chunks.
    #[derive(Debug, Clone)]
    enum Op {
        Alloc(usize),
        Free(usize),
        /// A second free of a block freed earlier.
        DoubleFree(usize),
        /// A free of a pointer inside a live block.
        Interior(usize),
        Absorb,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1usize..40).prop_map(Op::Alloc),
            any::<usize>().prop_map(Op::Free),
            any::<usize>().prop_map(Op::DoubleFree),
            any::<usize>().prop_map(Op::Interior),
            Just(Op::Absorb),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random allocate / free sequences over chunks of 256-byte units,
        /// split over two lists that are merged now and then, checked against
        /// a byte-map model: no overlap, every unit either live or free,
        /// coalescing complete, best fit exact. Frees go through the live
        /// record first, as in the stream-ordered core: every double free
        /// (also of a block whose neighbours were freed and coalesced) and
        /// every interior pointer is refused and changes nothing.
        #[test]
        fn matches_model(chunks in proptest::collection::vec(1usize..64, 1..4),
                         ops in proptest::collection::vec(op(), 1..300)) {
            const U: u64 = 256;
            // Chunks at increasing addresses; some are adjacent so heads matter.
            let mut starts = Vec::new();
            let mut at = 1u64 << 20;
            for (i, &c) in chunks.iter().enumerate() {
                starts.push((at, c));
                at += c as u64 * U + if i % 2 == 0 { 0 } else { 4 * U };
            }
            let heads: BTreeSet<u64> = starts.iter().map(|&(a, _)| a).collect();
            let is_head = |a: u64| heads.contains(&a);
            let total_units: usize = chunks.iter().sum();
            // Blocks of 8 units or more take the linear "huge" path.
            let mut lists = [CoalescingFreeList::with_huge_threshold(8 * 256), CoalescingFreeList::with_huge_threshold(8 * 256)];
            for &(a, c) in &starts {
                prop_assert!(lists[0].insert(a, c * U as usize, is_head));
            }
            let mut live: Vec<(u64, usize)> = Vec::new();
            let mut record = LiveMap::default();
            let mut freed: Vec<(u64, usize)> = Vec::new();
            let mut turn = 0usize;
            for op in ops {
                turn += 1;
                match op {
                    Op::Alloc(units) => {
                        let size = units * U as usize;
                        let which = turn % 2;
                        // The model's best fit among the list's blocks.
                        let expect = lists[which].blocks().into_iter().filter(|&(_, s)| s >= size)
                            .min_by_key(|&(a, s)| (s, a)).map(|(a, _)| a);
                        let got = lists[which].allocate(size);
                        prop_assert_eq!(got, expect);
                        if let Some(a) = got {
                            live.push((a, size));
                            prop_assert!(record.insert(a, size));
                        }
                    }
                    Op::Free(i) => {
                        if !live.is_empty() {
                            let (a, s) = live.swap_remove(i % live.len());
                            prop_assert_eq!(record.remove(a, s), Ok(()));
                            prop_assert!(lists[turn % 2].insert(a, s, is_head));
                            freed.push((a, s));
                            // The list alone also refuses a second free while
                            // the block's start or end is a free block's edge.
                            let l = &mut lists[turn % 2];
                            let edge = l.blocks().iter().any(|&(b, n)| b == a || b + n as u64 == a + s as u64);
                            if edge {
                                prop_assert!(!l.insert(a, s, is_head));
                            }
                        }
                    }
                    Op::DoubleFree(i) => {
                        if !freed.is_empty() {
                            let (a, s) = freed[i % freed.len()];
                            // Unless the block was handed out again as it was.
                            if !live.contains(&(a, s)) {
                                prop_assert!(record.remove(a, s).is_err(), "double free of {a:#x}+{s} accepted");
                            }
                        }
                    }
                    Op::Interior(i) => {
                        if let Some(&(a, s)) = live.get(i % live.len().max(1)) {
                            if s > U as usize {
                                let off = U * (1 + (i as u64 % (s as u64 / U - 1)));
                                prop_assert_eq!(record.remove(a + off, s - off as usize), Err(BadFree::NotLive));
                            }
                            prop_assert_eq!(record.remove(a, s + 1), Err(BadFree::WrongSize(s)));
                        }
                    }
                    Op::Absorb => {
                        let [l0, l1] = &mut lists;
                        l0.absorb(l1, is_head);
                        prop_assert!(l1.is_empty());
                    }
                }
                for l in &lists {
                    prop_assert!(l.check(is_head).is_ok(), "{:?}", l.check(is_head));
                }
                // Every unit is exactly once live or free, none outside chunks.
                let mut units = BTreeMap::new();
                for (a, s) in live.iter().copied().chain(lists[0].blocks()).chain(lists[1].blocks()) {
                    for u in 0..(s as u64 / U) {
                        prop_assert!(units.insert(a + u * U, ()).is_none(), "unit {:#x} twice", a + u * U);
                    }
                }
                prop_assert_eq!(units.len(), total_units);
                for &k in units.keys() {
                    prop_assert!(starts.iter().any(|&(a, c)| k >= a && k < a + c as u64 * U));
                }
            }
            // Free everything into one list: each chunk is one block again.
            for (a, s) in live.drain(..) {
                prop_assert!(lists[0].insert(a, s, is_head));
            }
            let [l0, l1] = &mut lists;
            l0.absorb(l1, is_head);
            let mut expect: Vec<(u64, usize)> = starts.iter().map(|&(a, c)| (a, c * U as usize)).collect();
            expect.sort();
            prop_assert_eq!(l0.blocks(), expect);
        }
    }
}
