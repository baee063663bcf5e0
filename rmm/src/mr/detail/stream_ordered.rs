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

use std::thread::ThreadId;

use super::annotations::ChunkHeaps;
use super::free_list::FreeBlocks;
use super::live_set::{log_bad_free, LiveMap};
use crate::device::{ensure_current, DeviceId};
use crate::driver::{self, EventHandle};
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
    /// True when `addr` starts an upstream chunk (blocks never merge across it).
    fn is_head(&self, addr: u64) -> bool;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventState {
    /// No block of the list was used on the stream since the last device
    /// synchronisation (or ever): nothing to wait for.
    Clean,
    /// The event covers every use so far.
    Recorded,
    /// Blocks were used without a recorded event (a lazy list, or a failed
    /// record): whoever takes a block synchronises the device first.
    Dirty,
}

#[derive(Debug)]
struct StreamList<L> {
    key: StreamKey,
    /// The raw handle, used (to record the event) only while the caller is
    /// passing this very stream in (`mark_used` of the caller's own list).
    stream: CudaStreamView<'static>,
    /// Made at the first record, destroyed at teardown.
    event: Option<EventHandle>,
    state: EventState,
    /// Record the event on every use (after another stream once took blocks).
    eager: bool,
    list: L,
}

/// Per-stream free lists over a [`Backing`]; callers hold one mutex around it.
#[derive(Debug)]
pub(crate) struct StreamOrdered<B: Backing> {
    lists: Vec<StreamList<B::List>>,
    /// The backing (upstream chunks, growth policy).
    pub backing: B,
    simulated: bool,
    /// The device whose memory the backing holds, checked on the slow paths.
    device: Option<DeviceId>,
    /// Blocks have moved between streams: new lists start eager.
    shared: bool,
    /// The live allocations, when frees are checked (the default).
    live: Option<LiveMap>,
    /// Frees refused so far.
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
            backing,
            simulated,
            device,
            shared: false,
            live: Some(LiveMap::default()),
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

    /// True when taking list `i`'s blocks would synchronise the device
    /// while that is not allowed.
    fn needs_forbidden_sync(&self, i: usize) -> bool {
        self.no_device_sync && !self.simulated && self.lists[i].state == EventState::Dirty
    }

    /// Turns the check of frees against the live allocations off (`false`)
    /// or on; only while no block is live.
    pub fn set_check_frees(&mut self, on: bool) {
        self.live = on.then(LiveMap::default);
    }

    /// Frees refused so far (misuse, logged at error level).
    pub fn bad_frees(&self) -> usize {
        self.bad_frees
    }

    fn index_of(&mut self, stream: CudaStreamView) -> usize {
        let key = StreamKey::of(stream);
        if let Some(i) = self.lists.iter().position(|l| l.key == key) {
            return i;
        }
        self.lists.push(StreamList {
            key,
            // SAFETY: the handle is used with the driver only while the
            // caller passes this stream in (see the field's docs).
            stream: unsafe { CudaStreamView::from_raw(stream.as_raw()) },
            event: None,
            state: EventState::Clean,
            eager: self.shared,
            list: B::List::default(),
        });
        self.lists.len() - 1
    }

