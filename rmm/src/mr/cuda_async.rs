//! [`CudaAsyncMemoryResource`] (its own driver memory pool) and
//! [`CudaAsyncViewMemoryResource`] (a view over an existing pool).

use std::sync::Arc;

use super::detail::driver_pools;
use super::detail::failed_frees::failed_free;
use super::{check_base_alignment, LayerState, MemoryResource};
use crate::device::{current_device, ensure_current, DeviceGuard, DeviceId};
use crate::driver::{self, PoolAttribute, PoolHandle};
use crate::error::{Error, Result};
use crate::mr::forensics::reported;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Which shareable handle the driver pool's memory can be exported as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ExportHandleType {
    /// No export (the default).
    #[default]
    None,
    /// A POSIX file descriptor (IPC on Linux).
    PosixFileDescriptor,
    /// A fabric handle (multi-node NVLink).
    Fabric,
}

impl ExportHandleType {
    fn bits(self) -> u32 {
        match self {
            ExportHandleType::None => 0,
            ExportHandleType::PosixFileDescriptor => driver::HANDLE_TYPE_POSIX_FD,
            ExportHandleType::Fabric => driver::HANDLE_TYPE_FABRIC,
        }
    }
}

/// Options of [`CudaAsyncMemoryResource`].
///
/// ```
/// use rmm::mr::CudaAsyncOptions;
/// let o = CudaAsyncOptions::default().initial_pool_size(1 << 30).release_threshold(1 << 32);
/// assert_eq!(o.release_threshold, Some(1 << 32));
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct CudaAsyncOptions {
    /// Bytes to allocate and free once at construction so that the pool holds
    /// them from the start (`None`: no priming).
    pub initial_pool_size: Option<usize>,
    /// Bytes the pool keeps across synchronisations (`None`: keep everything,
    /// i.e. `u64::MAX`, RMM's default).
    pub release_threshold: Option<u64>,
    /// Shareable handle type of the pool's memory.
    pub export_handle_type: ExportHandleType,
}

impl CudaAsyncOptions {
    /// Sets [`initial_pool_size`](Self::initial_pool_size).
    pub fn initial_pool_size(mut self, bytes: usize) -> Self {
        self.initial_pool_size = Some(bytes);
        self
    }
    /// Sets [`release_threshold`](Self::release_threshold).
    pub fn release_threshold(mut self, bytes: u64) -> Self {
        self.release_threshold = Some(bytes);
        self
    }
    /// Sets [`export_handle_type`](Self::export_handle_type).
    pub fn export_handle_type(mut self, t: ExportHandleType) -> Self {
        self.export_handle_type = t;
        self
    }
}

#[derive(Debug)]
struct OwnedPool {
    pool: PoolHandle,
    device: DeviceId,
    export: ExportHandleType,
    /// The pool has been exported to a shareable handle at least once (the
    /// driver refuses to export its allocations before: `mr/ipc.rs`).
    exported: std::sync::atomic::AtomicBool,
}

impl Drop for OwnedPool {
    fn drop(&mut self) {
        // Recycled, not destroyed: see `detail::driver_pools`.
        // SAFETY: the pool came from `driver_pools::take` with these
        // arguments, and this is its last owner (shared through an `Arc`).
        unsafe { driver_pools::give_back(self.device, self.export.bits(), self.pool) };
    }
}

