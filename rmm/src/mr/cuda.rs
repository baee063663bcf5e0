//! [`CudaMemoryResource`]: `cuMemAlloc` / `cuMemFree`.

use super::{check_base_alignment, MemoryResource};
use crate::driver;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Device memory from `cuMemAlloc` (`cudaMalloc`); the stream is ignored and
/// both calls synchronise the device as the driver does.
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
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        driver::mem_alloc(bytes).map_err(|e| match e {
            Error::OutOfMemory { requested, reason } => Error::OutOfMemory {
                requested,
                reason: format!("CudaMemoryResource: {reason}"),
            },
            other => other,
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _bytes: usize, _alignment: usize, _stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the caller guarantees `ptr` came from `allocate` (cuMemAlloc).
        if let Err(e) = unsafe { driver::mem_free(ptr) } {
            log::error!("CudaMemoryResource: cuMemFree({ptr}) failed: {e}");
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<CudaMemoryResource>().is_some()
    }
}
