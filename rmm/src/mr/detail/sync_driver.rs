//! The stateless resources over one synchronous driver allocation pair
//! (`cuda`: `cuMemAlloc`, `managed`: `cuMemAllocManaged`, pinned host:
//! `cuMemHostAlloc`): their allocate and deallocate paths, their
//! graph-private pools (one set per kind, since all instances compare
//! equal) and their chunk source, written once.

use std::sync::{Arc, OnceLock};

use super::graph_memory::{of_kind, ChunkSource, GraphMemory};
use crate::error::Result;
use crate::mr::forensics::reported;
use crate::mr::{check_base_alignment, GraphMemoryStats, MemoryResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// A stateless resource whose memory comes from one synchronous driver
/// allocation call and goes back through one synchronous free.
pub(crate) trait SyncDriverKind: MemoryResource + Copy {
    /// The resource's name, for messages.
    const NAME: &'static str;
    /// The driver's free call, for messages.
    const FREE_CALL: &'static str;
    /// The cell of this kind's graph memory.
    fn graph_cell() -> &'static OnceLock<Arc<GraphMemory>>;
    /// The driver's allocation of `bytes` (> 0).
    ///
    /// # Errors
    /// The driver's error.
    fn driver_allocate(bytes: usize) -> Result<DevicePtr>;
    /// The driver's free.
    ///
    /// # Safety
    /// `ptr` came from [`driver_allocate`](Self::driver_allocate) and
    /// nothing uses it any more.
    ///
    /// # Errors
    /// The driver's error.
    unsafe fn driver_free(ptr: DevicePtr) -> Result<()>;
}

/// The graph-private pools of every resource of kind `K`.
fn graph<K: SyncDriverKind>() -> &'static Arc<GraphMemory> {
    of_kind(K::graph_cell())
}

/// `MemoryResource::allocate` of kind `K`: the graph-private pool on a
/// capturing stream, the driver otherwise; out-of-memory reports as every
/// resource makes them.
pub(crate) fn allocate<K: SyncDriverKind>(
    resource: &K,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) -> Result<DevicePtr> {
    reported(resource, bytes, alignment, stream, || {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        if let Some(p) = graph::<K>().allocate(bytes, alignment, stream, || Arc::new(*resource))? {
            return Ok(p);
        }
        K::driver_allocate(bytes)
    })
}

/// `MemoryResource::deallocate` of kind `K`.
///
/// # Safety
/// As [`MemoryResource::deallocate`].
pub(crate) unsafe fn deallocate<K: SyncDriverKind>(
    resource: &K,
    ptr: DevicePtr,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) {
    if ptr.is_null() || graph::<K>().deallocate(ptr, bytes, alignment, stream, || Arc::new(*resource)) {
        return;
    }
    // SAFETY: the caller guarantees `ptr` came from `allocate`, and memory
    // of the graph-private pools was taken above.
    unsafe { free_shared::<K>(ptr) }
}

/// What kind `K`'s graph-private pools hold.
pub(crate) fn graph_memory<K: SyncDriverKind>() -> GraphMemoryStats {
    graph::<K>().stats()
}

/// Frees driver memory of kind `K`, logging a failure.
///
/// # Safety
/// `ptr` came from `K::driver_allocate` and nothing uses it any more.
unsafe fn free_shared<K: SyncDriverKind>(ptr: DevicePtr) {
    // The free synchronises the device, which fails captures under way.
    crate::graph::wait_for_other_captures();
    // SAFETY: the caller's contract.
    if let Err(e) = unsafe { K::driver_free(ptr) } {
        super::failed_frees::failed_free(K::NAME, &format!("{}({ptr})", K::FREE_CALL), &e);
    }
}

impl<K: SyncDriverKind> ChunkSource for K {
    fn source_name(&self) -> &'static str {
        K::NAME
    }
    fn allocate_chunk(&self, bytes: usize, _stream: CudaStreamView<'_>) -> Result<DevicePtr> {
        K::driver_allocate(bytes)
    }
    unsafe fn deallocate_chunk(
        &self,
        ptr: DevicePtr,
        _bytes: usize,
        _alignment: usize,
        _stream: CudaStreamView<'_>,
    ) {
        // SAFETY: forwarded contract.
        unsafe { free_shared::<K>(ptr) }
    }
    fn handles(&self) -> usize {
        usize::MAX
    }
}