/// Stream-ordered device memory from a driver pool that this resource creates
/// and owns (`cuMemPoolCreate`, `cuMemAllocFromPoolAsync`, `cuMemFreeAsync`).
///
/// Clones share the pool. When the last clone goes, the pool's unused memory
/// returns to the driver and the pool is kept for the next resource of the
/// same device (the driver deadlocks when threads create and destroy pools
/// around legacy-stream work; `repro/README.md`). The
/// resource belongs to the device current at construction: using it while
/// another device is current is reported as [`Error::Logic`].
///
/// # Under graph capture
/// On a capturing stream (see [`crate::graph`]) `allocate` and `deallocate`
/// become the driver's graph memory nodes (`cuMemAllocAsync` /
/// `cuMemFreeAsync` captured): the graph owns that memory, and rmm keeps
/// no bookkeeping of it. What the driver does with it (measured on the
/// H200, 2026-12-02, and tested in `rmm/tests/graph.rs`):
///
/// | Memory allocated during the capture | What happens |
/// |---|---|
/// | freed during the same capture | an allocation and a free node: the graph replays any number of times; the memory is the graph's between launches |
/// | not freed in the graph, freed after a launch (outside the graph, in stream order) | fine; the next launch allocates it again (at the same address) |
/// | not freed, freed *before* the first launch | the driver refuses the free (`CUDA_ERROR_INVALID_VALUE`, logged): the memory does not exist yet |
/// | not freed, launched again | works: rmm instantiates with `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`, so each launch first frees what the previous one left (read it before the next launch) |
///
/// The memory is valid in the launch's stream order, from the allocation
/// node to the free (or the next launch), at the address the capture
/// returned. Destroying the graph and its executables gives the memory back
/// to the pool.
///
/// ```no_run
/// use rmm::mr::{CudaAsyncMemoryResource, CudaAsyncOptions, MemoryResource};
/// let mr = CudaAsyncMemoryResource::with_options(CudaAsyncOptions::default().initial_pool_size(1 << 28))?;
/// let s = rmm::CudaStream::new()?;
/// let p = mr.allocate(4096, 256, s.view())?;
/// unsafe { mr.deallocate(p, 4096, 256, s.view()) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CudaAsyncMemoryResource {
    owned: Arc<OwnedPool>,
}

impl CudaAsyncMemoryResource {
    /// A resource with default options (keeps all memory, no priming).
    ///
    /// # Errors
    /// [`Error::Logic`] when the device has no stream-ordered allocator.
    pub fn new() -> Result<Self> {
        Self::with_options(CudaAsyncOptions::default())
    }

    /// A resource with the given options.
    ///
    /// # Errors
    /// [`Error::Logic`] when the device has no stream-ordered allocator or
    /// the export handle type is not supported; driver errors otherwise.
    pub fn with_options(options: CudaAsyncOptions) -> Result<Self> {
        let device = current_device()?;
        if !driver::supports_memory_pools(device.0)? {
            return Err(Error::Logic(format!("{device} does not support cuMemAllocAsync")));
        }
        let pool = driver_pools::take(device, options.export_handle_type.bits()).map_err(|e| {
            Error::Logic(format!(
                "cannot create a driver pool with export handle {:?}: {e}",
                options.export_handle_type
            ))
        })?;
        let owned = Arc::new(OwnedPool {
            pool,
            device,
            export: options.export_handle_type,
            exported: std::sync::atomic::AtomicBool::new(false),
        });
        let threshold = options.release_threshold.unwrap_or(u64::MAX);
        let attr = PoolAttribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        // SAFETY: `owned` holds the pool just taken, so it is live.
        unsafe { driver::mem_pool_set_u64(pool, attr, threshold)? };
        let mr = CudaAsyncMemoryResource { owned };
        if let Some(initial) = options.initial_pool_size.filter(|&n| n > 0) {
            let p = mr.allocate(initial, 256, CudaStreamView::DEFAULT)?;
            // SAFETY: `p` was just allocated with these arguments and is unused.
            unsafe { mr.deallocate(p, initial, 256, CudaStreamView::DEFAULT) };
            CudaStreamView::DEFAULT.synchronize()?;
        }
        Ok(mr)
    }

    /// The driver pool handle (`CUmemoryPool` as an integer).
    pub fn pool_handle(&self) -> usize {
        self.owned.pool.as_raw()
    }

    /// The pool's release threshold in bytes.
    pub fn release_threshold(&self) -> Result<u64> {
        let attr = PoolAttribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        // SAFETY: the resource owns its pool, which lives at least as long.
        unsafe { driver::mem_pool_get_u64(self.owned.pool, attr) }
    }

    /// Bytes the pool currently holds from the driver.
    pub fn reserved_bytes(&self) -> Result<u64> {
        let attr = PoolAttribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
        // SAFETY: the resource owns its pool, which lives at least as long.
        unsafe { driver::mem_pool_get_u64(self.owned.pool, attr) }
    }

    /// The handle type the pool's memory can be exported as.
    pub fn export_handle_type(&self) -> ExportHandleType {
        self.owned.export
    }

    /// The driver pool, live as long as the resource (it owns the pool).
    pub(crate) fn pool(&self) -> PoolHandle {
        self.owned.pool
    }

