//! The shell the pool, fixed-size and virtual pool resources share around
//! the stream-ordered core ([`StreamOrdered`]): the shared, mutex-guarded
//! state behind every clone, the properties taken from the upstream at
//! construction, the `MemoryResource` forwarding, the statistics queries,
//! and the teardown when the last clone is dropped.
//!
//! A public resource is a one-field wrapper around a
//! [`StreamOrderedResource`] over its own [`Backing`] (how it gets and
//! returns memory); [`stream_ordered_memory_resource!`] stamps its `Clone`
//! and `MemoryResource` impls, which only forward to the shell.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::graph_memory::{ChunkSource, GraphMemory};
use super::live_set::log_bad_free;
use super::stream_ordered::{Backing, FastFree, Sizing, StreamKey, StreamOrdered};
use super::stream_slots;
use crate::device::DeviceId;
use crate::error::Result;
use crate::mr::{check_base_alignment, FreeBlockStats, GraphMemoryStats, MemoryResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// What a resource reports about its memory, fixed at construction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Props {
    /// No GPU is behind the memory.
    pub simulated: bool,
    /// The device whose memory the resource holds, if bound to one.
    pub device: Option<DeviceId>,
    /// The GPU can access the memory.
    pub device_accessible: bool,
    /// The host can access the memory.
    pub host_accessible: bool,
}

impl Props {
    /// The properties of a resource that sub-allocates `upstream`'s memory.
    ///
    /// # Errors
    /// The driver's error when the current device cannot be read.
    pub fn of<U: MemoryResource>(upstream: &U) -> Result<Props> {
        Ok(Props {
            simulated: upstream.is_simulated(),
            device: super::bound_device(upstream)?,
            device_accessible: upstream.is_device_accessible(),
            host_accessible: upstream.is_host_accessible(),
        })
    }

    /// A core over `backing` for memory with these properties; frees are
    /// checked against the live allocations unless `unchecked_frees`.
    pub fn core<B: Backing>(&self, backing: B, unchecked_frees: bool) -> StreamOrdered<B> {
        let mut core = StreamOrdered::new(backing, self.simulated, self.device);
        core.set_check_frees(!unchecked_frees);
        core
    }
}

struct Inner<B: Backing> {
    state: Mutex<StreamOrdered<B>>,
    props: Props,
    /// The per-stream fast paths' sizing; `None`: every call takes `state`.
    fast: Option<Sizing>,
    /// The resource's name, for messages of the fast paths.
    name: &'static str,
    /// This resource among all (the per-thread slot caches' key).
    id: u64,
    /// Frees the fast paths refused.
    fast_bad_frees: AtomicUsize,
    /// The graph-private pools, in front of the shared lists.
    graph: Arc<GraphMemory>,
    /// Only ever called by a resource with graph memory of its own in
    /// front (a binning resource's own bins): capture is not looked for.
    behind_graph_memory: bool,
}

impl<B: Backing> Drop for Inner<B> {
    fn drop(&mut self) {
        // A poisoned lock still holds the state: tear it down all the same.
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        state.teardown();
    }
}

/// A stream-ordered resource over backing `B`: one mutex around the core,
/// shared by every clone; the memory goes back when the last clone is
/// dropped.
pub(crate) struct StreamOrderedResource<B: Backing> {
    inner: Arc<Inner<B>>,
}

impl<B: Backing> Clone for StreamOrderedResource<B> {
    fn clone(&self) -> Self {
        StreamOrderedResource {
            inner: self.inner.clone(),
        }
    }
}

impl<B: Backing> StreamOrderedResource<B> {
    /// The shell around a core that already holds its initial memory.
    pub fn new(core: StreamOrdered<B>, props: Props) -> Self {
        StreamOrderedResource {
            inner: Arc::new(Inner {
                fast: core.fast_sizing(),
                name: core.backing.name(),
                id: stream_slots::next_resource_id(),
                fast_bad_frees: AtomicUsize::new(0),
                state: Mutex::new(core),
                props,
                graph: GraphMemory::new(),
                behind_graph_memory: false,
            }),
        }
    }

