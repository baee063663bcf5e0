//! The stream-ordered core shared by the pool, fixed-size and virtual pool
//! resources (RMM's `stream_ordered_memory_resource`).
//!
//! One free list per stream. A block freed on stream A is reused on A at
//! once (stream order makes that safe) and on another stream B only after B
//! waits on an event of A: first a single block is taken from another
//! stream's list without merging, then whole lists are merged into B's, and
//! only then does the backing grow.
//!
//! Events are adaptive. A list starts *lazy*: frees make no driver call.
//! The first time another stream takes from a lazy list that saw frees, the
//! taker synchronises the device (covering every earlier use of every list,
//! whether or not their streams still exist) and all lists, and every list
//! created later, turn *eager*: from then on a stream's event is recorded on
//! every free, while the stream is known to be alive (RMM's scheme, which keeps the lists of destroyed streams usable,
//! its `DeletedStream` case), and takers only wait on that event on the GPU.
//! So a stream that never shares its blocks never pays for an event, and a
//! list that never saw a free (fresh upstream memory) needs no wait at all.
//! Over a simulated upstream no event is ever created, recorded or waited on.
//!
//! Frees are checked against a record of the live allocations (address →
//! requested bytes, [`LiveMap`]): a double free, a foreign, never-allocated
//! or interior pointer, or a wrong size is logged at error level and
//! ignored, so no block is ever handed out twice. The check can be turned
//! off per resource (`unchecked_frees`); then only frees outside the
//! backing or overlapping a free block's edge are caught.

use std::sync::Arc;
use std::thread::ThreadId;

mod layer;
mod slot;

use slot::EventState;
pub(crate) use slot::StreamList;
pub(crate) use slot::{FastFree, Heads, Sizing, Slot};

use super::annotations::ChunkHeaps;
use super::free_list::FreeBlocks;
use super::live_set::{log_bad_free, BadFree, LiveMap};
use crate::device::{ensure_current, DeviceId};
use crate::driver;
use crate::error::{Error, Result};
use crate::mr::FreeBlockStats;
use crate::stream::CudaStreamView;

/// Where sub-allocated memory comes from.
pub(crate) trait Backing: Send + 'static {
    /// The free-list type.
    type List: FreeBlocks;
    /// The largest request (already rounded) the resource serves.
    fn max_allocation(&self) -> usize;
    /// The block size that serves a request of `bytes` (> 0); `None` when
    /// no block can (the size overflows or exceeds what the resource serves).
    fn block_size(&self, bytes: usize) -> Option<usize>;
    /// The addresses that start an upstream chunk (blocks never merge
    /// across one), as of now.
    fn heads(&self) -> Heads;
    /// How requests are rounded, when that is fixed at construction: the
    /// per-stream fast paths then serve them without the core's lock.
    /// `None` (the default): every request takes the core's lock.
    fn sizing(&self) -> Option<Sizing> {
        None
    }
    /// True when `[addr, addr + size)` lies inside memory the backing holds.
    fn contains(&self, addr: u64, size: usize) -> bool;
    /// The upstream chunk (start, size) that holds `addr`, for the NVTX
    /// heaps ([`crate::nvtx`]); `None` (the default): not annotated.
    fn chunk_of(&self, _addr: u64) -> Option<(u64, usize)> {
        None
    }
    /// Obtains memory for a `size`-byte request on `stream` and puts it into
    /// `list` (the requesting stream's list, which then holds every free
    /// block of the resource).
    fn grow(&mut self, size: usize, stream: CudaStreamView, list: &mut Self::List) -> Result<()>;
    /// A short name for messages.
    fn name(&self) -> &'static str;
    /// Returns all memory to where it came from (the resource is gone, or
    /// its construction failed); a second call does nothing.
    fn release(&mut self);
    /// The error (not logged) for a request of `bytes` (> 0) the resource
    /// refuses before looking for a block; `None` (the default): none.
    fn refuse(&self, _bytes: usize) -> Option<Error> {
        None
    }
    /// The free blocks in `lists` (every stream's), for
    /// [`MemoryResource::free_block_stats`](crate::mr::MemoryResource::free_block_stats);
    /// `None` (the default): not reported.
    fn free_block_stats<'a>(_lists: impl Iterator<Item = &'a Self::List>) -> Option<FreeBlockStats> {
        None
    }
    /// The memory the backing holds as (address, size) chunks, for
    /// snapshots; the default: none known.
    fn chunks(&self) -> Vec<(u64, usize)> {
        Vec::new()
    }
    /// The resource the backing takes its chunks from, for walking a stack;
    /// the default: none (the driver).
    fn upstream(&self) -> Option<&dyn crate::mr::MemoryResource> {
        None
    }
    /// The chunk a graph-private pool takes for a request of `bytes`
    /// ([`super::graph_memory`]); the default: 2 MiB for small requests,
    /// else the request rounded up to 2 MiB, or just the block when that
    /// exceeds what the resource serves.
    fn graph_chunk_bytes(&self, bytes: usize) -> Option<usize> {
        super::graph_memory::default_chunk_bytes(bytes)
            .filter(|&c| c <= self.max_allocation())
            .or_else(|| self.block_size(bytes))
    }
}

