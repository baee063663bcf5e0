//! Each thread's cache of the stream slots it used last (resource, stream
//! → [`Slot`]), so that the per-stream fast paths of the stream-ordered
//! resources find their stream's list without the resource's lock.
//!
//! A resource is known by an id no other resource in the process gets
//! ([`next_resource_id`]), so an entry of a dropped resource is never
//! found again; it only keeps its slot's memory until [`CACHED`] newer
//! entries push it out.
#![deny(unsafe_code)]

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::stream_ordered::{Slot, StreamKey};

/// Entries each thread keeps (the most recently added ones).
const CACHED: usize = 8;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh resource id.
pub(crate) fn next_resource_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A cached slot: the resource id and stream it belongs to, the slot (kept
/// alive here), its concrete type and its address, so that a hit casts the
/// pointer without the `dyn Any` call of a downcast or the `Arc`'s offset
/// arithmetic.
struct Entry {
    id: u64,
    key: StreamKey,
    type_id: TypeId,
    /// `Arc::as_ptr(&slot)`, taken once.
    ptr: *const (),
    /// Keeps the slot alive while the entry exists (read through `ptr`).
    _slot: Arc<dyn Any + Send + Sync>,
}

impl Entry {
    /// The slot as a `Slot<L>`, when that is its type.
    #[inline]
    fn get<L: Send + 'static>(&self) -> Option<&Slot<L>> {
        if self.type_id != TypeId::of::<Slot<L>>() {
            return None;
        }
        // SAFETY: `type_id` and `ptr` were taken from the slot's concrete
        // type and its `Arc` when the entry was made (`insert`, the only
        // constructor), and `type_id` equals `Slot<L>`'s, so `ptr` points to
        // a live `Slot<L>` (the entry owns a reference in `_slot`), borrowed
        // no longer than `self`.
        #[allow(unsafe_code)]
        Some(unsafe { &*self.ptr.cast::<Slot<L>>() })
    }
}

thread_local! {
    static SLOTS: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on the slot of stream `key` of resource `id`, found in this
/// thread's cache or else by `lookup` (which takes the resource's lock)
/// and cached. `None` when the cache cannot be used: the thread is
/// exiting, or `f` of an outer call is running on this thread.
#[inline]
pub(crate) fn with_slot<L: Send + 'static, R>(
    id: u64,
    key: StreamKey,
    lookup: impl FnOnce() -> Arc<Slot<L>>,
    f: impl FnOnce(&Slot<L>) -> R,
) -> Option<R> {
    SLOTS
        .try_with(|cell| {
            let mut slots = cell.try_borrow_mut().ok()?;
            let pos = match slots.iter().position(|e| e.id == id && e.key == key) {
                Some(pos) => pos,
                None => insert(&mut slots, id, key, lookup()),
            };
            slots[pos].get::<L>().map(f)
        })
        .ok()
        .flatten()
}

/// Caches `slot` as the newest entry (pushing out the oldest when full);
/// its position.
#[cold]
fn insert<L: Send + 'static>(slots: &mut Vec<Entry>, id: u64, key: StreamKey, slot: Arc<Slot<L>>) -> usize {
    if slots.len() == CACHED {
        slots.remove(0);
    }
    slots.push(Entry {
        id,
        key,
        type_id: TypeId::of::<Slot<L>>(),
        ptr: Arc::as_ptr(&slot).cast(),
        _slot: slot,
    });
    slots.len() - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(raw: usize) -> StreamKey {
        StreamKey::for_test(raw)
    }

    /// A cached slot is found again without a lookup; a ninth entry pushes
    /// out the oldest, which is then looked up again.
    #[test]
    fn caches_the_most_recent_slots() {
        let id = next_resource_id();
        let looked_up = std::cell::Cell::new(0);
        let slot = |raw: usize| {
            with_slot::<(), usize>(
                id,
                key(raw),
                || {
                    looked_up.set(looked_up.get() + 1);
                    Arc::new(Slot::for_test(key(raw)))
                },
                |s| s.key.raw(),
            )
        };
        assert_eq!(slot(7), Some(7));
        assert_eq!(slot(7), Some(7));
        assert_eq!(looked_up.get(), 1);
        for raw in 100..100 + CACHED {
            assert_eq!(slot(raw), Some(raw));
        }
        assert_eq!(looked_up.get(), 1 + CACHED);
        assert_eq!(slot(7), Some(7));
        assert_eq!(looked_up.get(), 2 + CACHED);
    }
}
