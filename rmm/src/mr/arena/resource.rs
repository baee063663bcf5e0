//! [`ArenaMemoryResource`]'s `MemoryResource` and graph-memory faces:
//! allocation, free, forensics and the chunk source of its private pools.

use super::*;

impl<U: MemoryResource> MemoryResource for ArenaMemoryResource<U> {
    fn layer_state(&self) -> LayerState {
        let mut l = LayerState::new("arena", "ArenaMemoryResource");
        let (global_free, global_largest) = self.global_free();
        let (mut free, mut largest) = (global_free, global_largest);
        let mut by_stream = std::collections::BTreeMap::new();
        let keyed: Vec<(usize, Arc<Arena>)> = {
            let arenas = self.inner.arenas.read().unwrap_or_else(|e| e.into_inner());
            arenas.by_key.iter().map(|(k, a)| (k.raw(), a.clone())).collect()
        };
        for (raw, a) in keyed {
            let book = a.book.lock();
            *by_stream.entry(raw).or_insert(0usize) += book.free_bytes();
        }
        for a in self.all_arenas() {
            let book = a.book.lock();
            free += book.free_bytes();
            largest = largest.max(book.largest_free());
        }
        l.reserved_bytes = Some(self.inner.size);
        l.used_bytes = Some(self.inner.size.saturating_sub(free));
        l.free_bytes = Some(free);
        l.largest_free_block = Some(largest);
        l.free_bytes_by_stream = Some(by_stream.into_iter().collect());
        l.chunks = Some(vec![Chunk {
            address: self.inner.base.addr(),
            size: self.inner.size,
        }]);
        l.graph_memory = Some(self.graph.stats());
        l
    }

    fn visit_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        visit(&self.inner.upstream)
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            check_base_alignment(alignment)?;
            if bytes == 0 {
                return Ok(DevicePtr::NULL);
            }
            if let Some(p) = self.graph.allocate_own(self, bytes, alignment, stream)? {
                return Ok(p);
            }
            let size = match align_up(bytes, CUDA_ALLOCATION_ALIGNMENT) {
                Some(s) if s <= self.inner.size => s,
                _ => return Err(self.out_of_memory(bytes)),
            };
            if let Some(a) = self.try_allocate(size, bytes, stream) {
                return Ok(self.annotated(a, bytes));
            }
            // Defragmenting synchronises the device: wrong under another current
            // device, and rare enough to check for it here.
            if let Some(device) = self.inner.device {
                ensure_current("ArenaMemoryResource", device)?;
            }
            self.defragment();
            match self.try_allocate(size, bytes, stream) {
                Some(a) => Ok(self.annotated(a, bytes)),
                None => {
                    let e = self.out_of_memory(bytes);
                    log::error!("{e}");
                    Err(e)
                }
            }
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        if self.graph.deallocate_own(self, ptr, bytes, alignment, stream) {
            return;
        }
        self.with_arena(stream, |arena| {
            // Checked, a free on the stream that allocated keeps the arena's
            // lock from the live record's check to the free: one lock.
            let mut held = None;
            if self.inner.checked {
                let mut b = arena.book.lock();
                match b.live.remove(ptr.addr(), bytes) {
                    Ok(()) => held = Some(b),
                    Err(BadFree::NotLive) => {
                        drop(b);
                        if !self.forget_elsewhere(arena, ptr.addr(), bytes) {
                            return;
                        }
                    }
                    Err(bad) => {
                        drop(b);
                        self.refuse(ptr.addr(), bytes, bad);
                        return;
                    }
                }
            }
            let Some(size) = self.size_in_arena(ptr, bytes) else {
                return;
            };
            if self.inner.heap.is_some() {
                nvtx::unregister_region(ptr.addr());
            }
            let b = held.unwrap_or_else(|| arena.book.lock());
            if self.free_in_own_arena(b, ptr, bytes, size) {
                // Another arena's block, or one the global arena owns.
                self.free_in_other_arena(ptr, bytes, size, stream);
            }
        })
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<ArenaMemoryResource<U>>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }

    fn device(&self) -> Option<DeviceId> {
        self.inner.device
    }

    fn is_simulated(&self) -> bool {
        self.inner.simulated
    }

    fn is_device_accessible(&self) -> bool {
        self.inner.device_accessible
    }

    fn is_host_accessible(&self) -> bool {
        self.inner.host_accessible
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(self.graph.stats())
    }
}

impl<U: MemoryResource> OwnSharedPath for ArenaMemoryResource<U> {
    const NAME: &'static str = "ArenaMemoryResource";
    fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}