/// A stream's identity: the handle, plus the thread for the per-thread
/// default stream (a different stream on every thread); both default-stream
/// handles are one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct StreamKey {
    raw: usize,
    thread: Option<ThreadId>,
}

impl StreamKey {
    /// The raw stream handle (0 for the default stream).
    pub(crate) fn raw(&self) -> usize {
        self.raw
    }

    /// The key of a non-default stream with handle `raw`.
    #[cfg(test)]
    pub(crate) fn for_test(raw: usize) -> StreamKey {
        StreamKey { raw, thread: None }
    }

    #[inline]
    pub(crate) fn of(stream: CudaStreamView) -> StreamKey {
        if stream.is_per_thread_default() {
            StreamKey {
                raw: stream.as_raw(),
                thread: Some(std::thread::current().id()),
            }
        } else if stream.is_default() {
            StreamKey { raw: 0, thread: None }
        } else {
            StreamKey {
                raw: stream.as_raw(),
                thread: None,
            }
        }
    }
}

/// Lists a core keeps before making another one first drops the idle ones
/// (see `StreamOrdered::fold_unused_lists`).
const LISTS_BEFORE_PRUNING: usize = 64;

/// Per-stream free lists over a [`Backing`]; callers hold one mutex around
/// it, and each stream's list has a lock of its own (see [`Slot`]).
#[derive(Debug)]
pub(crate) struct StreamOrdered<B: Backing> {
    lists: Vec<Arc<Slot<B::List>>>,
    /// The list count at which the next new list first drops idle ones.
    prune_at: usize,
    /// The backing (upstream chunks, growth policy).
    pub backing: B,
    simulated: bool,
    /// The device whose memory the backing holds, checked on the slow paths.
    device: Option<DeviceId>,
    /// Blocks have moved between streams: new lists start eager.
    shared: bool,
    /// Frees are checked against the live allocations (the default).
    check_frees: bool,
    /// Frees refused so far (by the core; the shell counts its own).
    bad_frees: usize,
    /// The NVTX heaps, while a tool takes annotations.
    annotations: Option<ChunkHeaps>,
    /// Serving a graph-private pool's chunk while some stream may capture:
    /// lists that would need a device synchronisation are skipped (the
    /// backing grows instead).
    no_device_sync: bool,
}

