//! Bookkeeping of the arena allocator, on plain integers: the global arena
//! (free address ranges and which arena owns which superblock) and the
//! per-stream / per-thread arenas (superblocks and their free blocks).
//!
//! Nothing here touches memory or the driver; the locks and the stream
//! rules live in `arena.rs`.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use super::free_list::CoalescingFreeList;

/// Address ranges `(start, size)`.
pub(crate) type Ranges = Vec<(u64, usize)>;

/// Outcome of [`ArenaBook::free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Freed {
    /// The block is not inside one of this arena's superblocks.
    NotOwned,
    /// Freed; the arena keeps the superblock.
    Kept,
    /// Freed, and the superblock `(start, size)` became empty while the arena
    /// already had enough empty ones: it was removed and goes back to the
    /// global arena.
    Release(u64, usize),
    /// The block overlaps free memory (a double free): nothing changed.
    Overlap,
    /// From [`ArenaBook::free_live`]: the freed block is stashed, but the
    /// block stashed before it, `(address, size)`, overlapped free memory
    /// when merged (a double free that unchecked frees trusted) and was
    /// dropped.
    StashedOverlap(u64, usize),
}

/// One arena: superblocks taken from the global arena and their free blocks
/// (best fit over all of them; blocks never merge across superblocks).
///
/// A superblock is empty exactly when one free block covers it, which the
/// coalescing free list tells on every free, so no per-superblock counters
/// are kept and an allocation touches only the free list.
#[derive(Debug, Default)]
pub(crate) struct ArenaBook {
    free: CoalescingFreeList,
    /// Large blocks (taken from the global arena) freed on this arena's
    /// stream: reused by its large requests without synchronisation.
    large: CoalescingFreeList,
    /// Superblocks by start, for finding the one around an address. The
    /// free list's heads (where blocks must not merge) are the superblocks'
    /// bounds: a free only ever merges inside the superblock found here, so
    /// its head test compares with that superblock's start and end instead
    /// of looking the address up (two hash lookups per free saved).
    superblocks: BTreeMap<u64, usize>,
    /// The superblock a free found last (or the one added last), tried
    /// before the tree: a stream's frees mostly land in one superblock.
    last: Option<(u64, usize)>,
    /// Starts of the empty superblocks.
    empty: Vec<u64>,
    max_empty: usize,
    /// The block [`free_live`](Self::free_live) took last, not merged into
    /// the free list yet: the next allocation of its size takes it back
    /// without touching the list (a stream that frees and allocates the
    /// same size, the common case, costs no coalescing at all), and the next
    /// free merges it first. It always lies inside a superblock, so that
    /// superblock is never empty while it is here.
    stash: Option<Stashed>,
}

/// The block [`ArenaBook::free_live`] keeps unmerged, with its superblock
/// (so that merging it later needs no lookup).
#[derive(Debug, Clone, Copy)]
struct Stashed {
    addr: u64,
    size: usize,
    superblock: (u64, usize),
}

impl ArenaBook {
    /// An arena that keeps up to `max_empty` empty superblocks, whose
    /// superblocks are at most `superblock` bytes. Free blocks of half a
    /// superblock or more sit in the free list's short linear part (at most
    /// two per superblock, and best fit scans it only when no smaller block
    /// fits), so allocating a small block from an empty superblock and
    /// freeing it back touch no tree: about 9 ns of a hot pair's 63 on the
    /// simulated device.
    pub fn new(max_empty: usize, superblock: usize) -> Self {
        ArenaBook {
            max_empty,
            free: CoalescingFreeList::with_huge_threshold(superblock / 2),
            ..Default::default()
        }
    }

    /// [`containing`](Self::containing), trying the last superblock found first.
    fn containing_cached(&mut self, addr: u64) -> Option<(u64, usize)> {
        if let Some((s, n)) = self.last {
            if addr >= s && addr < s + n as u64 {
                return self.last;
            }
        }
        let found = self.containing(addr);
        if found.is_some() {
            self.last = found;
        }
        found
    }

    fn containing(&self, addr: u64) -> Option<(u64, usize)> {
        self.superblocks
            .range(..=addr)
            .next_back()
            .filter(|(&s, &n)| addr < s + n as u64)
            .map(|(&s, &n)| (s, n))
    }

