//! [`PinnedHostMemoryResource`]: `cuMemHostAlloc` / `cuMemFreeHost`.

use std::sync::{Arc, OnceLock};

use super::detail::graph_memory::GraphMemory;
use super::detail::sync_driver::{self, SyncDriverKind};
use super::{GraphMemoryStats, MemoryResource};
use crate::driver;
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Page-locked host memory, mapped into the device's address space, so the
/// host and the GPU can both access it; the stream is ignored. Pinned memory
/// is page aligned, which satisfies every supported alignment. Stateless.
///
/// # A pinned host memory pool
/// `cuMemHostAlloc` is slow (it pins pages, and synchronises); a
/// [`PoolMemoryResource`] over this resource hands out pinned memory at
/// pool speed (RMM's pinned pool; `pinned_pool` in
/// `rmm_replay::by_name`). Pool memory from it is host and device
/// accessible and, as a sub-allocation, bound to no device.
///
/// # Staging host copies through it
/// The containers' host copies ([`DeviceBuffer::to_host`],
/// [`DeviceBuffer::copy_from_host`], `DeviceUvector::copy_to_host`,
/// `DeviceScalar::value`) have no staging buffer of their own: they copy
/// directly between the caller's host memory and the device, and when that
/// host memory is pageable the driver stages the copy through its own
/// pinned buffers. To have copies run at pinned speed, and stream-ordered
/// without a synchronisation, keep the host side in pinned memory: a
/// [`DeviceBuffer`] from the pinned pool is such memory, and
/// [`DeviceBuffer::try_clone_on`] copies device memory into it (and back)
/// in stream order.
///
/// ```no_run
/// use rmm::mr::{MemoryResource, PinnedHostMemoryResource, PoolMemoryResource, PoolOptions, SharedResource};
/// use rmm::{CudaStream, DeviceBuffer};
/// let pinned_pool = SharedResource::new(PoolMemoryResource::new(
///     PinnedHostMemoryResource::new(),
///     PoolOptions::default().initial_pool_size(64 << 20),
/// )?);
/// let stream = CudaStream::new()?;
/// let on_device = DeviceBuffer::from_host(&[7u8; 4096], stream.view(), rmm::mr::CudaMemoryResource::new())?;
/// // Device to pinned host memory, in stream order, no synchronisation.
/// let staged = on_device.try_clone_on(stream.view(), pinned_pool.clone())?;
/// stream.synchronize()?;
/// // `staged.data()` is a host address now holding the bytes.
/// assert!(staged.resource().is_host_accessible());
/// # Ok::<(), rmm::Error>(())
/// ```
///
/// [`PoolMemoryResource`]: crate::mr::PoolMemoryResource
/// [`DeviceBuffer`]: crate::DeviceBuffer
/// [`DeviceBuffer::to_host`]: crate::DeviceBuffer::to_host
/// [`DeviceBuffer::copy_from_host`]: crate::DeviceBuffer::copy_from_host
/// [`DeviceBuffer::try_clone_on`]: crate::DeviceBuffer::try_clone_on
///
/// On a capturing stream the memory comes from the capture's graph-private
/// pool (chunks allocated in relaxed capture mode, so the capture stays
/// valid) and stays reserved until the graph is destroyed; see
/// [`MemoryResource::graph_memory`]. All instances share those pools.
#[derive(Debug, Clone, Copy, Default)]
pub struct PinnedHostMemoryResource {
    _private: (),
}

impl PinnedHostMemoryResource {
    /// The resource.
    pub const fn new() -> Self {
        PinnedHostMemoryResource { _private: () }
    }
}

impl MemoryResource for PinnedHostMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        sync_driver::allocate(self, bytes, alignment, stream)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { sync_driver::deallocate(self, ptr, bytes, alignment, stream) }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<PinnedHostMemoryResource>().is_some()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(sync_driver::graph_memory::<Self>())
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

impl SyncDriverKind for PinnedHostMemoryResource {
    const NAME: &'static str = "PinnedHostMemoryResource";
    const FREE_CALL: &'static str = "cuMemFreeHost";
    fn graph_cell() -> &'static OnceLock<Arc<GraphMemory>> {
        static GRAPH: OnceLock<Arc<GraphMemory>> = OnceLock::new();
        &GRAPH
    }
    fn driver_allocate(bytes: usize) -> Result<DevicePtr> {
        driver::mem_host_alloc(bytes)
    }
    unsafe fn driver_free(ptr: DevicePtr) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { driver::mem_free_host(ptr) }
    }
}
