//! The NVTX annotations of a sub-allocator whose memory comes in upstream
//! chunks (pool, fixed-size): each chunk is claimed ([`Chunk`]: a heap of
//! its own, or adopted inside an outer sub-allocator's heap) when its first
//! allocation is handed out, and every live allocation is a region of its
//! requested size. See [`crate::nvtx`].

use std::collections::btree_map::{BTreeMap, Entry};

use crate::nvtx::{self, Chunk};

/// The claimed chunks by start (`None`: a chunk that could not be claimed,
/// such as one straddling the end of another sub-allocator's heap);
/// present only while a tool takes annotations (decided when the resource
/// is made).
#[derive(Debug, Default)]
pub(crate) struct ChunkHeaps {
    heaps: BTreeMap<u64, Option<Chunk>>,
}

impl ChunkHeaps {
    /// The heaps of a resource over memory that is `simulated` (or not):
    /// `None` when it does not annotate.
    pub fn for_resource(simulated: bool) -> Option<ChunkHeaps> {
        nvtx::annotates(simulated).then(ChunkHeaps::default)
    }

    /// Registers an allocation of `bytes` at `addr` inside `chunk` (start,
    /// size), claiming the chunk first if this is its first use.
    pub fn allocated(&mut self, chunk: Option<(u64, usize)>, addr: u64, bytes: usize) {
        let Some((start, size)) = chunk else { return };
        let heap = match self.heaps.entry(start) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(Chunk::claim(start, size)),
        };
        if let Some(heap) = heap {
            heap.register_region(addr, bytes);
        }
    }

    /// Unregisters the allocation at `addr` (freed), if it was registered.
    pub fn freed(&self, addr: u64) {
        if !self.heaps.is_empty() {
            nvtx::unregister_region(addr);
        }
    }

    /// Gives every chunk back to the tool (its heap unregistered, or the
    /// outer region restored): the chunks go back upstream.
    pub fn release(&mut self) {
        self.heaps.clear();
    }
}