    /// The device the pool belongs to.
    pub(crate) fn pool_device(&self) -> DeviceId {
        self.owned.device
    }

    /// The flag that says the pool was exported once (`mr/ipc.rs`).
    pub(crate) fn exported_flag(&self) -> &std::sync::atomic::AtomicBool {
        &self.owned.exported
    }

    /// A non-owning view of this resource's pool.
    pub fn view(&self) -> CudaAsyncViewMemoryResource {
        CudaAsyncViewMemoryResource {
            pool: self.owned.pool,
            device: self.owned.device,
            _keep: Some(self.owned.clone()),
        }
    }
}

impl MemoryResource for CudaAsyncMemoryResource {
    fn layer_state(&self) -> LayerState {
        // SAFETY: the resource owns its pool, which lives at least as long.
        unsafe { driver_pool_layer("cuda_async", "CudaAsyncMemoryResource", self.owned.pool) }
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            // SAFETY: the resource owns its pool, which lives at least as long.
            unsafe {
                pool_allocate(
                    "CudaAsyncMemoryResource",
                    self.owned.pool,
                    self.owned.device,
                    bytes,
                    alignment,
                    stream,
                )
            }
        })
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, _bytes: usize, _alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { pool_deallocate("CudaAsyncMemoryResource", self.owned.device, ptr, stream) }
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        pool_of(other) == Some(self.owned.pool)
    }
    fn device(&self) -> Option<DeviceId> {
        Some(self.owned.device)
    }
}

/// Stream-ordered allocation from an existing driver pool that this resource
/// does not own (e.g. the device's default pool, or another library's pool).
/// Equal to any resource over the same pool. Under graph capture it behaves
/// as [`CudaAsyncMemoryResource`]'s section "Under graph capture" says.
#[derive(Debug, Clone)]
pub struct CudaAsyncViewMemoryResource {
    pool: PoolHandle,
    device: DeviceId,
    // Keeps an owning resource's pool alive when the view came from `view()`.
    _keep: Option<Arc<OwnedPool>>,
}

impl CudaAsyncViewMemoryResource {
    /// A view over `pool`, a `CUmemoryPool` handle of the current device.
    ///
    /// # Safety
    /// `pool` is a valid pool handle that outlives the view and every
    /// allocation made through it.
    ///
    /// # Errors
    /// [`Error::Logic`] for a null handle.
    pub unsafe fn from_raw(pool: usize) -> Result<Self> {
        if pool == 0 {
            return Err(Error::Logic(
                "CudaAsyncViewMemoryResource: null pool handle".into(),
            ));
        }
        Ok(CudaAsyncViewMemoryResource {
            pool: PoolHandle::from_raw(pool),
            device: current_device()?,
            _keep: None,
        })
    }

    /// The driver pool handle.
    pub fn pool_handle(&self) -> usize {
        self.pool.as_raw()
    }
}

impl MemoryResource for CudaAsyncViewMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            // SAFETY: the pool outlives the view: `from_raw`'s contract, or the
            // owning resource's pool kept by `_keep`.
            unsafe {
                pool_allocate(
                    "CudaAsyncViewMemoryResource",
                    self.pool,
                    self.device,
                    bytes,
                    alignment,
                    stream,
                )
            }
        })
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, _bytes: usize, _alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { pool_deallocate("CudaAsyncViewMemoryResource", self.device, ptr, stream) }
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        pool_of(other) == Some(self.pool)
    }
    fn device(&self) -> Option<DeviceId> {
        Some(self.device)
    }
}