impl<B: Backing> StreamOrdered<B> {
    /// A core without free blocks over memory of `device` (if bound to one).
    pub fn new(backing: B, simulated: bool, device: Option<DeviceId>) -> Self {
        StreamOrdered {
            lists: Vec::new(),
            prune_at: LISTS_BEFORE_PRUNING,
            backing,
            simulated,
            device,
            shared: false,
            check_frees: true,
            bad_frees: 0,
            annotations: ChunkHeaps::for_resource(simulated),
            no_device_sync: false,
        }
    }

    /// While `on`, allocations never synchronise the device: blocks of
    /// other streams' lists that would need it are left alone and the
    /// backing grows instead (a capture elsewhere may be under way, and a
    /// device synchronisation would wait for the capturing stream).
    pub fn set_no_device_sync(&mut self, on: bool) {
        self.no_device_sync = on;
    }

    /// True when taking list `l`'s blocks would synchronise the device
    /// while that is not allowed.
    fn needs_forbidden_sync(&self, l: &StreamList<B::List>) -> bool {
        self.no_device_sync && !self.simulated && l.state == EventState::Dirty
    }

    /// Turns the check of frees against the live allocations off (`false`)
    /// or on; only while no block is live.
    pub fn set_check_frees(&mut self, on: bool) {
        self.check_frees = on;
        for slot in &self.lists {
            slot.lock_settled().live = on.then(LiveMap::default);
        }
    }

    /// The sizing the per-stream fast paths may use: the backing's, while
    /// frees are checked and no tool takes annotations (both need the
    /// core); `None` otherwise.
    pub fn fast_sizing(&self) -> Option<Sizing> {
        self.backing
            .sizing()
            .filter(|_| self.check_frees && self.annotations.is_none())
    }

    /// Frees refused so far by the core (misuse, logged at error level).
    pub fn bad_frees(&self) -> usize {
        self.bad_frees
    }

    /// The slot of `stream`, made on first use.
    pub fn slot(&mut self, stream: CudaStreamView) -> Arc<Slot<B::List>> {
        let i = self.index_of(stream);
        self.lists[i].clone()
    }

    fn index_of(&mut self, stream: CudaStreamView) -> usize {
        let key = StreamKey::of(stream);
        if let Some(i) = self.lists.iter().position(|l| l.key == key) {
            return i;
        }
        let list = StreamList {
            // SAFETY: the handle is used with the driver only while the
            // caller passes this stream in (see the field's docs).
            stream: unsafe { CudaStreamView::from_raw(stream.as_raw()) },
            event: None,
            state: EventState::Clean,
            eager: self.shared,
            simulated: self.simulated,
            list: B::List::default(),
            live: self.check_frees.then(LiveMap::default),
            heads: self.backing.heads(),
            stash: None,
        };
        self.lists.push(Arc::new(Slot::new(key, list)));
        let i = self.lists.len() - 1;
        if self.lists.len() > self.prune_at {
            return self.fold_unused_lists(i, stream);
        }
        i
    }

