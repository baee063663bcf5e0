//! [`PinnedHostMemoryResource`]: `cuMemHostAlloc` / `cuMemFreeHost`.

use super::{check_base_alignment, MemoryResource};
use crate::driver;
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Page-locked host memory, mapped into the device's address space, so the
/// host and the GPU can both access it; the stream is ignored. Pinned memory
/// is page aligned, which satisfies every supported alignment. Stateless.
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
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        driver::mem_host_alloc(bytes)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _bytes: usize, _alignment: usize, _stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the caller guarantees `ptr` came from `allocate`.
        if let Err(e) = unsafe { driver::mem_free_host(ptr) } {
            log::error!("PinnedHostMemoryResource: cuMemFreeHost({ptr}) failed: {e}");
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<PinnedHostMemoryResource>().is_some()
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}
