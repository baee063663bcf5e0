//! One stream's share of a [`StreamOrdered`](super::StreamOrdered) core:
//! its free list, the live allocations made on it, its event, each stream
//! under a mutex of its own (a [`Slot`]).
//!
//! The fast paths run under the slot's lock alone: an allocation served
//! from the stream's own list, a free of a block allocated on the same
//! stream. Threads that work on different streams then share no lock and
//! no written cache line. Everything else (another stream's blocks,
//! growth, a free on another stream than the allocation's) takes the
//! core's lock first and then the slots' locks it needs.
//!
//! Lock order: core, then slots. A fast path holds one slot lock and takes
//! no other lock of the resource; only the core's holder takes two slot
//! locks at once.

use std::sync::Arc;

use super::StreamKey;
use crate::driver::{self, EventHandle};
use crate::error::Result;
use crate::mr::detail::free_list::FreeBlocks;
use crate::mr::detail::live_set::{BadFree, LiveMap};
use crate::mr::detail::spin_lock::{SpinGuard, SpinLock};
use crate::stream::CudaStreamView;

/// Which addresses start an upstream chunk (free blocks never merge across
/// one), as the lists see them without asking the backing: a copy taken
/// when the backing's chunks change.
#[derive(Debug, Clone)]
pub(crate) enum Heads {
    /// Every address: blocks never merge (fixed-size blocks).
    Everywhere,
    /// No address: one contiguous range (the virtual pool).
    Nowhere,
    /// These addresses, sorted (a pool holds few chunks: a binary search
    /// beats a hash).
    At(Arc<[u64]>),
}

impl Heads {
    /// The heads at `addrs`.
    pub fn at(addrs: impl Iterator<Item = u64>) -> Heads {
        let mut v: Vec<u64> = addrs.collect();
        v.sort_unstable();
        Heads::At(v.into())
    }

    /// True when `addr` starts a chunk.
    #[inline]
    pub fn contains(&self, addr: u64) -> bool {
        match self {
            Heads::Everywhere => true,
            Heads::Nowhere => false,
            Heads::At(sorted) => sorted.binary_search(&addr).is_ok(),
        }
    }
}

/// How a backing rounds requests, known without its lock: what lets the
/// fast paths serve a request without the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sizing {
    /// Rounded up to 256 bytes; requests whose block exceeds `max` are not
    /// served on the fast path.
    Rounded { max: usize },
    /// One block size; larger requests are not served on the fast path.
    Fixed(usize),
}

