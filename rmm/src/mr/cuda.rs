//! [`CudaMemoryResource`]: `cuMemAlloc` / `cuMemFree`.

use std::sync::{Arc, OnceLock};

use super::detail::graph_memory::GraphMemory;
use super::detail::sync_driver::{self, SyncDriverKind};
use super::{GraphMemoryStats, MemoryResource};
use crate::driver;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Device memory from `cuMemAlloc` (`cudaMalloc`); the stream is ignored and
/// both calls synchronise the device as the driver does.
///
/// On a capturing stream the memory comes from the capture's graph-private
/// pool (chunks of `cuMemAlloc` taken in relaxed capture mode, so the
/// capture stays valid), and stays reserved until the graph is destroyed;
/// see [`MemoryResource::graph_memory`]. All instances share those pools.
///
/// Stateless: every instance compares equal to every other. It is the
/// initial per-device resource.
///
/// ```no_run
/// use rmm::mr::{CudaMemoryResource, MemoryResource};
/// let mr = CudaMemoryResource::new();
/// let p = mr.allocate(1 << 20, 256, rmm::CudaStreamView::DEFAULT)?;
/// unsafe { mr.deallocate(p, 1 << 20, 256, rmm::CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaMemoryResource {
    _private: (),
}

impl CudaMemoryResource {
    /// The resource (no driver call is made until the first allocation).
    pub const fn new() -> Self {
        CudaMemoryResource { _private: () }
    }
}

impl MemoryResource for CudaMemoryResource {
    /// The device's free and total memory (`cuMemGetInfo` of the current
    /// device), where the driver answers: the free bytes as one figure
    /// (the driver says nothing of their blocks), the total as the limit.
    fn layer_state(&self) -> crate::mr::LayerState {
        let mut l = crate::mr::LayerState::new("cuda", "CudaMemoryResource");
        if let Ok((free, total)) = driver::mem_get_info() {
            l.free_bytes = Some(free);
            l.limit_bytes = Some(total);
        }
        l
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        sync_driver::allocate(self, bytes, alignment, stream)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { sync_driver::deallocate(self, ptr, bytes, alignment, stream) }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<CudaMemoryResource>().is_some()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(sync_driver::graph_memory::<Self>())
    }
}

impl SyncDriverKind for CudaMemoryResource {
    const NAME: &'static str = "CudaMemoryResource";
    const FREE_CALL: &'static str = "cuMemFree";
    fn graph_cell() -> &'static OnceLock<Arc<GraphMemory>> {
        static GRAPH: OnceLock<Arc<GraphMemory>> = OnceLock::new();
        &GRAPH
    }
    fn driver_allocate(bytes: usize) -> Result<DevicePtr> {
        driver::mem_alloc(bytes).map_err(|e| match e {
            Error::OutOfMemory {
                requested,
                reason,
                report,
            } => Error::OutOfMemory {
                report,
                requested,
                reason: format!("CudaMemoryResource: {reason}"),
            },
            other => other,
        })
    }
    unsafe fn driver_free(ptr: DevicePtr) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { driver::mem_free(ptr) }
    }
}
