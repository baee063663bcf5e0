//! [`CudaMemoryResource`]: `cuMemAlloc` / `cuMemFree`.

use std::sync::{Arc, OnceLock};

use super::detail::graph_memory::{of_kind, ChunkSource, GraphMemory};
use super::{check_base_alignment, GraphMemoryStats, MemoryResource};
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

/// The graph-private pools of every `CudaMemoryResource`.
fn graph() -> &'static Arc<GraphMemory> {
    static GRAPH: OnceLock<Arc<GraphMemory>> = OnceLock::new();
    of_kind(&GRAPH)
}

impl CudaMemoryResource {
    fn allocate_shared(bytes: usize) -> Result<DevicePtr> {
        driver::mem_alloc(bytes).map_err(|e| match e {
            Error::OutOfMemory { requested, reason } => Error::OutOfMemory {
                requested,
                reason: format!("CudaMemoryResource: {reason}"),
            },
            other => other,
        })
    }

    /// # Safety
    /// `ptr` came from `cuMemAlloc` and nothing uses it any more.
    unsafe fn deallocate_shared(ptr: DevicePtr) {
        // SAFETY: the caller's contract.
        if let Err(e) = unsafe { driver::mem_free(ptr) } {
            log::error!("CudaMemoryResource: cuMemFree({ptr}) failed: {e}");
        }
    }
}

impl MemoryResource for CudaMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        if let Some(p) = graph().allocate(bytes, alignment, stream, || Arc::new(*self))? {
            return Ok(p);
        }
        Self::allocate_shared(bytes)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if ptr.is_null() || graph().deallocate(ptr, bytes, alignment, stream, || Arc::new(*self)) {
            return;
        }
        // SAFETY: the caller guarantees `ptr` came from `allocate`, and
        // memory of the graph-private pools was taken above.
        unsafe { Self::deallocate_shared(ptr) }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<CudaMemoryResource>().is_some()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(graph().stats())
    }
}

impl ChunkSource for CudaMemoryResource {
    fn source_name(&self) -> &'static str {
        "CudaMemoryResource"
    }
    fn allocate_chunk(&self, bytes: usize, _stream: CudaStreamView<'_>) -> Result<DevicePtr> {
        Self::allocate_shared(bytes)
    }
    unsafe fn deallocate_chunk(
        &self,
        ptr: DevicePtr,
        _bytes: usize,
        _alignment: usize,
        _stream: CudaStreamView<'_>,
    ) {
        // SAFETY: forwarded contract.
        unsafe { Self::deallocate_shared(ptr) }
    }
    fn handles(&self) -> usize {
        usize::MAX
    }
}
