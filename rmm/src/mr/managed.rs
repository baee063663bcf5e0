//! [`ManagedMemoryResource`]: `cuMemAllocManaged` / `cuMemFree`.

use super::{check_base_alignment, MemoryResource};
use crate::driver;
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Managed (unified) memory, accessible from host and device; the stream is
/// ignored. Stateless: all instances compare equal.
///
/// Do not ask for more managed memory than the GPU has free: oversubscribed
/// managed memory pages and can be very slow.
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
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            // cuMemAllocManaged rejects 0 bytes; RMM returns null.
            return Ok(DevicePtr::NULL);
        }
        driver::mem_alloc_managed(bytes)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, _bytes: usize, _alignment: usize, _stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the caller guarantees `ptr` came from `allocate`.
        if let Err(e) = unsafe { driver::mem_free(ptr) } {
            log::error!("ManagedMemoryResource: cuMemFree({ptr}) failed: {e}");
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other.downcast_ref::<ManagedMemoryResource>().is_some()
    }

    fn is_host_accessible(&self) -> bool {
        true
    }
}