    /// Folds the lists that no stream is using into list `i` (the
    /// caller's new list, for `stream`) and drops them; returns `i`'s index
    /// afterwards. Streams come and go (a soak creates thousands a second)
    /// and their handles are rarely reused: without this their lists pile
    /// up, and every slow path walks them all.
    ///
    /// A list is unused when no thread's cache of slots points at it (the
    /// caller holds the core, through which every cache entry is made) and
    /// it records no live allocation. Its free blocks move to `stream`'s
    /// list after `stream` waits on its event ([`Self::make_safe_for`]);
    /// lists that would need a device synchronisation for that keep their
    /// blocks, as do all lists while a capture may be under way. The next
    /// threshold is twice what is kept, so lists that stay cost one walk
    /// per doubling.
    fn fold_unused_lists(&mut self, i: usize, stream: CudaStreamView) -> usize {
        let own_slot = self.lists[i].clone();
        let unused = |slot: &Arc<Slot<B::List>>, l: &StreamList<B::List>| {
            Arc::strong_count(slot) == 1 && l.live.as_ref().is_none_or(|m| m.len() == 0)
        };
        if !self.no_device_sync {
            let mut own = own_slot.lock_settled();
            for j in 0..self.lists.len() {
                let other_slot = self.lists[j].clone();
                if j == i || Arc::strong_count(&other_slot) > 2 {
                    continue;
                }
                let mut other = other_slot.lock_settled();
                let waitable = self.simulated || other.state != EventState::Dirty;
                if other.list.is_empty() || other.live.as_ref().is_some_and(|m| m.len() > 0) || !waitable {
                    continue;
                }
                if self
                    .make_safe_for((i, &mut own), (j, &mut other), stream)
                    .is_err()
                {
                    continue;
                }
                let mut taken = std::mem::take(&mut other.list);
                let heads = own.heads.clone();
                own.list.absorb(&mut taken, |a| heads.contains(a));
                own.mark_used();
            }
        }
        self.lists.retain(|slot| {
            if Arc::ptr_eq(slot, &own_slot) {
                return true;
            }
            let mut l = slot.lock_settled();
            let drop_it = unused(slot, &l) && l.list.is_empty();
            if drop_it {
                l.destroy_event();
            }
            !drop_it
        });
        self.prune_at = (2 * self.lists.len()).max(LISTS_BEFORE_PRUNING);
        self.lists
            .iter()
            .position(|s| Arc::ptr_eq(s, &own_slot))
            .expect("the caller's list is kept")
    }

    /// Gives every list the backing's chunk heads as they are now; `own`
    /// is the list the caller holds locked (slot `i`).
    fn refresh_heads(&self, i: usize, own: &mut StreamList<B::List>) {
        let heads = self.backing.heads();
        for (j, slot) in self.lists.iter().enumerate() {
            if j != i {
                slot.lock_settled().heads = heads.clone();
            }
        }
        own.heads = heads;
    }

    /// Adds free memory that no stream has used (the initial chunk).
    pub fn add_fresh(&mut self, addr: u64, size: usize, stream: CudaStreamView) {
        let i = self.index_of(stream);
        let slot = self.lists[i].clone();
        let mut own = slot.lock_settled();
        self.refresh_heads(i, &mut own);
        if !own.put(addr, size) {
            log::error!(
                "{}: fresh block {addr:#x}+{size} overlaps a free block",
                self.backing.name()
            );
        }
    }

    /// The out-of-memory error (logged) for a request of `requested` bytes
    /// beyond what the backing serves.
    fn exceeds_maximum(&self, requested: usize) -> Error {
        let e = Error::OutOfMemory {
            requested,
            reason: format!(
                "{}: maximum allocation size exceeded ({} bytes)",
                self.backing.name(),
                self.backing.max_allocation()
            ),
            report: None,
        };
        log::error!("{e}");
        e
    }