/// The state of a driver pool as a layer: the bytes it reserves from the
/// driver and the bytes of it in use (the driver's pool attributes); the
/// driver says nothing of its free blocks. Unknown fields stay `None`
/// when the driver does not answer.
///
/// # Safety
/// `pool` is a live pool for the whole call.
pub(crate) unsafe fn driver_pool_layer(name: &str, type_name: &str, pool: PoolHandle) -> LayerState {
    let mut l = LayerState::new(name, type_name);
    let get = |attr| {
        // SAFETY: the caller's contract: `pool` is live.
        unsafe { driver::mem_pool_get_u64(pool, attr) }
            .ok()
            .map(|n| n as usize)
    };
    l.reserved_bytes = get(PoolAttribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
    l.used_bytes = get(PoolAttribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT);
    if let (Some(r), Some(u)) = (l.reserved_bytes, l.used_bytes) {
        l.free_bytes = Some(r.saturating_sub(u));
    }
    l
}

/// The driver pool behind `r`, if it is one of the driver pool resources.
pub(crate) fn pool_of(r: &dyn MemoryResource) -> Option<PoolHandle> {
    if let Some(a) = r.downcast_ref::<CudaAsyncMemoryResource>() {
        return Some(a.pool());
    }
    if let Some(m) = r.downcast_ref::<super::CudaAsyncManagedMemoryResource>() {
        return Some(m.pool());
    }
    r.downcast_ref::<CudaAsyncViewMemoryResource>().map(|v| v.pool)
}

/// Allocates `bytes` from `pool` on `stream` (the driver pool resources'
/// `allocate`), `what` naming the resource in errors.
///
/// Inlined into each resource's `allocate` (one call less per
/// allocation), with every failure handled out of line: `benches/rmm_ab`
/// weighs this path against the bare driver call in the same process.
///
/// # Safety
/// `pool` is live.
#[inline(always)]
pub(crate) unsafe fn pool_allocate(
    what: &'static str,
    pool: PoolHandle,
    device: DeviceId,
    bytes: usize,
    alignment: usize,
    stream: CudaStreamView,
) -> Result<DevicePtr> {
    check_base_alignment(alignment)?;
    if bytes == 0 {
        return Ok(DevicePtr::NULL);
    }
    // With one visible device this asks nothing; the driver call itself
    // makes a context current if the thread has none.
    ensure_current(what, device)?;
    // SAFETY: the caller's contract: `pool` is live; the stream is live for
    // the borrow.
    unsafe { driver::mem_alloc_from_pool_async(bytes, pool, stream.handle()) }.map_err(|e| named(what, e))
}

/// `e` with an out-of-memory reason naming the resource `what`.
#[cold]
#[inline(never)]
fn named(what: &'static str, e: Error) -> Error {
    match e {
        Error::OutOfMemory {
            requested,
            reason,
            report,
        } => Error::OutOfMemory {
            report,
            requested,
            reason: format!("{what}: {reason}"),
        },
        other => other,
    }
}

/// Frees `ptr` to its pool on `stream` (the driver pool resources'
/// `deallocate`); failures are logged.
///
/// # Safety
/// `ptr` came from the pool and is not used after `stream`'s current work.
#[inline(always)]
pub(crate) unsafe fn pool_deallocate(
    what: &'static str,
    device: DeviceId,
    ptr: DevicePtr,
    stream: CudaStreamView,
) {
    if ptr.is_null() {
        return;
    }
    if let Err(e) = ensure_current(what, device) {
        // SAFETY: forwarded contract.
        return unsafe { free_under_its_device(e, device, ptr, stream) };
    }
    // SAFETY: the caller guarantees `ptr` came from this pool and that
    // `stream` follows its last use; the stream is live for the borrow.
    let freed = unsafe { driver::mem_free_async(ptr, stream.handle()) };
    if let Err(e) = freed {
        log_failed_free(what, ptr, e);
    }
}

/// [`pool_deallocate`] while another device is current (`misuse`, the
/// device check's error, names the resource): logs it, and frees with
/// `device` made current for the call.
///
/// # Safety
/// As for [`pool_deallocate`].
#[cold]
#[inline(never)]
unsafe fn free_under_its_device(misuse: Error, device: DeviceId, ptr: DevicePtr, stream: CudaStreamView) {
    log::error!("{misuse} (freeing {ptr} with its device made current)");
    let guard = DeviceGuard::new(device).ok();
    // SAFETY: forwarded contract; the stream is live for the borrow.
    let freed = unsafe { driver::mem_free_async(ptr, stream.handle()) };
    if let Err(e) = freed {
        failed_free(&format!("{device}"), &format!("cuMemFreeAsync({ptr})"), &e);
    }
    drop(guard);
}

/// Logs a `cuMemFreeAsync` the driver refused.
#[cold]
#[inline(never)]
fn log_failed_free(what: &'static str, ptr: DevicePtr, e: Error) {
    failed_free(what, &format!("cuMemFreeAsync({ptr})"), &e);
}