    /// Marks a resource no clone of which exists yet as used only behind
    /// another resource's graph memory, which never passes it a capturing
    /// stream: its allocations do not look for a capture (one driver query
    /// less per call). False (and no change) when it was cloned already.
    pub fn set_behind_graph_memory(&mut self) -> bool {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.behind_graph_memory = true;
                true
            }
            None => false,
        }
    }

    /// The core, locked (a poisoned lock is taken over: the core keeps its
    /// invariants between calls).
    pub fn state(&self) -> MutexGuard<'_, StreamOrdered<B>> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The properties fixed at construction.
    pub fn props(&self) -> &Props {
        &self.inner.props
    }

    /// True when both are clones of one resource.
    pub fn same(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// [`MemoryResource::allocate`]: on a capturing stream from the
    /// capture's graph-private pool, else from the shared lists.
    #[inline]
    pub fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        if !self.props().simulated && !self.inner.behind_graph_memory {
            if let Some(p) = self
                .inner
                .graph
                .allocate(bytes, alignment, stream, || Arc::new(self.clone()))?
            {
                return Ok(p);
            }
        }
        if let Some(size) = self.inner.fast.and_then(|f| f.block_size(bytes)) {
            if let Some(addr) = self.with_slot(stream, |l| l.take_request(size, bytes)).flatten() {
                return Ok(DevicePtr::new(addr));
            }
        }
        self.allocate_shared(bytes, stream, false)
    }

    /// Runs `f` on `stream`'s list under its own lock (the per-stream fast
    /// path; the core's lock only the first time this thread uses the
    /// stream here); `None` when this thread cannot cache the slot (it is
    /// exiting).
    #[inline(always)]
    fn with_slot<R>(
        &self,
        stream: CudaStreamView,
        f: impl FnOnce(&mut super::stream_ordered::StreamList<B::List>) -> R,
    ) -> Option<R> {
        let key = StreamKey::of(stream);
        stream_slots::with_slot(
            self.inner.id,
            key,
            || self.state().slot(stream),
            |slot| f(&mut slot.lock()),
        )
    }

    /// The fast path of a free: `true` when it is done (or refused and
    /// logged), `false` when the core must look further.
    #[inline]
    fn free_fast(&self, addr: u64, bytes: usize, stream: CudaStreamView) -> bool {
        let Some(size) = self.inner.fast.and_then(|f| f.block_size(bytes)) else {
            return false;
        };
        let stash = matches!(self.inner.fast, Some(Sizing::Rounded { .. }));
        let outcome = self.with_slot(stream, |l| l.free_request(addr, bytes, size, stash));
        match outcome {
            None | Some(FastFree::Elsewhere) => false,
            Some(FastFree::Done) => true,
            Some(FastFree::Refused(bad)) => {
                self.inner.fast_bad_frees.fetch_add(1, Ordering::Relaxed);
                log_bad_free(self.inner.name, addr, bytes, bad);
                true
            }
            Some(FastFree::Overlaps(a, n)) => {
                log::error!(
                    "{}: free block {a:#x} ({n} bytes) overlaps free memory (internal error); dropped",
                    self.inner.name
                );
                true
            }
        }
    }

    /// An allocation from the shared lists; `no_device_sync` while serving
    /// a graph-private pool.
    fn allocate_shared(
        &self,
        bytes: usize,
        stream: CudaStreamView,
        no_device_sync: bool,
    ) -> Result<DevicePtr> {
        let mut state = self.state();
        if let Some(e) = state.backing.refuse(bytes) {
            return Err(e);
        }
        state.set_no_device_sync(no_device_sync);
        let result = state.allocate_request(bytes, stream).map(DevicePtr::new);
        state.set_no_device_sync(false);
        result
    }

    /// [`MemoryResource::deallocate`]: a free the core does not recognise
    /// is logged and ignored, so this is safe to call with any arguments.
    /// Graph memory, and any free on a capturing stream, goes to the
    /// graph-private pools.
    #[inline]
    pub fn deallocate(&self, ptr: DevicePtr, bytes: usize, stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        let alignment = crate::align::CUDA_ALLOCATION_ALIGNMENT;
        if self
            .inner
            .graph
            .deallocate(ptr, bytes, alignment, stream, || Arc::new(self.clone()))
        {
            return;
        }
        if self.free_fast(ptr.addr(), bytes, stream) {
            return;
        }
        self.state().deallocate_request(ptr.addr(), bytes, stream);
    }

    /// [`MemoryResource::graph_memory`].
    pub fn graph_memory(&self) -> GraphMemoryStats {
        self.inner.graph.stats()
    }

    /// Free bytes over all streams.
    pub fn free_bytes(&self) -> usize {
        self.state().free_bytes()
    }

    /// Frees refused so far.
    pub fn bad_frees(&self) -> usize {
        self.state().bad_frees() + self.inner.fast_bad_frees.load(Ordering::Relaxed)
    }

    /// [`MemoryResource::layer_state`] of the resource type `type_name`.
    pub fn layer_state(&self, type_name: &'static str) -> crate::mr::LayerState {
        let short = crate::mr::forensics::short_type_name(type_name);
        let name = crate::mr::forensics::layer_name(&short);
        let mut l = self.state().layer_state(&name, &short);
        l.graph_memory = Some(self.graph_memory());
        l
    }

    /// [`MemoryResource::visit_upstream`]: the backing's upstream, visited
    /// under this resource's lock (the order its growth takes).
    pub fn visit_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        let state = self.state();
        if let Some(u) = state.backing.upstream() {
            visit(u);
        }
    }

    /// [`MemoryResource::free_block_stats`], as the backing reports it.
    pub fn free_block_stats(&self) -> Option<FreeBlockStats> {
        self.state().free_block_stats()
    }
}

