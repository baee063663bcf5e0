//! [`ThreadSafeAdaptor`]: a mutex around the upstream.

use crate::mr::forensics::reported;
use std::sync::{Arc, Mutex};

use super::lock;
use crate::error::Result;
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Serialises every upstream `allocate` and `deallocate` behind one mutex
/// (RMM's `thread_safe_resource_adaptor`).
///
/// Every resource in this crate is already thread safe; this adaptor is for
/// upstreams whose own locking is in doubt (e.g. a [`CallbackMemoryResource`]
/// over a non-reentrant allocator).
///
/// [`CallbackMemoryResource`]: crate::mr::CallbackMemoryResource
///
/// ```
/// use rmm::mr::{MemoryResource, SimulatedMemoryResource, ThreadSafeAdaptor};
/// let mr = ThreadSafeAdaptor::new(SimulatedMemoryResource::new(1 << 30));
/// let p = mr.allocate(64, 256, rmm::CudaStreamView::DEFAULT)?;
/// unsafe { mr.deallocate(p, 64, 256, rmm::CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct ThreadSafeAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

#[derive(Debug)]
struct Inner<U> {
    upstream: U,
    mutex: Mutex<()>,
}

impl<U: MemoryResource> Clone for ThreadSafeAdaptor<U> {
    fn clone(&self) -> Self {
        ThreadSafeAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> ThreadSafeAdaptor<U> {
    /// Wraps `upstream`.
    pub fn new(upstream: U) -> Self {
        ThreadSafeAdaptor {
            inner: Arc::new(Inner {
                upstream,
                mutex: Mutex::new(()),
            }),
        }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }
}

impl<U: MemoryResource> ThreadSafeAdaptor<U> {
    /// What the adaptor adds to a free: `free` runs under the mutex.
    fn serialised_free(&self, _ptr: DevicePtr, _bytes: usize, _stream: CudaStreamView, free: impl FnOnce()) {
        let _guard = lock(&self.inner.mutex);
        free();
    }
}

impl<U: MemoryResource> MemoryResource for ThreadSafeAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            let _guard = lock(&self.inner.mutex);
            self.inner.upstream.allocate(bytes, alignment, stream)
        })
    }

    forward_to_upstream!(deallocate around serialised_free);
}
