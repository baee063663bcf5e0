//! [`ManagedMemoryResource`]: `cuMemAllocManaged` / `cuMemFree`.

use std::sync::{Arc, OnceLock};

use super::detail::graph_memory::{of_kind, ChunkSource, GraphMemory};
use super::{check_base_alignment, GraphMemoryStats, MemoryResource};
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

/// The graph-private pools of every `ManagedMemoryResource`.
fn graph() -> &'static Arc<GraphMemory> {
    static GRAPH: OnceLock<Arc<GraphMemory>> = OnceLock::new();
    of_kind(&GRAPH)
}

impl ManagedMemoryResource {
    /// # Safety
    /// `ptr` came from `cuMemAllocManaged` and nothing uses it any more.
    unsafe fn deallocate_shared(ptr: DevicePtr) {
        // SAFETY: the caller's contract.
        if let Err(e) = unsafe { driver::mem_free(ptr) } {
            log::error!("ManagedMemoryResource: cuMemFree({ptr}) failed: {e}");
        }
    }
}

impl MemoryResource for ManagedMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        if let Some(p) = graph().allocate(bytes, alignment, stream, || Arc::new(*self))? {
            return Ok(p);
        }
        driver::mem_alloc_managed(bytes)
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
        other.downcast_ref::<ManagedMemoryResource>().is_some()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(graph().stats())
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}

impl ChunkSource for ManagedMemoryResource {
    fn source_name(&self) -> &'static str {
        "ManagedMemoryResource"
    }
    fn allocate_chunk(&self, bytes: usize, _stream: CudaStreamView<'_>) -> Result<DevicePtr> {
        driver::mem_alloc_managed(bytes)
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