impl<B: Backing> ChunkSource for StreamOrderedResource<B> {
    fn source_name(&self) -> &'static str {
        self.state().backing.name()
    }
    fn chunk_bytes(&self, bytes: usize) -> Option<usize> {
        self.state().backing.graph_chunk_bytes(bytes)
    }
    fn allocate_chunk(&self, bytes: usize, stream: CudaStreamView<'_>) -> Result<DevicePtr> {
        self.allocate_shared(bytes, stream, true)
    }
    unsafe fn deallocate_chunk(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        _alignment: usize,
        stream: CudaStreamView<'_>,
    ) {
        self.state().deallocate_request(ptr.addr(), bytes, stream);
    }
    fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}

/// Returns every upstream chunk (address → size) to `upstream` and empties
/// `chunks`: the release of the backings that sub-allocate 256-byte aligned
/// chunks of an upstream resource.
///
/// # Safety
/// Every chunk came from `upstream.allocate(size, 256, _)`, and none of its
/// memory is in use any more.
pub(crate) unsafe fn release_chunks<U: MemoryResource>(upstream: &U, chunks: &mut BTreeMap<u64, usize>) {
    for (addr, size) in std::mem::take(chunks) {
        // SAFETY: the caller's contract: allocated with these arguments, unused.
        unsafe {
            upstream.deallocate(
                DevicePtr::new(addr),
                size,
                crate::align::CUDA_ALLOCATION_ALIGNMENT,
                CudaStreamView::DEFAULT,
            )
        };
    }
}

/// The chunk of `chunks` (address → size) that holds `addr`.
pub(crate) fn chunk_containing(chunks: &BTreeMap<u64, usize>, addr: u64) -> Option<(u64, usize)> {
    chunks
        .range(..=addr)
        .next_back()
        .filter(|(&s, &n)| addr < s + n as u64)
        .map(|(&s, &n)| (s, n))
}

