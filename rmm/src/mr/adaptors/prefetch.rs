//! [`PrefetchAdaptor`]: prefetch managed memory after allocation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::lock;
use crate::device::current_device;
use crate::driver;
use crate::error::{Error, Result};
use crate::graph::capture_of;
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// `CUDA_ERROR_INVALID_VALUE`: what prefetching memory that is not managed returns.
const CUDA_ERROR_INVALID_VALUE: u32 = 1;

/// After each allocation, prefetches the memory to the current device on the
/// allocation's stream (RMM's `prefetch_resource_adaptor`), so that managed
/// memory is resident before the first kernel touches it.
///
/// Prefetching is a hint: it is skipped for devices without concurrent
/// managed access and for simulated upstreams, the driver's "invalid value"
/// answer for memory that is not managed is ignored, and any other prefetch
/// failure is logged at error level while the allocation still succeeds.
/// No prefetch is issued on a capturing stream.
/// Thread safe when the upstream is.
///
/// ```no_run
/// use rmm::mr::{ManagedMemoryResource, MemoryResource, PrefetchAdaptor};
/// let mr = PrefetchAdaptor::new(ManagedMemoryResource::new());
/// let s = rmm::CudaStream::new()?;
/// let p = mr.allocate(1 << 20, 256, s.view())?; // resident on the GPU in `s` order
/// unsafe { mr.deallocate(p, 1 << 20, 256, s.view()) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct PrefetchAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

#[derive(Debug)]
struct Inner<U> {
    upstream: U,
    /// Device ordinal -> whether it supports concurrent managed access.
    concurrent: Mutex<HashMap<i32, bool>>,
}

impl<U: MemoryResource> Clone for PrefetchAdaptor<U> {
    fn clone(&self) -> Self {
        PrefetchAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> PrefetchAdaptor<U> {
    /// Prefetches what `upstream` allocates.
    pub fn new(upstream: U) -> Self {
        PrefetchAdaptor {
            inner: Arc::new(Inner {
                upstream,
                concurrent: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    fn concurrent_managed_access(&self, device: i32) -> Result<bool> {
        if let Some(&known) = lock(&self.inner.concurrent).get(&device) {
            return Ok(known);
        }
        let supported = driver::supports_concurrent_managed_access(device)?;
        lock(&self.inner.concurrent).insert(device, supported);
        Ok(supported)
    }

    fn prefetch(&self, ptr: DevicePtr, bytes: usize, stream: CudaStreamView) -> Result<()> {
        let device = current_device()?.value();
        if !self.concurrent_managed_access(device)? {
            return Ok(());
        }
        match stream.prefetch(ptr, bytes, device) {
            Err(Error::Cuda {
                code: CUDA_ERROR_INVALID_VALUE,
                ..
            }) => Ok(()),
            other => other,
        }
    }
}

impl<U: MemoryResource> MemoryResource for PrefetchAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        let p = self.inner.upstream.allocate(bytes, alignment, stream)?;
        // A prefetch is a hint: none is issued on a capturing stream (the
        // driver may refuse it there and invalidate the capture).
        if !p.is_null() && !self.inner.upstream.is_simulated() && matches!(capture_of(stream), Ok(None)) {
            if let Err(e) = self.prefetch(p, bytes, stream) {
                log::error!("PrefetchAdaptor: prefetch of {p} ({bytes} bytes) failed: {e}");
            }
        }
        Ok(p)
    }

    forward_to_upstream!(deallocate);
}