impl Sizing {
    /// The block for a request of `bytes`, when the fast path may serve it.
    #[inline]
    pub fn block_size(self, bytes: usize) -> Option<usize> {
        match self {
            Sizing::Rounded { max } => {
                crate::align::align_up(bytes, crate::align::CUDA_ALLOCATION_ALIGNMENT).filter(|&n| n <= max)
            }
            Sizing::Fixed(block) => (bytes <= block).then_some(block),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventState {
    /// No block of the list was used on the stream since the last device
    /// synchronisation (or ever): nothing to wait for.
    Clean,
    /// The event covers every use so far.
    Recorded,
    /// Blocks were used without a recorded event (a lazy list, or a failed
    /// record): whoever takes a block synchronises the device first.
    Dirty,
}

/// A stream's state, under its slot's lock.
#[derive(Debug)]
pub(crate) struct StreamList<L> {
    /// The raw handle, used (to record the event) only while the caller is
    /// passing this very stream in (`mark_used` of the caller's own list).
    pub stream: CudaStreamView<'static>,
    /// Made at the first record, destroyed at teardown.
    pub event: Option<EventHandle>,
    pub state: EventState,
    /// Record the event on every use (after another stream once took blocks).
    pub eager: bool,
    /// No GPU behind the memory: no event is ever made.
    pub simulated: bool,
    pub list: L,
    /// The live allocations made on this stream, when frees are checked.
    pub live: Option<LiveMap>,
    /// The chunk heads, as of the backing's last growth.
    pub heads: Heads,
    /// The block (address, size) freed last on the fast path, kept out of
    /// `list` (unmerged) for the next allocation of its size on this
    /// stream: a hot pair then touches neither the list nor the live
    /// record's hash table. Free like the list's blocks; whoever takes the
    /// slot through [`Slot::lock_settled`] finds it merged into `list`.
    pub stash: Option<(u64, usize)>,
}

/// What a free on the fast path came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FastFree {
    /// The block is back in the list.
    Done,
    /// Refused: the pointer is live on this stream with another size.
    Refused(BadFree),
    /// This block or the one it displaced from the stash (address, size)
    /// overlaps a free one and was dropped: an internal error, as only
    /// frees the live record vouches for come here.
    Overlaps(u64, usize),
    /// Not allocated on this stream: the core must look further.
    Elsewhere,
}

impl<L: FreeBlocks> StreamList<L> {
    /// Takes a `size`-byte block for a request of `bytes` from this
    /// stream's own list and records it as live; `None` when none fits.
    #[inline]
    pub fn take_request(&mut self, size: usize, bytes: usize) -> Option<u64> {
        if let Some((addr, n)) = self.stash {
            if n == size {
                self.stash = None;
                if let Some(live) = &mut self.live {
                    // A stashed block's record was removed by its free.
                    live.insert_unique(addr, bytes);
                }
                return Some(addr);
            }
            // Another size: the list's best fit, with the stash in it.
            self.settle();
        }
        let addr = self.list.take(size)?;
        self.record_live(addr, bytes);
        Some(addr)
    }

    /// Records `addr` as live with `bytes` on this stream.
    pub fn record_live(&mut self, addr: u64, bytes: usize) {
        if let Some(live) = &mut self.live {
            if !live.insert(addr, bytes) {
                log::error!("handed out {addr:#x} ({bytes} bytes) while it is live (internal error)");
            }
        }
    }

    /// Frees a request of `bytes` (a `size`-byte block) allocated on this
    /// stream, in this stream's order; into the stash when `stash` (an
    /// exact fit is a best fit), else into the list (which keeps a
    /// fixed-size list first in, first out).
    #[inline]
    pub fn free_request(&mut self, addr: u64, bytes: usize, size: usize, stash: bool) -> FastFree {
        let Some(live) = &mut self.live else {
            return FastFree::Elsewhere;
        };
        match live.remove(addr, bytes) {
            Ok(()) => {}
            Err(BadFree::NotLive) => return FastFree::Elsewhere,
            Err(bad) => return FastFree::Refused(bad),
        }
        if !stash {
            if !self.put(addr, size) {
                return FastFree::Overlaps(addr, size);
            }
            self.mark_used();
            return FastFree::Done;
        }
        let displaced = self.stash.replace((addr, size));
        self.mark_used();
        match displaced {
            Some((a, n)) if !self.put(a, n) => FastFree::Overlaps(a, n),
            _ => FastFree::Done,
        }
    }

    /// Puts the stashed block, if any, into the list.
    fn settle(&mut self) {
        if let Some((a, n)) = self.stash.take() {
            if !self.put(a, n) {
                log::error!("stashed free block {a:#x}+{n} overlaps a free block (internal error); dropped");
            }
        }
    }

    /// Adds a free block; false when it overlaps a free one.
    pub fn put(&mut self, addr: u64, size: usize) -> bool {
        let heads = &self.heads;
        self.list.put(addr, size, |a| heads.contains(a))
    }

    /// Notes that the list's blocks were used in its stream's order (a
    /// free, a merge after waiting, new upstream memory): an eager list
    /// records its event now, a lazy one becomes dirty.
    #[inline]
    pub fn mark_used(&mut self) {
        if self.simulated {
            return;
        }
        if !self.eager {
            self.state = EventState::Dirty;
            return;
        }
        self.state = match self.record() {
            Ok(()) => EventState::Recorded,
            Err(e) => {
                log::warn!(
                    "event record on {:?} failed ({e}); takers of its blocks will synchronise the device",
                    self.stream
                );
                EventState::Dirty
            }
        };
    }

    fn record(&mut self) -> Result<()> {
        let event = match self.event {
            Some(event) => event,
            None => *self.event.insert(driver::event_create(false)?),
        };
        // SAFETY: the event lives until teardown; the list's stream is the
        // one the caller passes in right now (see the field's docs), so it
        // is live.
        unsafe { driver::event_record(event, self.stream.handle()) }
    }

    /// Destroys the event (at teardown).
    pub fn destroy_event(&mut self) {
        if let Some(event) = self.event.take() {
            // SAFETY: the event was created by `record` and is used by no one else.
            if let Err(e) = unsafe { driver::event_destroy(event) } {
                log::error!("cuEventDestroy failed: {e}");
            }
        }
    }
}

/// A stream's list under its own lock, on cache lines of its own.
#[derive(Debug)]
#[repr(align(128))]
pub(crate) struct Slot<L> {
    pub key: StreamKey,
    state: SpinLock<StreamList<L>>,
}

impl<L> Slot<L> {
    pub fn new(key: StreamKey, list: StreamList<L>) -> Self {
        Slot {
            key,
            state: SpinLock::new(list),
        }
    }

    /// An empty, simulated slot of stream `key`.
    #[cfg(test)]
    pub fn for_test(key: StreamKey) -> Self
    where
        L: Default,
    {
        // SAFETY: a simulated list never uses its stream with the driver.
        let stream = unsafe { CudaStreamView::from_raw(key.raw()) };
        Slot::new(
            key,
            StreamList {
                stream,
                event: None,
                state: EventState::Clean,
                eager: false,
                simulated: true,
                list: L::default(),
                live: None,
                heads: Heads::Nowhere,
                stash: None,
            },
        )
    }

    /// The stream's state, locked, for the fast paths.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, StreamList<L>> {
        self.state.lock()
    }

    /// The stream's state, locked, with the stashed block merged into the
    /// list: what every path but the fast ones works on.
    pub fn lock_settled(&self) -> SpinGuard<'_, StreamList<L>>
    where
        L: FreeBlocks,
    {
        let mut l = self.lock();
        l.settle();
        l
    }
}