    /// Allocates `size` bytes (a multiple of 256) in `stream` order for a
    /// request of `bytes`, recorded as live on `stream`'s list.
    fn allocate(&mut self, size: usize, bytes: usize, stream: CudaStreamView) -> Result<u64> {
        if size > self.backing.max_allocation() {
            return Err(self.exceeds_maximum(size));
        }
        let i = self.index_of(stream);
        let slot = self.lists[i].clone();
        let mut own = slot.lock_settled();
        if let Some(a) = own.take_request(size, bytes) {
            return Ok(a);
        }
        // The slow paths wait on events, synchronise the device or grow from
        // the upstream: all wrong under another current device, and costly
        // enough that one more driver call to detect it does not show. The
        // fast path above is not checked (it would double its cost).
        if let Some(device) = self.device {
            ensure_current(self.backing.name(), device)?;
        }
        // Another stream's block, without merging lists. The wait and the
        // take happen under that list's lock: no free on its stream can
        // slip in between.
        for j in 0..self.lists.len() {
            if j == i {
                continue;
            }
            let other_slot = self.lists[j].clone();
            let mut other = other_slot.lock_settled();
            if other.list.fits(size) && !self.needs_forbidden_sync(&other) {
                self.make_safe_for((i, &mut own), (j, &mut other), stream)?;
                if let Some(a) = other.list.take(size) {
                    drop(other);
                    own.record_live(a, bytes);
                    return Ok(a);
                }
            }
        }
        // Merge whole lists into this stream's, retrying after each.
        for j in 0..self.lists.len() {
            if j == i {
                continue;
            }
            let other_slot = self.lists[j].clone();
            let mut other = other_slot.lock_settled();
            if other.list.is_empty() || self.needs_forbidden_sync(&other) {
                continue;
            }
            self.make_safe_for((i, &mut own), (j, &mut other), stream)?;
            let mut taken = std::mem::take(&mut other.list);
            drop(other);
            let heads = own.heads.clone();
            own.list.absorb(&mut taken, |a| heads.contains(a));
            own.mark_used();
            if let Some(a) = own.take_request(size, bytes) {
                return Ok(a);
            }
        }
        self.backing.grow(size, stream, &mut own.list)?;
        self.refresh_heads(i, &mut own);
        own.mark_used();
        own.take_request(size, bytes).ok_or_else(|| Error::OutOfMemory {
            requested: size,
            reason: format!("{}: grown memory does not hold the request", self.backing.name()),
            report: None,
        })
    }

    /// Allocates a request of `bytes` (> 0): a block of
    /// [`Backing::block_size`] bytes, recorded as live with `bytes`.
    pub fn allocate_request(&mut self, bytes: usize, stream: CudaStreamView) -> Result<u64> {
        let size = self
            .backing
            .block_size(bytes)
            .ok_or_else(|| self.exceeds_maximum(bytes))?;
        let addr = self.allocate(size, bytes, stream)?;
        if let Some(a) = &mut self.annotations {
            a.allocated(self.backing.chunk_of(addr), addr, bytes);
        }
        Ok(addr)
    }

    /// Removes the live record of `addr` from whichever stream's list holds
    /// it, if it was requested with `bytes`.
    fn remove_live(&self, addr: u64, bytes: usize) -> std::result::Result<(), BadFree> {
        for slot in &self.lists {
            if let Some(live) = &mut slot.lock_settled().live {
                match live.remove(addr, bytes) {
                    Err(BadFree::NotLive) => continue,
                    r => return r,
                }
            }
        }
        Err(BadFree::NotLive)
    }

    /// Frees a request of `bytes` made through
    /// [`allocate_request`](Self::allocate_request). A free that names no
    /// live allocation or a wrong size is logged and ignored.
    pub fn deallocate_request(&mut self, addr: u64, bytes: usize, stream: CudaStreamView) {
        if self.check_frees {
            if let Err(bad) = self.remove_live(addr, bytes) {
                self.bad_frees += 1;
                log_bad_free(self.backing.name(), addr, bytes, bad);
                return;
            }
        }
        match self.backing.block_size(bytes) {
            Some(size) => self.deallocate(addr, size, stream),
            None => {
                self.bad_frees += 1;
                log::error!(
                    "{}: free of {addr:#x} with impossible size {bytes}; ignored",
                    self.backing.name()
                );
            }
        }
    }

    /// Returns a block freed on `stream`; frees outside the backing or
    /// overlapping a free block's edge are logged and ignored (the only
    /// checks left when the live record is off).
    fn deallocate(&mut self, addr: u64, size: usize, stream: CudaStreamView) {
        if !self.check_frees && !self.backing.contains(addr, size) {
            self.bad_frees += 1;
            log::error!(
                "{}: free of {addr:#x} ({size} bytes), which it did not allocate; ignored",
                self.backing.name()
            );
            return;
        }
        let i = self.index_of(stream);
        let mut own = self.lists[i].lock_settled();
        if !own.put(addr, size) {
            drop(own);
            self.bad_frees += 1;
            log::error!(
                "{}: free of {addr:#x} ({size} bytes) overlaps free memory (double free?); ignored",
                self.backing.name()
            );
            return;
        }
        own.mark_used();
        drop(own);
        if let Some(a) = &self.annotations {
            a.freed(addr);
        }
    }