    /// Allocates `size` bytes from the superblocks: the block freed last
    /// when it has this size, else best fit over the free list (the block
    /// freed last is not part of it until the next free).
    pub fn allocate(&mut self, size: usize) -> Option<u64> {
        if let Some(a) = self.take_stash(size) {
            return Some(a);
        }
        let (a, _) = self.free.allocate_block(size)?;
        // A block that starts an empty superblock is that whole superblock.
        if let Some(i) = self.empty.iter().position(|&s| s == a) {
            self.empty.swap_remove(i);
        }
        Some(a)
    }

    /// Takes back the block [`free_live`](Self::free_live) stashed, when it
    /// has `size` bytes. Its address is not live anywhere: the free that
    /// stashed it removed its record (when frees are checked), and only
    /// this book can hand it out again.
    #[inline]
    pub fn take_stash(&mut self, size: usize) -> Option<u64> {
        let p = self.stash.filter(|p| p.size == size)?;
        self.stash = None;
        Some(p.addr)
    }

    /// Takes a large block freed earlier on this arena's stream (best fit).
    pub fn take_large(&mut self, size: usize) -> Option<u64> {
        self.large.allocate(size)
    }

    /// Keeps a freed large block for this arena's stream; false on overlap.
    pub fn put_large(&mut self, addr: u64, size: usize) -> bool {
        self.large.insert(addr, size, |_| false)
    }

    /// Adds an (entirely free) superblock.
    pub fn add_superblock(&mut self, start: u64, size: usize) {
        self.superblocks.insert(start, size);
        self.last = Some((start, size));
        self.empty.push(start);
        let end = start + size as u64;
        let ok = self.free.insert(start, size, |a| a == start || a == end);
        debug_assert!(ok, "new superblock overlaps free memory");
    }

    /// True when `addr` lies in one of this arena's superblocks.
    #[cfg(test)]
    pub fn owns(&self, addr: u64) -> bool {
        self.containing(addr).is_some()
    }

    /// Frees `[addr, addr + size)` if it lies in one of the superblocks.
    pub fn free(&mut self, addr: u64, size: usize) -> Freed {
        let Some((s, sb_size)) = self.containing_cached(addr) else {
            return Freed::NotOwned;
        };
        self.free_in(addr, size, s, sb_size)
    }

    /// Frees `[addr, addr + size)` in the superblock `(s, sb_size)`, which
    /// contains `addr`.
    fn free_in(&mut self, addr: u64, size: usize, s: u64, sb_size: usize) -> Freed {
        if addr + size as u64 > s + sb_size as u64 {
            return Freed::Overlap;
        }
        let sb_end = s + sb_size as u64;
        let Some(merged) = self.free.insert_merged(addr, size, |a| a == s || a == sb_end) else {
            return Freed::Overlap;
        };
        if merged != (s, sb_size) {
            return Freed::Kept;
        }
        if self.empty.len() < self.max_empty {
            self.empty.push(s);
            return Freed::Kept;
        }
        // Empty, and the arena has enough empty ones: give it back.
        self.free.remove(s);
        self.superblocks.remove(&s);
        self.last = None;
        Freed::Release(s, sb_size)
    }

    /// Frees `[addr, addr + size)`, a block this arena handed out and that
    /// is live (the caller checked it against its live record, or trusts
    /// its caller, so it does not overlap free memory): it becomes the block
    /// the next allocation of its size takes back, and the block stashed
    /// before it is merged now, with [`free`](Self::free)'s outcome for
    /// that one ([`Freed::StashedOverlap`] for its overlap).
    #[inline]
    pub fn free_live(&mut self, addr: u64, size: usize) -> Freed {
        let Some((s, sb_size)) = self.containing_cached(addr) else {
            return Freed::NotOwned;
        };
        if addr + size as u64 > s + sb_size as u64 {
            return Freed::Overlap;
        }
        match self.stash.replace(Stashed {
            addr,
            size,
            superblock: (s, sb_size),
        }) {
            None => Freed::Kept,
            Some(p) => match self.free_in(p.addr, p.size, p.superblock.0, p.superblock.1) {
                Freed::Overlap => Freed::StashedOverlap(p.addr, p.size),
                outcome => outcome,
            },
        }
    }

