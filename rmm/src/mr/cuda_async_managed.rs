//! [`CudaAsyncManagedMemoryResource`]: stream-ordered managed memory from
//! the device's default managed driver pool (CUDA 13).

use super::cuda_async::{pool_allocate, pool_deallocate, pool_of};
use super::MemoryResource;
use crate::device::{current_device, DeviceId};
use crate::driver::{self, PoolAttribute, PoolHandle};
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Stream-ordered managed (unified) memory: `cuMemAllocFromPoolAsync` and
/// `cuMemFreeAsync` on the default managed memory pool of the device
/// current at construction, whose preferred location is that device
/// (RMM's `cuda_async_managed_memory_resource`). The memory is accessible
/// from the host and from every device, as [`ManagedMemoryResource`]'s,
/// but allocated and freed in stream order from a pool that keeps freed
/// memory for reuse.
///
/// Managed driver pools are a CUDA 13 feature: with an older driver the
/// constructor returns [`Error::Logic`](crate::Error::Logic) saying so.
/// The pool is the driver's, shared by every resource of the device and
/// never destroyed. Using the resource while another device is current is
/// reported as [`Error::Logic`](crate::Error::Logic).
///
/// Under graph capture its calls go to the driver as
/// [`CudaAsyncMemoryResource`]'s do (see its section "Under graph
/// capture"): `cuMemAllocFromPoolAsync` on a capturing stream makes a graph
/// allocation node with the pool's properties, owned by the graph. Whether
/// the driver accepts a managed pool there is the driver's to decide: a
/// refusal is returned by `allocate` as the driver's error, and the capture
/// can still be ended. `rmm/tests/graph.rs` checks that one of the two
/// happens cleanly (on the H200, 2026-12-02, it passed; which of the two
/// was not recorded).
///
/// [`ManagedMemoryResource`]: super::ManagedMemoryResource
/// [`CudaAsyncMemoryResource`]: super::CudaAsyncMemoryResource
///
/// ```no_run
/// use rmm::mr::{CudaAsyncManagedMemoryResource, MemoryResource};
/// let mr = CudaAsyncManagedMemoryResource::new()?;
/// let s = rmm::CudaStream::new()?;
/// let p = mr.allocate(1 << 20, 256, s.view())?;
/// unsafe { mr.deallocate(p, 1 << 20, 256, s.view()) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CudaAsyncManagedMemoryResource {
    pool: PoolHandle,
    device: DeviceId,
}

impl CudaAsyncManagedMemoryResource {
    const NAME: &'static str = "CudaAsyncManagedMemoryResource";

    /// The resource over the current device's default managed pool.
    ///
    /// # Errors
    /// [`Error::Logic`](crate::Error::Logic) when the driver is older than
    /// CUDA 13 or the device has no managed pool;
    /// [`Error::DriverUnavailable`](crate::Error::DriverUnavailable)
    /// without a driver.
    pub fn new() -> Result<Self> {
        let device = current_device()?;
        let pool = driver::mem_managed_default_pool(device.0)?;
        Ok(CudaAsyncManagedMemoryResource { pool, device })
    }

    /// The driver pool handle (`CUmemoryPool` as an integer).
    pub fn pool_handle(&self) -> usize {
        self.pool.as_raw()
    }

    /// The driver pool, a device's default pool (live for the process).
    pub(crate) fn pool(&self) -> PoolHandle {
        self.pool
    }

    /// Bytes the pool currently holds from the driver.
    ///
    /// # Errors
    /// The driver's error.
    pub fn reserved_bytes(&self) -> Result<u64> {
        let attr = PoolAttribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
        // SAFETY: a device's default pool lives as long as its primary
        // context, i.e. the process.
        unsafe { driver::mem_pool_get_u64(self.pool, attr) }
    }
}

impl MemoryResource for CudaAsyncManagedMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        // SAFETY: a device's default pool lives as long as its primary
        // context, i.e. the process.
        unsafe { pool_allocate(Self::NAME, self.pool, self.device, bytes, alignment, stream) }
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, _bytes: usize, _alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { pool_deallocate(Self::NAME, self.device, ptr, stream) }
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        pool_of(other) == Some(self.pool)
    }
    fn device(&self) -> Option<DeviceId> {
        Some(self.device)
    }
    fn is_host_accessible(&self) -> bool {
        true
    }
}