    /// Every stream's list, locked, in creation order.
    fn locked(&self) -> Vec<super::spin_lock::SpinGuard<'_, StreamList<B::List>>> {
        self.lists.iter().map(|s| s.lock_settled()).collect()
    }

    /// Total free bytes over all streams.
    pub fn free_bytes(&self) -> usize {
        self.lists
            .iter()
            .map(|s| s.lock_settled().list.free_bytes())
            .sum()
    }

    /// The backing's report on every stream's free blocks.
    pub fn free_block_stats(&self) -> Option<crate::mr::FreeBlockStats> {
        let lists = self.locked();
        B::free_block_stats(lists.iter().map(|l| &l.list))
    }

    /// Calls `f` on every stream's list.
    pub fn for_each_list(&mut self, mut f: impl FnMut(&mut B::List, &B)) {
        for slot in &self.lists {
            f(&mut slot.lock_settled().list, &self.backing);
        }
    }

    /// Orders `stream` after every use of list `j`'s blocks (`other`, held
    /// locked by the caller, as is `own`, the caller's list `i`).
    fn make_safe_for(
        &mut self,
        (i, own): (usize, &mut StreamList<B::List>),
        (j, other): (usize, &mut StreamList<B::List>),
        stream: CudaStreamView,
    ) -> Result<()> {
        if self.simulated {
            return Ok(());
        }
        match (other.state, other.event) {
            // SAFETY: the event lives until teardown; `stream` is a live view.
            (EventState::Recorded, Some(event)) => unsafe {
                driver::stream_wait_event(stream.handle(), event)
            },
            // A list is marked recorded only after its event was.
            (EventState::Clean | EventState::Recorded, _) => Ok(()),
            (EventState::Dirty, _) => {
                // Every list stays locked across the synchronisation: a
                // free on another stream meanwhile (its block's last use
                // possibly queued after the synchronisation began) would
                // otherwise be marked clean below.
                let slots: Vec<_> = (0..self.lists.len())
                    .filter(|&k| k != i && k != j)
                    .map(|k| self.lists[k].clone())
                    .collect();
                let mut rest: Vec<_> = slots.iter().map(|s| s.lock_settled()).collect();
                // A device synchronisation fails captures under way.
                crate::graph::wait_for_other_captures();
                driver::device_synchronize()?;
                // Every use of every list is complete: all start afresh, eager.
                self.shared = true;
                let fresh = |l: &mut StreamList<B::List>| {
                    l.state = EventState::Clean;
                    l.eager = true;
                };
                fresh(other);
                fresh(own);
                for l in &mut rest {
                    fresh(l);
                }
                Ok(())
            }
        }
    }

    /// After initial memory was taken on the default stream: waits for it
    /// (not when simulated); when that fails, releases the backing.
    ///
    /// # Errors
    /// The driver's error from synchronising.
    pub fn settle_initial(&mut self) -> Result<()> {
        if !self.simulated {
            if let Err(e) = CudaStreamView::DEFAULT.synchronize() {
                self.backing.release();
                return Err(e);
            }
        }
        Ok(())
    }

    /// The resource's end: with its device current, waits for every use of
    /// its memory (one device synchronisation, none when simulated), then
    /// destroys the events and releases the backing. Called from `Drop`, so
    /// failures are logged.
    pub fn teardown(&mut self) {
        let _device =
            super::quiesce_device(self.backing.name(), "before release", self.device, self.simulated);
        for slot in &self.lists {
            slot.lock_settled().destroy_event();
        }
        if let Some(a) = &mut self.annotations {
            a.release();
        }
        self.backing.release();
    }
}
