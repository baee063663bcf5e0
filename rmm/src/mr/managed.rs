//! [`ManagedMemoryResource`]: `cuMemAllocManaged` / `cuMemFree`.

use std::sync::{Arc, OnceLock};

use super::detail::graph_memory::GraphMemory;
use super::detail::sync_driver::{self, SyncDriverKind};
use super::{GraphMemoryStats, MemoryResource};
use crate::driver;
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Managed (unified) memory, accessible from host and device; the stream is
/// ignored. Stateless: all instances compare equal.
///
/// Do not ask for more managed memory than the GPU has free: oversubscribed
/// managed memory pages and can be very slow.
///
/// On a capturing stream the memory comes from the capture's graph-private
/// pool (chunks allocated in relaxed capture mode, so the capture stays
/// valid) and stays reserved until the graph is destroyed; see
/// [`MemoryResource::graph_memory`]. All instances share those pools.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManagedMemoryResource {
    _private: (),
}

impl ManagedMemoryResource {
    /// The resource.
    pub const fn new() -> Self {
        ManagedMemoryResource { _private: () }
    }
}

impl MemoryResource for ManagedMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        sync_driver::allocate(self, bytes, alignment, stream)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { sync_driver::deallocate(self, ptr, bytes, alignment, stream) }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<ManagedMemoryResource>().is_some()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(sync_driver::graph_memory::<Self>())
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

impl SyncDriverKind for ManagedMemoryResource {
    const NAME: &'static str = "ManagedMemoryResource";
    const FREE_CALL: &'static str = "cuMemFree";
    fn graph_cell() -> &'static OnceLock<Arc<GraphMemory>> {
        static GRAPH: OnceLock<Arc<GraphMemory>> = OnceLock::new();
        &GRAPH
    }
    fn driver_allocate(bytes: usize) -> Result<DevicePtr> {
        driver::mem_alloc_managed(bytes)
    }
    unsafe fn driver_free(ptr: DevicePtr) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { driver::mem_free(ptr) }
    }
}
