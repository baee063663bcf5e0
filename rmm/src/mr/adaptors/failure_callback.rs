//! [`FailureCallbackAdaptor`]: retry allocations after an out-of-memory callback.

use crate::mr::forensics::{nested, notify_oom_observers, ReportOom};
use std::fmt;
use std::sync::Arc;

use crate::error::Result;
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// The callback of a [`FailureCallbackAdaptor`]: given the size that failed,
/// returns `true` to retry the allocation (after freeing or spilling memory)
/// or `false` to give up.
pub type FailureCallback = dyn Fn(usize) -> bool + Send + Sync;

/// Calls a callback when the upstream runs out of memory, and retries while
/// the callback returns `true` (RMM's `failure_callback_resource_adaptor`;
/// the hook for spilling).
///
/// Only [`Error::OutOfMemory`](crate::Error::OutOfMemory) triggers the
/// callback; other errors are returned at once. When the callback gives up,
/// the last out-of-memory error is returned. The callback runs on the
/// allocating thread with no lock held, so it may free memory through this
/// very adaptor. Thread safe when the upstream and the callback are; several
/// threads may be inside the callback at once.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use rmm::mr::{FailureCallbackAdaptor, MemoryResource, SimulatedMemoryResource};
/// let calls = Arc::new(AtomicUsize::new(0));
/// let c = calls.clone();
/// let mr = FailureCallbackAdaptor::new(SimulatedMemoryResource::new(1 << 20), move |_bytes| {
///     c.fetch_add(1, Ordering::SeqCst) < 2 // retry twice, then give up
/// });
/// assert!(mr.allocate(1 << 30, 256, rmm::CudaStreamView::DEFAULT).unwrap_err().is_out_of_memory());
/// assert_eq!(calls.load(Ordering::SeqCst), 3);
/// ```
pub struct FailureCallbackAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

struct Inner<U> {
    upstream: U,
    callback: Box<FailureCallback>,
}

impl<U: MemoryResource> fmt::Debug for FailureCallbackAdaptor<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FailureCallbackAdaptor")
            .field("upstream", &self.inner.upstream)
            .finish_non_exhaustive()
    }
}

impl<U: MemoryResource> Clone for FailureCallbackAdaptor<U> {
    fn clone(&self) -> Self {
        FailureCallbackAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> FailureCallbackAdaptor<U> {
    /// Wraps `upstream`; `callback(bytes)` decides whether to retry.
    pub fn new(upstream: U, callback: impl Fn(usize) -> bool + Send + Sync + 'static) -> Self {
        FailureCallbackAdaptor {
            inner: Arc::new(Inner {
                upstream,
                callback: Box::new(callback),
            }),
        }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }
}

impl<U: MemoryResource> MemoryResource for FailureCallbackAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        let mut attempts = 0usize;
        loop {
            let attempt = nested(|| self.inner.upstream.allocate(bytes, alignment, stream))
                .report_oom(self, bytes, alignment, stream);
            match attempt {
                Err(e) if e.is_out_of_memory() => {
                    // Observers see every failure before the callback and its retry.
                    notify_oom_observers(&e);
                    attempts += 1;
                    if (self.inner.callback)(bytes) {
                        log::debug!("FailureCallbackAdaptor: retrying {bytes} bytes (attempt {attempts})");
                        continue;
                    }
                    log::error!("FailureCallbackAdaptor: callback gave up after {attempts} failure(s): {e}");
                    return Err(e);
                }
                other => return other,
            }
        }
    }

    forward_to_upstream!(deallocate);
}
