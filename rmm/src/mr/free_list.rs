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
//! * [`FreeBlocks`]: what the stream-ordered core needs from either.
#![forbid(unsafe_code)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
}

/// Free blocks of a coalescing best-fit allocator.
///
/// Invariants (checked by [`check`](Self::check) in tests): both indexes hold
/// the same blocks; no two blocks overlap; two adjacent blocks exist only
/// when the second starts at a head; `free_bytes` is their total size.
#[derive(Debug, Default, Clone)]
pub struct CoalescingFreeList {
    by_addr: BTreeMap<u64, usize>,
    by_size: BTreeSet<(usize, u64)>,
    bytes: usize,
}

impl CoalescingFreeList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of free blocks.
    pub fn len(&self) -> usize {
        self.by_addr.len()
    }

    /// True when no block is free.
    pub fn is_empty(&self) -> bool {
        self.by_addr.is_empty()
    }

    /// Total free bytes.
    pub fn free_bytes(&self) -> usize {
        self.bytes
    }

    /// Size of the largest free block (0 when empty).
    pub fn largest(&self) -> usize {
        self.by_size.last().map_or(0, |&(s, _)| s)
    }

    fn add(&mut self, addr: u64, size: usize) {
        self.by_addr.insert(addr, size);
        self.by_size.insert((size, addr));
        self.bytes += size;
    }

    fn unlink(&mut self, addr: u64, size: usize) {
        self.by_addr.remove(&addr);
        self.by_size.remove(&(size, addr));
        self.bytes -= size;
    }

    /// Adds the free block `[addr, addr + size)`, merging it with the free
    /// block that ends at `addr` (unless `addr` is a head) and the one that
    /// starts at its end (unless that is a head).
    ///
    /// Returns false, changing nothing, when the block is empty or overlaps
    /// a free block (a double free).
    pub fn insert(&mut self, addr: u64, size: usize, is_head: impl Fn(u64) -> bool) -> bool {
        let Some(end) = addr.checked_add(size as u64) else {
            return false;
        };
        if size == 0 {
            return false;
        }
        let prev = self.by_addr.range(..=addr).next_back().map(|(&a, &s)| (a, s));
        let next = self.by_addr.range(addr..).next().map(|(&a, &s)| (a, s));
        if let Some((pa, ps)) = prev {
            if pa + ps as u64 > addr {
                return false;
            }
        }
        if let Some((na, _)) = next {
            if na < end {
                return false;
            }
        }
        let (mut start, mut len) = (addr, size);
        if let Some((pa, ps)) = prev {
            if pa + ps as u64 == addr && !is_head(addr) {
                self.unlink(pa, ps);
                start = pa;
                len += ps;
            }
        }
        if let Some((na, ns)) = next {
            if na == end && !is_head(end) {
                self.unlink(na, ns);
                len += ns;
            }
        }
        self.add(start, len);
        true
    }

    /// Best fit: removes `size` bytes from the front of the smallest block
    /// that holds them (lowest address among equals) and returns their
    /// address; the rest of the block stays free.
    pub fn allocate(&mut self, size: usize) -> Option<u64> {
        let &(bs, ba) = self.by_size.range((size, 0)..).next()?;
        self.unlink(ba, bs);
        if bs > size {
            self.add(ba + size as u64, bs - size);
        }
        Some(ba)
    }

    /// Removes the free block that starts at `addr` and returns its size.
    pub fn remove(&mut self, addr: u64) -> Option<usize> {
        let size = *self.by_addr.get(&addr)?;
        self.unlink(addr, size);
        Some(size)
    }

    /// The free block that ends exactly at `end`, if any.
    pub fn block_ending_at(&self, end: u64) -> Option<(u64, usize)> {
        self.by_addr
            .range(..end)
            .next_back()
            .map(|(&a, &s)| (a, s))
            .filter(|&(a, s)| a + s as u64 == end)
    }

    /// Free blocks that start inside `[start, end)`, by address.
    pub fn blocks_in(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.by_addr.range(start..end).map(|(&a, &s)| (a, s))
    }

    /// All free blocks, by address.
    pub fn iter(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        self.by_addr.iter().map(|(&a, &s)| (a, s))
    }

    /// Removes every block and returns them by address.
    pub fn drain(&mut self) -> Vec<(u64, usize)> {
        self.by_size.clear();
        self.bytes = 0;
        std::mem::take(&mut self.by_addr).into_iter().collect()
    }

    /// Checks the invariants; returns a description of the first violation.
    pub fn check(&self, is_head: impl Fn(u64) -> bool) -> Result<(), String> {
        if self.by_addr.len() != self.by_size.len() {
            return Err("indexes differ in length".into());
        }
        let mut total = 0usize;
        let mut prev_end: Option<u64> = None;
        for (&a, &s) in &self.by_addr {
            if s == 0 {
                return Err(format!("empty block at {a:#x}"));
            }
            if !self.by_size.contains(&(s, a)) {
                return Err(format!("block {a:#x}+{s} missing from the size index"));
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
        self.by_addr.is_empty()
    }
    fn free_bytes(&self) -> usize {
        self.bytes
    }
}

/// Free blocks of one fixed size: a FIFO (reuse in the order freed).
#[derive(Debug, Default, Clone)]
pub struct FixedSizeFreeList {
    blocks: VecDeque<u64>,
    block_size: usize,
}

impl FixedSizeFreeList {
    /// An empty list of `block_size`-byte blocks.
    pub fn new(block_size: usize) -> Self {
        FixedSizeFreeList {
            blocks: VecDeque::new(),
            block_size,
        }
    }

    /// Number of free blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

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
    fn free_bytes(&self) -> usize {
        self.blocks.len() * self.block_size
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![(0, 1024), (1024, 256)]);
        l.check(heads).unwrap();
    }

    #[test]
    fn double_free_is_refused() {
        let mut l = CoalescingFreeList::new();
        assert!(l.insert(1000, 500, NO_HEADS));
        assert!(!l.insert(1000, 500, NO_HEADS));
        assert!(!l.insert(1200, 10, NO_HEADS));
        assert!(!l.insert(900, 101, NO_HEADS));
        assert!(!l.insert(5, 0, NO_HEADS));
        assert!(!l.insert(u64::MAX - 1, 10, NO_HEADS));
        assert!(l.insert(900, 100, NO_HEADS));
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![(900, 600)]);
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
        Absorb,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (1usize..40).prop_map(Op::Alloc),
            any::<usize>().prop_map(Op::Free),
            Just(Op::Absorb),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random allocate / free sequences over chunks of 256-byte units,
        /// split over two lists that are merged now and then, checked against
        /// a byte-map model: no overlap, every unit either live or free,
        /// coalescing complete, best fit exact.
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
            let mut lists = [CoalescingFreeList::new(), CoalescingFreeList::new()];
            for &(a, c) in &starts {
                prop_assert!(lists[0].insert(a, c * U as usize, is_head));
            }
            let mut live: Vec<(u64, usize)> = Vec::new();
            let mut turn = 0usize;
            for op in ops {
                turn += 1;
                match op {
                    Op::Alloc(units) => {
                        let size = units * U as usize;
                        let which = turn % 2;
                        // The model's best fit among the list's blocks.
                        let expect = lists[which].iter().filter(|&(_, s)| s >= size)
                            .min_by_key(|&(a, s)| (s, a)).map(|(a, _)| a);
                        let got = lists[which].allocate(size);
                        prop_assert_eq!(got, expect);
                        if let Some(a) = got {
                            live.push((a, size));
                        }
                    }
                    Op::Free(i) => {
                        if !live.is_empty() {
                            let (a, s) = live.swap_remove(i % live.len());
                            prop_assert!(lists[turn % 2].insert(a, s, is_head));
                            // A second free of the same block is refused.
                            prop_assert!(!lists[turn % 2].insert(a, s, is_head));
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
                for (a, s) in live.iter().copied().chain(lists[0].iter()).chain(lists[1].iter()) {
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
            prop_assert_eq!(l0.iter().collect::<Vec<_>>(), expect);
        }
    }
}