    /// Adds free memory that no stream has used (the initial chunk).
    pub fn add_fresh(&mut self, addr: u64, size: usize, stream: CudaStreamView) {
        let i = self.index_of(stream);
        let backing = &self.backing;
        if !self.lists[i].list.put(addr, size, |a| backing.is_head(a)) {
            log::error!(
                "{}: fresh block {addr:#x}+{size} overlaps a free block",
                backing.name()
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
        };
        log::error!("{e}");
        e
    }

    /// Allocates `size` bytes (a multiple of 256) in `stream` order.
    fn allocate(&mut self, size: usize, stream: CudaStreamView) -> Result<u64> {
        if size > self.backing.max_allocation() {
            return Err(self.exceeds_maximum(size));
        }
        let own = self.index_of(stream);
        if let Some(a) = self.lists[own].list.take(size) {
            return Ok(a);
        }
        // The slow paths wait on events, synchronise the device or grow from
        // the upstream: all wrong under another current device, and costly
        // enough that one more driver call to detect it does not show. The
        // fast path above is not checked (it would double its cost).
        if let Some(device) = self.device {
            ensure_current(self.backing.name(), device)?;
        }
        // Another stream's block, without merging lists.
        for i in 0..self.lists.len() {
            if i != own && self.lists[i].list.fits(size) && !self.needs_forbidden_sync(i) {
                self.make_safe_for(i, stream)?;
                if let Some(a) = self.lists[i].list.take(size) {
                    return Ok(a);
                }
            }
        }
        // Merge whole lists into this stream's, retrying after each.
        for i in 0..self.lists.len() {
            if i == own || self.lists[i].list.is_empty() || self.needs_forbidden_sync(i) {
                continue;
            }
            self.make_safe_for(i, stream)?;
            let mut other = std::mem::take(&mut self.lists[i].list);
            let backing = &self.backing;
            self.lists[own].list.absorb(&mut other, |a| backing.is_head(a));
            self.mark_used(own);
            if let Some(a) = self.lists[own].list.take(size) {
                return Ok(a);
            }
        }
        self.backing.grow(size, stream, &mut self.lists[own].list)?;
        self.mark_used(own);
        self.lists[own].list.take(size).ok_or_else(|| Error::OutOfMemory {
            requested: size,
            reason: format!("{}: grown memory does not hold the request", self.backing.name()),
        })
    }

    /// Allocates a request of `bytes` (> 0): a block of
    /// [`Backing::block_size`] bytes, recorded as live with `bytes`.
    pub fn allocate_request(&mut self, bytes: usize, stream: CudaStreamView) -> Result<u64> {
        let size = self
            .backing
            .block_size(bytes)
            .ok_or_else(|| self.exceeds_maximum(bytes))?;
        let addr = self.allocate(size, stream)?;
        if let Some(live) = &mut self.live {
            if !live.insert(addr, bytes) {
                log::error!(
                    "{}: handed out {addr:#x} ({bytes} bytes) while it is live (internal error)",
                    self.backing.name()
                );
            }
        }
        if let Some(a) = &mut self.annotations {
            a.allocated(self.backing.chunk_of(addr), addr, bytes);
        }
        Ok(addr)
    }

    /// Frees a request of `bytes` made through
    /// [`allocate_request`](Self::allocate_request). A free that names no
    /// live allocation or a wrong size is logged and ignored.
    pub fn deallocate_request(&mut self, addr: u64, bytes: usize, stream: CudaStreamView) {
        if let Some(live) = &mut self.live {
            if let Err(bad) = live.remove(addr, bytes) {
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
        if self.live.is_none() && !self.backing.contains(addr, size) {
            self.bad_frees += 1;
            log::error!(
                "{}: free of {addr:#x} ({size} bytes), which it did not allocate; ignored",
                self.backing.name()
            );
            return;
        }
        let i = self.index_of(stream);
        let backing = &self.backing;
        if !self.lists[i].list.put(addr, size, |a| backing.is_head(a)) {
            self.bad_frees += 1;
            log::error!(
                "{}: free of {addr:#x} ({size} bytes) overlaps free memory (double free?); ignored",
                backing.name()
            );
            return;
        }
        if let Some(a) = &self.annotations {
            a.freed(addr);
        }
        self.mark_used(i);
    }

    /// Total free bytes over all streams.
    pub fn free_bytes(&self) -> usize {
        self.lists.iter().map(|l| l.list.free_bytes()).sum()
    }

    /// Every stream's list, for statistics.
    pub fn lists(&self) -> impl Iterator<Item = &B::List> {
        self.lists.iter().map(|l| &l.list)
    }

    /// Calls `f` on every stream's list.
    pub fn for_each_list(&mut self, mut f: impl FnMut(&mut B::List, &B)) {
        for l in &mut self.lists {
            f(&mut l.list, &self.backing);
        }
    }

    /// Notes that list `i`'s blocks were used in its stream's order (a
    /// free, a merge after waiting, new upstream memory): an eager list
    /// records its event now, a lazy one becomes dirty.
    fn mark_used(&mut self, i: usize) {
        if self.simulated {
            return;
        }
        let l = &mut self.lists[i];
        if !l.eager {
            l.state = EventState::Dirty;
            return;
        }
        l.state = match record(l) {
            Ok(()) => EventState::Recorded,
            Err(e) => {
                log::warn!(
                    "event record on {:?} failed ({e}); takers of its blocks will synchronise the device",
                    l.stream
                );
                EventState::Dirty
            }
        };
    }

    /// Orders `stream` after every use of list `i`'s blocks.
    fn make_safe_for(&mut self, i: usize, stream: CudaStreamView) -> Result<()> {
        if self.simulated {
            return Ok(());
        }
        let l = &mut self.lists[i];
        match (l.state, l.event) {
            // SAFETY: the event lives until teardown; `stream` is a live view.
            (EventState::Recorded, Some(event)) => unsafe {
                driver::stream_wait_event(stream.handle(), event)
            },
            // A list is marked recorded only after its event was.
            (EventState::Clean | EventState::Recorded, _) => Ok(()),
            (EventState::Dirty, _) => {
                driver::device_synchronize()?;
                // Every use of every list is complete: all start afresh, eager.
                self.shared = true;
                for l in &mut self.lists {
                    l.state = EventState::Clean;
                    l.eager = true;
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
        self.destroy_events();
        if let Some(a) = &mut self.annotations {
            a.release();
        }
        self.backing.release();
    }

    /// Destroys the events (the lists' memory is the backing's to return).
    fn destroy_events(&mut self) {
        for l in &mut self.lists {
            if let Some(event) = l.event.take() {
                // SAFETY: the event was created by `record` and is used by no one else.
                if let Err(e) = unsafe { driver::event_destroy(event) } {
                    log::error!("cuEventDestroy failed: {e}");
                }
            }
        }
    }
}

fn record<L>(l: &mut StreamList<L>) -> Result<()> {
    let event = match l.event {
        Some(event) => event,
        None => *l.event.insert(driver::event_create(false)?),
    };
    // SAFETY: the event lives until teardown; the list's stream is the one
    // the caller passes in right now (see the field's docs), so it is live.
    unsafe { driver::event_record(event, l.stream.handle()) }
}