/// Implements `Clone` and `MemoryResource` for a resource `$ty` (generic
/// over an upstream `$u`, if given) whose one field `shell` is a
/// [`StreamOrderedResource`]: each method forwards to the shell.
macro_rules! stream_ordered_memory_resource {
    ($ty:ty $(, $u:ident)?) => {
        impl<$($u: $crate::mr::MemoryResource)?> Clone for $ty {
            fn clone(&self) -> Self {
                Self {
                    shell: self.shell.clone(),
                }
            }
        }

        impl<$($u: $crate::mr::MemoryResource)?> $crate::mr::MemoryResource for $ty {
            fn allocate(
                &self,
                bytes: usize,
                alignment: usize,
                stream: $crate::stream::CudaStreamView,
            ) -> $crate::error::Result<$crate::ptr::DevicePtr> {
                use $crate::mr::forensics::ReportOom as _;
                self.shell
                    .allocate(bytes, alignment, stream)
                    .report_oom(self, bytes, alignment, stream)
            }

            unsafe fn deallocate(
                &self,
                ptr: $crate::ptr::DevicePtr,
                bytes: usize,
                _alignment: usize,
                stream: $crate::stream::CudaStreamView,
            ) {
                self.shell.deallocate(ptr, bytes, stream);
            }

            fn is_equal(&self, other: &dyn $crate::mr::MemoryResource) -> bool {
                other
                    .downcast_ref::<Self>()
                    .is_some_and(|o| self.shell.same(&o.shell))
            }

            fn device(&self) -> Option<$crate::device::DeviceId> {
                self.shell.props().device
            }

            fn is_simulated(&self) -> bool {
                self.shell.props().simulated
            }

            fn is_device_accessible(&self) -> bool {
                self.shell.props().device_accessible
            }

            fn is_host_accessible(&self) -> bool {
                self.shell.props().host_accessible
            }

            fn free_block_stats(&self) -> Option<$crate::mr::FreeBlockStats> {
                self.shell.free_block_stats()
            }

            fn graph_memory(&self) -> Option<$crate::mr::GraphMemoryStats> {
                Some(self.shell.graph_memory())
            }

            fn layer_state(&self) -> $crate::mr::LayerState {
                self.shell.layer_state(std::any::type_name::<Self>())
            }

            fn visit_upstream(&self, visit: &mut dyn FnMut(&dyn $crate::mr::MemoryResource)) {
                self.shell.visit_upstream(visit)
            }
        }
    };
}
pub(crate) use stream_ordered_memory_resource;

#[cfg(test)]
mod tests {
    //! The per-stream fast paths against the core: misuse is refused
    //! whichever path a free takes, stashed blocks count as free, and
    //! threads on their own streams never get overlapping blocks.
    use crate::mr::{MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource};
    use crate::stream::CudaStreamView;

    const MIB: usize = 1 << 20;