    /// Removes everything: returns the free blocks (of the superblocks and
    /// the large ones) and the superblocks (which may still hold live blocks).
    pub fn drain(&mut self) -> (Ranges, Ranges) {
        let mut free = self.free.drain();
        free.extend(self.stash.take().map(|p| (p.addr, p.size)));
        free.extend(self.large.drain());
        let sbs = std::mem::take(&mut self.superblocks).into_iter().collect();
        self.empty.clear();
        self.last = None;
        (free, sbs)
    }

    /// Free bytes in the superblocks and large blocks.
    pub fn free_bytes(&self) -> usize {
        self.free.free_bytes() + self.large.free_bytes() + self.stash.map_or(0, |p| p.size)
    }

    /// The largest free block in the superblocks and large blocks.
    pub fn largest_free(&self) -> usize {
        self.free
            .largest()
            .max(self.large.largest())
            .max(self.stash.map_or(0, |p| p.size))
    }

    /// Number of superblocks.
    pub fn superblock_count(&self) -> usize {
        self.superblocks.len()
    }

    #[cfg(test)]
    /// Checks the invariants: free blocks inside superblocks, the empty
    /// list names exactly the superblocks one free block covers.
    pub fn check(&self) -> Result<(), String> {
        self.free.check(|a| self.superblocks.contains_key(&a))?;
        if let Some((s, n)) = self.last {
            if self.superblocks.get(&s) != Some(&n) {
                return Err(format!("cached superblock {s:#x}+{n} is not one of the arena's"));
            }
        }
        let blocks = self.free.blocks();
        for (&s, &n) in &self.superblocks {
            let whole = blocks.contains(&(s, n));
            if whole != self.empty.contains(&s) {
                return Err(format!("superblock {s:#x}: empty {whole} but listed {}", !whole));
            }
        }
        for &(a, n) in &blocks {
            match self.containing(a) {
                Some((s, sn)) if a + n as u64 <= s + sn as u64 => {}
                _ => return Err(format!("free block {a:#x}+{n} outside every superblock")),
            }
        }
        if let Some(Stashed {
            addr: a,
            size: n,
            superblock,
        }) = self.stash
        {
            match self.containing(a) {
                Some(sb) if sb == superblock && a + n as u64 <= sb.0 + sb.1 as u64 => {}
                _ => return Err(format!("stashed block {a:#x}+{n} outside its superblock")),
            }
            if blocks.iter().any(|&(b, m)| b < a + n as u64 && a < b + m as u64) {
                return Err(format!("stashed block {a:#x}+{n} overlaps a free block"));
            }
        }
        self.large.check(|_| false)?;
        for (a, _) in self.large.blocks() {
            if self.containing(a).is_some() {
                return Err(format!("large block {a:#x} inside a superblock"));
            }
        }
        Ok(())
    }
}

/// The global arena: free ranges of the one upstream allocation and the
/// owner (arena index) of every superblock handed out.
#[derive(Debug)]
pub(crate) struct GlobalBook {
    free: CoalescingFreeList,
    owners: BTreeMap<u64, (usize, usize)>,
    size: usize,
}

impl GlobalBook {
    /// A global arena over `[base, base + size)`, all free.
    pub fn new(base: u64, size: usize) -> Self {
        let mut free = CoalescingFreeList::new();
        if size > 0 {
            free.insert(base, size, |_| false);
        }
        GlobalBook {
            free,
            owners: BTreeMap::new(),
            size,
        }
    }

    /// Allocates `size` bytes directly (best fit).
    pub fn allocate(&mut self, size: usize) -> Option<u64> {
        self.free.allocate(size)
    }

    /// Takes a superblock of `size` bytes for arena `owner`.
    pub fn acquire(&mut self, size: usize, owner: usize) -> Option<u64> {
        let a = self.free.allocate(size)?;
        self.owners.insert(a, (size, owner));
        Some(a)
    }

    /// The arena owning the superblock around `addr`, if any.
    pub fn owner_of(&self, addr: u64) -> Option<usize> {
        self.owners
            .range(..=addr)
            .next_back()
            .filter(|(&s, &(n, _))| addr < s + n as u64)
            .map(|(_, &(_, o))| o)
    }

    /// Frees a block owned by the global arena; false on overlap.
    pub fn free(&mut self, addr: u64, size: usize) -> bool {
        self.free.insert(addr, size, |_| false)
    }

