//! [`CallbackMemoryResource`]: allocation by user closures.

use crate::mr::forensics::reported;
use std::fmt;
use std::sync::Arc;

use super::detail::graph_memory::{GraphMemory, OwnSharedPath};
use super::{GraphMemoryStats, MemoryResource};
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Allocate callback: `(bytes, alignment, stream) -> pointer`.
pub type AllocateCallback = dyn Fn(usize, usize, CudaStreamView) -> Result<DevicePtr> + Send + Sync;
/// Deallocate callback: `(pointer, bytes, alignment, stream)`; must not panic.
pub type DeallocateCallback = dyn Fn(DevicePtr, usize, usize, CudaStreamView) + Send + Sync;

/// A resource whose allocate and deallocate are closures (RMM's
/// `callback_memory_resource`; the closures capture what RMM passes as
/// `void*` arguments). Clones share the closures and compare equal.
///
/// Zero-byte requests are passed to the callback as they are.
///
/// ```
/// use rmm::mr::{CallbackMemoryResource, MemoryResource, SimulatedMemoryResource};
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// let sim = SimulatedMemoryResource::new(1 << 20);
/// let calls = Arc::new(AtomicUsize::new(0));
/// let (a, d, c) = (sim.clone(), sim.clone(), calls.clone());
/// let mr = CallbackMemoryResource::new(
///     move |bytes, align, s| { c.fetch_add(1, Ordering::Relaxed); a.allocate(bytes, align, s) },
///     move |p, bytes, align, s| unsafe { d.deallocate(p, bytes, align, s) },
/// );
/// let p = mr.allocate(512, 256, rmm::CudaStreamView::DEFAULT)?;
/// unsafe { mr.deallocate(p, 512, 256, rmm::CudaStreamView::DEFAULT) };
/// assert_eq!(calls.load(Ordering::Relaxed), 1);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Clone)]
pub struct CallbackMemoryResource {
    inner: Arc<Callbacks>,
    /// The graph-private pools.
    graph: Arc<GraphMemory>,
}

struct Callbacks {
    allocate: Box<AllocateCallback>,
    deallocate: Box<DeallocateCallback>,
    device_accessible: bool,
    host_accessible: bool,
    simulated: bool,
}

impl CallbackMemoryResource {
    /// A device-accessible resource over the two closures.
    pub fn new<A, D>(allocate: A, deallocate: D) -> Self
    where
        A: Fn(usize, usize, CudaStreamView) -> Result<DevicePtr> + Send + Sync + 'static,
        D: Fn(DevicePtr, usize, usize, CudaStreamView) + Send + Sync + 'static,
    {
        Self::with_accessibility(allocate, deallocate, true, false)
    }

    /// As [`new`](Self::new), declaring where the memory is accessible.
    pub fn with_accessibility<A, D>(allocate: A, deallocate: D, device: bool, host: bool) -> Self
    where
        A: Fn(usize, usize, CudaStreamView) -> Result<DevicePtr> + Send + Sync + 'static,
        D: Fn(DevicePtr, usize, usize, CudaStreamView) + Send + Sync + 'static,
    {
        CallbackMemoryResource {
            inner: Arc::new(Callbacks {
                allocate: Box::new(allocate),
                deallocate: Box::new(deallocate),
                device_accessible: device,
                host_accessible: host,
                simulated: false,
            }),
            graph: GraphMemory::new(),
        }
    }

    /// Declares that the callbacks never use a GPU (they wrap a
    /// [`SimulatedMemoryResource`](super::SimulatedMemoryResource), say), so
    /// streams are never synchronised. Call it on a fresh resource, before it
    /// is cloned; on a clone it returns the resource unchanged.
    pub fn without_gpu(mut self) -> Self {
        if let Some(c) = Arc::get_mut(&mut self.inner) {
            c.simulated = true;
        }
        self
    }
}

impl fmt::Debug for CallbackMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackMemoryResource")
            .field("at", &Arc::as_ptr(&self.inner))
            .finish()
    }
}

impl MemoryResource for CallbackMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            if let Some(p) = self.graph.allocate_own(self, bytes, alignment, stream)? {
                return Ok(p);
            }
            (self.inner.allocate)(bytes, alignment, stream)
        })
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if self.graph.deallocate_own(self, ptr, bytes, alignment, stream) {
            return;
        }
        (self.inner.deallocate)(ptr, bytes, alignment, stream)
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<CallbackMemoryResource>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }
    fn is_device_accessible(&self) -> bool {
        self.inner.device_accessible
    }
    fn is_host_accessible(&self) -> bool {
        self.inner.host_accessible
    }
    fn is_simulated(&self) -> bool {
        self.inner.simulated
    }
    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(self.graph.stats())
    }
}

impl OwnSharedPath for CallbackMemoryResource {
    const NAME: &'static str = "CallbackMemoryResource";
    fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}
