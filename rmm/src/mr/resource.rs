//! The [`MemoryResource`] trait, its [`FreeBlockStats`] report and
//! [`SharedResource`], the type-erased owning handle containers and the
//! per-device registry store.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::device::DeviceId;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// A stream-ordered memory allocator (RMM's `cuda::mr::resource` concept).
///
/// `allocate` returns memory that is usable in the order of `stream`;
/// `deallocate` returns it, and the memory may be reused by work ordered
/// after `stream`'s current work. The trait is object safe; containers and
/// the per-device registry hold resources as [`SharedResource`].
///
/// # Implementing
/// `deallocate` never panics: errors are logged through the `log` facade.
/// `is_equal` is true when memory from one resource may be freed through the
/// other (for shared-state resources: same state).
pub trait MemoryResource: Send + Sync + fmt::Debug + Any {
    /// Allocates `bytes` (0 gives [`DevicePtr::NULL`]) aligned to `alignment`
    /// (a power of two), usable in `stream` order.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when memory is exhausted, [`Error::BadAlloc`]
    /// for an unsupported alignment, [`Error::Cuda`] for driver failures.
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr>;

    /// Returns memory to the resource, ordered after `stream`'s current work.
    ///
    /// # Safety
    /// `ptr` came from `allocate` on a resource equal to this one with the
    /// same `bytes` and `alignment`, is not freed twice, and no work ordered
    /// after this call on `stream` (or not ordered with it) uses it.
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView);

    /// Allocates on the default stream and waits for it.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate), plus a failed synchronisation.
    fn allocate_sync(&self, bytes: usize, alignment: usize) -> Result<DevicePtr> {
        let p = self.allocate(bytes, alignment, CudaStreamView::DEFAULT)?;
        if !self.is_simulated() {
            if let Err(e) = CudaStreamView::DEFAULT.synchronize() {
                // SAFETY: `p` was just allocated with these arguments and never used.
                unsafe { self.deallocate(p, bytes, alignment, CudaStreamView::DEFAULT) };
                return Err(e);
            }
        }
        Ok(p)
    }

    /// Frees memory from [`allocate_sync`](Self::allocate_sync).
    ///
    /// # Safety
    /// As [`deallocate`](Self::deallocate); the memory is no longer in use by
    /// any stream.
    unsafe fn deallocate_sync(&self, ptr: DevicePtr, bytes: usize, alignment: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.deallocate(ptr, bytes, alignment, CudaStreamView::DEFAULT) }
    }

    /// True when memory from `other` may be freed through `self` and back.
    fn is_equal(&self, other: &dyn MemoryResource) -> bool;

    /// True when the GPU can access the memory.
    fn is_device_accessible(&self) -> bool {
        true
    }

    /// True when the host can access the memory.
    fn is_host_accessible(&self) -> bool {
        false
    }

    /// The device this resource was created for, where it is bound to one.
    fn device(&self) -> Option<DeviceId> {
        None
    }

    /// True when no GPU is behind the resource (the simulated resource and
    /// adaptors over it): streams are then never synchronised nor recorded.
    fn is_simulated(&self) -> bool {
        false
    }

    /// The free memory this resource holds for reuse, for fragmentation
    /// reports (e.g. by the `rmm-replay` crate's replays). Sub-allocators that keep free
    /// blocks report them; the default, `None`, means "not known".
    fn free_block_stats(&self) -> Option<FreeBlockStats> {
        None
    }

    /// The memory this resource keeps for CUDA graphs: its graph-private
    /// pools (see [`crate::graph`]). Resources that keep free memory of
    /// their own serve allocations on a capturing stream from such pools;
    /// adaptors and [`SharedResource`] report their upstream's. The
    /// default, `None`, means the resource keeps none (the driver pools of
    /// [`CudaAsyncMemoryResource`](crate::mr::CudaAsyncMemoryResource)
    /// hand graphs memory nodes the driver owns).
    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        None
    }
}

/// What a resource keeps for CUDA graphs, as reported by
/// [`MemoryResource::graph_memory`].
///
/// Memory allocated during a capture belongs to that capture's graph pool
/// (one per [`GraphPool`](crate::graph::GraphPool) and device): it stays
/// reserved while a graph or executable graph captured into that pool
/// exists, and goes back to the resource once none does and no block of it
/// is live.
///
/// ```
/// use rmm::mr::GraphMemoryStats;
/// let s = GraphMemoryStats::default();
/// assert_eq!((s.pools, s.reserved_bytes, s.live_bytes), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GraphMemoryStats {
    /// Graph-private pools held.
    pub pools: usize,
    /// Bytes of chunks the pools hold.
    pub reserved_bytes: usize,
    /// Bytes of blocks handed out from them and not freed (rounded to 256).
    pub live_bytes: usize,
    /// Pools a graph or executable graph still uses.
    pub graphs_alive: usize,
    /// Frees of shared memory made on capturing streams, done once their
    /// graphs are gone.
    pub deferred_frees: usize,
    /// Frees of graph memory refused (misuse, logged at error level).
    pub bad_frees: usize,
}