    fn stream(raw: usize) -> CudaStreamView<'static> {
        // SAFETY: a simulated resource never passes the handle to the driver.
        unsafe { CudaStreamView::from_raw(raw) }
    }

    fn pool() -> PoolMemoryResource<SimulatedMemoryResource> {
        let sim = SimulatedMemoryResource::new(1 << 30);
        PoolMemoryResource::new(sim, PoolOptions::default().initial_pool_size(64 * MIB)).unwrap()
    }

    /// A stashed block is handed out again for its size, counts as free,
    /// and a second free of it, a wrong size or an interior pointer is
    /// refused.
    #[test]
    fn stashed_blocks_are_free_and_checked() {
        let pool = pool();
        let s = stream(0x100);
        let a = pool.allocate(1000, 256, s).unwrap();
        // SAFETY: each free below names memory of this pool; the refused
        // ones are misuse the pool must catch.
        unsafe {
            pool.deallocate(a, 1000, 256, s);
            assert_eq!(pool.free_bytes(), 64 * MIB);
            pool.deallocate(a, 1000, 256, s);
            assert_eq!(pool.bad_frees(), 1);
            let b = pool.allocate(1000, 256, s).unwrap();
            assert_eq!(b, a);
            pool.deallocate(b, 999, 256, s);
            pool.deallocate(interior(b, 256), 1000, 256, s);
            assert_eq!(pool.bad_frees(), 3);
            pool.deallocate(b, 1000, 256, s);
        }
        assert_eq!((pool.free_bytes(), pool.bad_frees()), (64 * MIB, 3));
    }

    /// Streams come and go: the lists of streams no one uses any more are
    /// folded into a new stream's list and dropped, so their number stays
    /// bounded; a list with a live allocation stays, and its block is
    /// freed normally thousands of streams later; no memory is lost.
    #[test]
    fn lists_of_unused_streams_are_folded_and_dropped() {
        let pool = pool();
        let keep = stream(0x50);
        let held = pool.allocate(5000, 256, keep).unwrap();
        let lists = |pool: &PoolMemoryResource<SimulatedMemoryResource>| {
            let snap = crate::mr::snapshot(pool);
            snap.layers[0].free_bytes_by_stream.as_ref().map_or(0, Vec::len)
        };
        let mut most = 0;
        for k in 1..3000usize {
            let s = stream(0x1000 + 16 * k);
            let a = pool.allocate(256 * (1 + k % 40), 256, s).unwrap();
            let b = pool.allocate(1 << 20, 256, s).unwrap();
            // SAFETY: both were allocated above on `s` with these sizes.
            unsafe {
                pool.deallocate(a, 256 * (1 + k % 40), 256, s);
                pool.deallocate(b, 1 << 20, 256, s);
            }
            most = most.max(lists(&pool));
        }
        assert!(most <= 2 * 64 + 1, "{most} lists kept");
        // SAFETY: allocated above on `keep` with this size.
        unsafe { pool.deallocate(held, 5000, 256, keep) };
        assert_eq!((pool.free_bytes(), pool.bad_frees()), (64 * MIB, 0));
        // Every byte can be handed out again, on a stream never seen.
        let all = pool.allocate(64 * MIB, 256, stream(0x9_0000)).unwrap();
        assert_eq!(pool.pool_size(), 64 * MIB, "the pool grew: memory was lost");
        // SAFETY: allocated just above.
        unsafe { pool.deallocate(all, 64 * MIB, 256, stream(0x9_0000)) };
    }

    /// A block freed on another stream than its allocation's goes through
    /// the core: accepted once, then refused on either stream.
    #[test]
    fn frees_on_another_stream_are_checked_once() {
        let pool = pool();
        let (s1, s2) = (stream(0x100), stream(0x200));
        let a = pool.allocate(3000, 256, s1).unwrap();
        // SAFETY: as above.
        unsafe {
            pool.deallocate(a, 3000, 256, s2);
            pool.deallocate(a, 3000, 256, s1);
            pool.deallocate(a, 3000, 256, s2);
        }
        assert_eq!(pool.bad_frees(), 2);
        assert_eq!(pool.free_bytes(), 64 * MIB);
        // The block now belongs to s2's list: s2 gets it back at once.
        assert_eq!(pool.allocate(3000, 256, s2).unwrap(), a);
    }

    /// Threads on their own streams (and one shared stream) allocate and
    /// free at once: no two live blocks ever overlap, and everything comes
    /// back.
    #[test]
    fn threads_on_own_streams_never_share_a_block() {
        let pool = pool();
        let live = std::sync::Mutex::new(std::collections::BTreeMap::<u64, u64>::new());
        std::thread::scope(|scope| {
            for t in 0..4usize {
                let (pool, live) = (&pool, &live);
                scope.spawn(move || {
                    let s = stream(if t == 3 { 0x100 } else { 0x100 * (t + 2) });
                    let mut mine = Vec::new();
                    for i in 0..2000usize {
                        let bytes = 1 + (i * 7919 + t * 104_729) % (256 * 1024);
                        let p = pool.allocate(bytes, 256, s).unwrap();
                        let (a, end) = (p.addr(), p.addr() + bytes as u64);
                        {
                            let mut l = live.lock().unwrap();
                            let before = l.range(..end).next_back().map(|(&s, &e)| (s, e));
                            assert!(before.is_none_or(|(_, e)| e <= a), "overlap at {a:#x}");
                            l.insert(a, end);
                        }
                        mine.push((p, bytes));
                        if i % 3 == 2 {
                            let (p, n) = mine.swap_remove(i % mine.len());
                            live.lock().unwrap().remove(&p.addr());
                            // SAFETY: allocated above with these arguments.
                            unsafe { pool.deallocate(p, n, 256, s) };
                        }
                    }
                    for (p, n) in mine {
                        live.lock().unwrap().remove(&p.addr());
                        // SAFETY: as above.
                        unsafe { pool.deallocate(p, n, 256, s) };
                    }
                });
            }
        });
        assert_eq!((pool.free_bytes(), pool.bad_frees()), (pool.pool_size(), 0));
    }

    /// The pointer `by` bytes into the block at `p` (an interior pointer).
    fn interior(p: crate::ptr::DevicePtr, by: u64) -> crate::ptr::DevicePtr {
        crate::ptr::DevicePtr::new(p.addr() + by)
    }
}