    /// Forgets the owner of the superblock at `start` (its free blocks are
    /// given back with [`free`](Self::free)).
    pub fn disown(&mut self, start: u64) {
        self.owners.remove(&start);
    }

    /// Free bytes.
    pub fn free_bytes(&self) -> usize {
        self.free.free_bytes()
    }

    /// The largest free range.
    pub fn largest_free(&self) -> usize {
        self.free.largest()
    }

    /// Number of superblocks owned by arenas.
    #[cfg(test)]
    pub fn owned_superblocks(&self) -> usize {
        self.owners.len()
    }

    /// Size of the arena.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Checks the free list's invariants.
    #[cfg(test)]
    pub fn check(&self) -> Result<(), String> {
        self.free.check(|_| false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const U: usize = 256;
    const SB: usize = 16 * U;

    #[test]
    fn superblock_lifecycle() {
        let mut g = GlobalBook::new(1 << 20, 64 * U);
        let mut a = ArenaBook::new(1, SB);
        let s1 = g.acquire(SB, 0).unwrap();
        a.add_superblock(s1, SB);
        let x = a.allocate(4 * U).unwrap();
        let y = a.allocate(4 * U).unwrap();
        assert_eq!(g.owner_of(x), Some(0));
        assert_eq!(g.owner_of(s1 + SB as u64), None);
        assert_eq!(a.free(x, 4 * U), Freed::Kept);
        assert_eq!(a.free(x, 4 * U), Freed::Overlap);
        assert_eq!(a.free(y, 4 * U), Freed::Kept); // the one empty superblock is kept
        let s2 = g.acquire(SB, 0).unwrap();
        a.add_superblock(s2, SB);
        let z = a.allocate(SB).unwrap();
        let w = a.allocate(SB).unwrap();
        assert!(a.allocate(U).is_none());
        assert_eq!(a.free(z, SB), Freed::Kept);
        match a.free(w, SB) {
            Freed::Release(s, n) => {
                assert_eq!(n, SB);
                g.disown(s);
                assert!(g.free(s, n));
            }
            other => panic!("expected a release, got {other:?}"),
        }
        a.check().unwrap();
        assert_eq!(a.superblock_count(), 1);
        assert_eq!(a.free(1, U), Freed::NotOwned);
        let (free, sbs) = a.drain();
        assert_eq!(free.len(), 1);
        for (s, _) in sbs {
            g.disown(s);
        }
        for (f, n) in free {
            assert!(g.free(f, n));
        }
        assert_eq!(g.free_bytes(), 64 * U);
        assert_eq!(g.largest_free(), 64 * U);
        g.check().unwrap();
    }

    #[test]
    fn live_frees_stash_one_block() {
        let mut a = ArenaBook::new(1, SB);
        a.add_superblock(1 << 20, SB);
        let x = a.allocate(4 * U).unwrap();
        let y = a.allocate(2 * U).unwrap();
        // The hot pair: freed, then taken back, without the free list.
        assert_eq!(a.free_live(x, 4 * U), Freed::Kept);
        assert_eq!(a.free_bytes(), SB - 2 * U);
        a.check().unwrap();
        assert_eq!(a.allocate(4 * U), Some(x));
        // Another size does not take it; the next free merges it first.
        assert_eq!(a.free_live(x, 4 * U), Freed::Kept);
        let z = a.allocate(U).unwrap();
        assert_ne!(z, x);
        assert_eq!(a.free_live(y, 2 * U), Freed::Kept);
        a.check().unwrap();
        assert!(a
            .free
            .blocks()
            .iter()
            .any(|&(b, n)| b <= x && x + 4 * U as u64 <= b + n as u64));
        assert_eq!(a.free_live(z, U), Freed::Kept);
        // Everything free: the superblock is empty once the last block merges.
        assert_eq!(a.free_bytes(), SB);
        let (free, sbs) = a.drain();
        assert_eq!(sbs, vec![(1 << 20, SB)]);
        assert_eq!(free.iter().map(|&(_, n)| n).sum::<usize>(), SB);
        // A block outside every superblock is not this arena's.
        assert_eq!(a.free_live(1, U), Freed::NotOwned);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Alloc { arena: usize, units: usize },
        Free(usize),
        Defragment,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..3, 1usize..40).prop_map(|(arena, units)| Op::Alloc { arena, units }),
            3 => any::<usize>().prop_map(Op::Free),
            1 => Just(Op::Defragment),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Three arenas over one global arena, driven as `arena.rs` drives
        /// them (small requests from superblocks, large ones from the global
        /// arena, frees routed by ownership, defragmentation), against a
        /// byte-map model: no overlap, every unit live or free exactly once.
        #[test]
        fn arenas_match_model(total in 32usize..256, ops in proptest::collection::vec(op(), 1..300)) {
            let base = 1u64 << 30;
            let mut g = GlobalBook::new(base, total * U);
            let mut arenas: Vec<ArenaBook> = (0..3).map(|_| ArenaBook::new(1, SB)).collect();
            let mut live: Vec<(u64, usize)> = Vec::new();
            for op in ops {
                match op {
                    Op::Alloc { arena, units } => {
                        let size = units * U;
                        let got = if size > SB / 2 {
                            arenas[arena].take_large(size).or_else(|| g.allocate(size))
                        } else {
                            arenas[arena].allocate(size).or_else(|| {
                                let s = g.acquire(SB, arena)?;
                                arenas[arena].add_superblock(s, SB);
                                arenas[arena].allocate(size)
                            }).or_else(|| g.allocate(size))
                        };
                        if let Some(a) = got {
                            live.push((a, size));
                        }
                    }
                    Op::Free(i) => {
                        if !live.is_empty() {
                            let (a, size) = live.swap_remove(i % live.len());
                            if size > SB / 2 {
                                prop_assert!(g.owner_of(a).is_none());
                                prop_assert!(arenas[i % 3].put_large(a, size));
                            } else {
                            match g.owner_of(a) {
                                // Live frees (the arena's checked path) and plain ones, mixed.
                                Some(o) => match if i % 2 == 0 { arenas[o].free_live(a, size) } else { arenas[o].free(a, size) } {
                                    Freed::Kept => {}
                                    Freed::Release(s, n) => { g.disown(s); prop_assert!(g.free(s, n)); }
                                    other => prop_assert!(false, "free in owner gave {:?}", other),
                                },
                                None => {
                                    for ar in &arenas { prop_assert!(!ar.owns(a)); }
                                    prop_assert!(g.free(a, size));
                                }
                            }
                            }
                        }
                    }
                    Op::Defragment => {
                        for ar in &mut arenas {
                            let (free, sbs) = ar.drain();
                            for (s, _) in sbs { g.disown(s); }
                            for (f, n) in free { prop_assert!(g.free(f, n)); }
                        }
                        prop_assert_eq!(g.owned_superblocks(), 0);
                    }
                }
                g.check().map_err(TestCaseError::fail)?;
                for ar in &arenas { ar.check().map_err(TestCaseError::fail)?; }
                let mut units = BTreeMap::new();
                let blocks = live.iter().copied()
                    .chain(g.free.blocks())
                    .chain(arenas.iter().flat_map(|a| a.free.blocks()))
                    .chain(arenas.iter().flat_map(|a| a.stash.map(|p| (p.addr, p.size))))
                    .chain(arenas.iter().flat_map(|a| a.large.blocks()));
                for (a, s) in blocks {
                    prop_assert!(a >= base && a + s as u64 <= base + (total * U) as u64);
                    for u in 0..(s / U) as u64 {
                        prop_assert!(units.insert(a + u * U as u64, ()).is_none(), "unit {:#x} twice", a + u * U as u64);
                    }
                }
                prop_assert_eq!(units.len(), total);
            }
            // Freeing everything and defragmenting gives back one range.
            for (a, size) in live.drain(..) {
                if size > SB / 2 {
                    arenas[0].put_large(a, size);
                    continue;
                }
                match g.owner_of(a) {
                    Some(o) => { if let Freed::Release(s, n) = arenas[o].free(a, size) { g.disown(s); g.free(s, n); } }
                    None => { g.free(a, size); }
                }
            }
            for ar in &mut arenas {
                let (free, sbs) = ar.drain();
                for (s, _) in sbs { g.disown(s); }
                for (f, n) in free { g.free(f, n); }
            }
            prop_assert_eq!(g.largest_free(), total * U);
        }
    }
}