/// Free memory held by a sub-allocator, as reported by
/// [`MemoryResource::free_block_stats`].
///
/// ```
/// use rmm::mr::FreeBlockStats;
/// let s = FreeBlockStats { free_bytes: 1000, largest_free_block: 250, free_blocks: 4 };
/// assert!((s.fragmentation() - 0.75).abs() < 1e-12);
/// assert_eq!(FreeBlockStats::default().fragmentation(), 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FreeBlockStats {
    /// Bytes held free, in all blocks.
    pub free_bytes: usize,
    /// Size of the largest free block.
    pub largest_free_block: usize,
    /// Number of free blocks.
    pub free_blocks: usize,
}

impl FreeBlockStats {
    /// `1 - largest_free_block / free_bytes`: 0 when all free memory is one
    /// block (or there is none), close to 1 when it is scattered.
    pub fn fragmentation(&self) -> f64 {
        if self.free_bytes == 0 {
            0.0
        } else {
            1.0 - self.largest_free_block as f64 / self.free_bytes as f64
        }
    }
}

impl dyn MemoryResource {
    /// Downcasts to a concrete resource, looking through [`SharedResource`].
    pub fn downcast_ref<T: MemoryResource>(&self) -> Option<&T> {
        // Trait upcasting (`MemoryResource: Any`).
        let any: &dyn Any = self;
        if let Some(shared) = any.downcast_ref::<SharedResource>() {
            return shared.inner().downcast_ref::<T>();
        }
        any.downcast_ref::<T>()
    }
}

/// A type-erased, reference-counted owning handle to any resource.
///
/// Cloning bumps a reference count; all clones are the same resource. It is
/// what containers, execution policies and the per-device registry store, and
/// it is itself a [`MemoryResource`].
///
/// ```
/// use rmm::mr::{MemoryResource, SharedResource, SimulatedMemoryResource};
/// let sim = SimulatedMemoryResource::new(1 << 30);
/// let shared = SharedResource::new(sim.clone());
/// assert!(shared.is_equal(&sim));
/// let p = shared.allocate(1000, 256, rmm::CudaStreamView::DEFAULT)?;
/// assert!(p.is_aligned(256));
/// unsafe { shared.deallocate(p, 1000, 256, rmm::CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Clone)]
pub struct SharedResource(Arc<dyn MemoryResource>);

impl SharedResource {
    /// Wraps a resource (a `SharedResource` is not wrapped twice).
    pub fn new<R: MemoryResource>(resource: R) -> Self {
        let any: &dyn Any = &resource;
        if let Some(shared) = any.downcast_ref::<SharedResource>() {
            return shared.clone();
        }
        SharedResource(Arc::new(resource))
    }

    /// Wraps an existing `Arc`.
    pub fn from_arc(resource: Arc<dyn MemoryResource>) -> Self {
        SharedResource(resource)
    }

    /// The resource inside.
    pub fn inner(&self) -> &dyn MemoryResource {
        &*self.0
    }

    /// True when both handles hold the very same object.
    pub fn ptr_eq(&self, other: &SharedResource) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for SharedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedResource").field(&self.0).finish()
    }
}

impl MemoryResource for SharedResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        self.0.allocate(bytes, alignment, stream)
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { self.0.deallocate(ptr, bytes, alignment, stream) }
    }
    fn allocate_sync(&self, bytes: usize, alignment: usize) -> Result<DevicePtr> {
        self.0.allocate_sync(bytes, alignment)
    }
    unsafe fn deallocate_sync(&self, ptr: DevicePtr, bytes: usize, alignment: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.0.deallocate_sync(ptr, bytes, alignment) }
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        self.0.is_equal(other)
    }
    fn is_device_accessible(&self) -> bool {
        self.0.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.0.is_host_accessible()
    }
    fn device(&self) -> Option<DeviceId> {
        self.0.device()
    }
    fn is_simulated(&self) -> bool {
        self.0.is_simulated()
    }
    fn free_block_stats(&self) -> Option<FreeBlockStats> {
        self.0.free_block_stats()
    }
    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        self.0.graph_memory()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::{CudaMemoryResource, SimulatedMemoryResource};

    #[test]
    fn downcast_sees_the_concrete_type_directly_and_through_shared() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let direct: &dyn MemoryResource = &sim;
        assert!(direct.downcast_ref::<SimulatedMemoryResource>().is_some());
        assert!(direct.downcast_ref::<CudaMemoryResource>().is_none());
        let shared = SharedResource::new(sim.clone());
        let erased: &dyn MemoryResource = &shared;
        assert!(erased.downcast_ref::<SimulatedMemoryResource>().is_some());
        assert!(erased.downcast_ref::<SharedResource>().is_none());
        assert!(erased.is_equal(&sim) && sim.is_equal(erased));
    }
}
