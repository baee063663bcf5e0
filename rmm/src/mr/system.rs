//! [`SystemMemoryResource`]: plain host allocations (`std::alloc`) used
//! from the device, on systems where the device can access pageable memory.

use crate::mr::forensics::reported;
use std::alloc::Layout;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::detail::graph_memory::{GraphMemory, OwnSharedPath};
use super::detail::live_set::LiveSet;
use super::{check_base_alignment, GraphMemoryStats, MemoryResource};
use crate::align::CUDA_ALLOCATION_ALIGNMENT;
use crate::device::DeviceId;
use crate::driver;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// System memory: plain host allocations from the global allocator
/// (`std::alloc`, 256-byte aligned) that the GPU uses directly (RMM's
/// `system_memory_resource`, "SAM", system-allocated memory).
///
/// Only systems whose GPUs can access pageable host memory run it for
/// real: hardware address translation (ATS) on Grace Hopper and Grace
/// Blackwell, or Linux HMM with NVIDIA's open kernel modules. The driver
/// reports it as `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`; on other
/// systems (most x86 machines, among them the project's H200 machine)
/// [`new`](Self::new) returns [`Error::Logic`] saying that the device cannot
/// access pageable memory.
///
/// Memory from it is host and device accessible; the stream is ignored by
/// `allocate`, and `deallocate` synchronises the stream before it frees (the
/// GPU may still be using the memory; RMM does the same). A stream that
/// cannot be synchronised leaves the memory allocated (logged), since the
/// GPU might still write to it.
///
/// Frees are checked against the live allocations: a double free, a
/// foreign, never-allocated or interior pointer or a wrong size is logged,
/// counted ([`bad_frees`](Self::bad_frees)) and ignored, never passed to
/// the allocator. Clones share that record and compare equal; separate
/// instances do not.
///
/// [`without_gpu`](Self::without_gpu) gives the same host allocations with
/// no device behind them (no driver call, no stream is touched), so
/// sub-allocators and tests over system memory run on machines without a
/// GPU.
///
/// ```
/// use rmm::mr::{MemoryResource, SystemMemoryResource};
/// // On a GPU with pageable memory access: SystemMemoryResource::new()?.
/// let mr = SystemMemoryResource::without_gpu();
/// let p = mr.allocate_sync(1000, 256)?;
/// assert!(p.is_aligned(256) && mr.is_host_accessible());
/// assert_eq!(mr.allocated_bytes(), 1000);
/// // SAFETY: `p` came from `mr` with these arguments.
/// unsafe { mr.deallocate_sync(p, 1000, 256) };
/// // A second free is refused and logged, not passed on.
/// unsafe { mr.deallocate_sync(p, 1000, 256) };
/// assert_eq!((mr.live_allocations(), mr.bad_frees()), (0, 1));
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SystemMemoryResource {
    host: Arc<HostAllocations>,
    /// The graph-private pools.
    graph: Arc<GraphMemory>,
}

impl SystemMemoryResource {
    /// System memory for the current device.
    ///
    /// # Errors
    /// [`Error::Logic`] when the current device cannot access pageable
    /// memory (the message names the device and
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`); the driver's error
    /// when there is no usable GPU.
    ///
    /// ```no_run
    /// use rmm::mr::SystemMemoryResource;
    /// match SystemMemoryResource::new() {
    ///     Ok(mr) => println!("system memory usable from the GPU: {mr:?}"),
    ///     Err(e) => println!("{e}"), // e.g. no pageable memory access on x86
    /// }
    /// ```
    pub fn new() -> Result<Self> {
        let device = pageable_access_device("SystemMemoryResource")?;
        Ok(SystemMemoryResource {
            host: Arc::new(HostAllocations::new("SystemMemoryResource", Some(device))),
            graph: GraphMemory::new(),
        })
    }

    /// The same host allocations with no GPU behind them: no driver call
    /// is made and streams are never synchronised; the resource reports
    /// [`is_simulated`](MemoryResource::is_simulated). For tests and for
    /// sub-allocators over host memory on machines without a GPU.
    pub fn without_gpu() -> Self {
        SystemMemoryResource {
            host: Arc::new(HostAllocations::new("SystemMemoryResource", None)),
            graph: GraphMemory::new(),
        }
    }

    /// Bytes allocated and not yet freed (as requested).
    pub fn allocated_bytes(&self) -> usize {
        self.host.allocated_bytes()
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.host.live_allocations()
    }

    /// Frees refused so far (unknown pointer or wrong size).
    pub fn bad_frees(&self) -> usize {
        self.host.bad_frees()
    }
}

impl MemoryResource for SystemMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            if let Some(p) = self.graph.allocate_own(self, bytes, alignment, stream)? {
                return Ok(p);
            }
            self.host.allocate(bytes, alignment)
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if self.graph.deallocate_own(self, ptr, bytes, alignment, stream) {
            return;
        }
        if self.host.take(ptr, bytes) {
            self.host.free_taken(ptr, bytes, Some(stream));
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<SystemMemoryResource>()
            .is_some_and(|o| Arc::ptr_eq(&o.host, &self.host))
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(self.graph.stats())
    }

    fn is_simulated(&self) -> bool {
        self.host.device().is_none()
    }
}

/// The current device, when it can access pageable memory.
///
/// # Errors
/// [`Error::Logic`] naming the device and the attribute when it cannot
/// (`what` is the resource, for the message); the driver's error.
pub(crate) fn pageable_access_device(what: &str) -> Result<DeviceId> {
    let device = crate::device::current_device()?;
    if driver::supports_pageable_memory_access(device.value())? {
        return Ok(device);
    }
    Err(Error::Logic(format!(
        "{what}: {device} cannot access pageable host memory \
         (CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS = 0); system memory resources need \
         a system with address translation services or HMM (e.g. Grace Hopper, or Linux \
         HMM with NVIDIA's open kernel modules)"
    )))
}

impl OwnSharedPath for SystemMemoryResource {
    const NAME: &'static str = "SystemMemoryResource";
    fn handles(&self) -> usize {
        Arc::strong_count(&self.host)
    }
}

/// The host allocations behind [`SystemMemoryResource`] and
/// [`SamHeadroomMemoryResource`](crate::mr::SamHeadroomMemoryResource):
/// `std::alloc` with 256-byte alignment, and the record of live allocations
/// that every free is checked against before the allocator sees it.
#[derive(Debug)]
pub(crate) struct HostAllocations {
    /// The resource, for log messages.
    name: &'static str,
    live: LiveSet,
    allocated: AtomicUsize,
    /// The device checked at construction; `None`: no GPU behind the memory.
    device: Option<DeviceId>,
}

impl HostAllocations {
    pub fn new(name: &'static str, device: Option<DeviceId>) -> Self {
        HostAllocations {
            name,
            live: LiveSet::default(),
            allocated: AtomicUsize::new(0),
            device,
        }
    }

    /// The device checked at construction (`None` without a GPU).
    pub fn device(&self) -> Option<DeviceId> {
        self.device
    }

    fn layout(&self, bytes: usize) -> Result<Layout> {
        Layout::from_size_align(bytes, CUDA_ALLOCATION_ALIGNMENT).map_err(|_| Error::OutOfMemory {
            requested: bytes,
            reason: format!("{}: size exceeds the address space", self.name),
            report: None,
        })
    }

    /// Allocates `bytes` (null for 0) of host memory, 256-byte aligned.
    ///
    /// # Errors
    /// [`Error::BadAlloc`] for an unsupported alignment;
    /// [`Error::OutOfMemory`] when the allocator has no memory.
    pub fn allocate(&self, bytes: usize, alignment: usize) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        let layout = self.layout(bytes)?;
        // SAFETY: `layout` has a non-zero size (checked above).
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return Err(Error::OutOfMemory {
                requested: bytes,
                reason: format!("{}: the system allocator has no memory", self.name),
                report: None,
            });
        }
        let addr = p.expose_provenance() as u64;
        // The allocator just handed the address out, so it is not live; a
        // clash is logged by the set as an internal error.
        self.live.insert(self.name, addr, bytes);
        self.allocated.fetch_add(bytes, Ordering::Relaxed);
        Ok(DevicePtr::new(addr))
    }

    /// Checks a free: true (and the allocation is no longer live) when
    /// `ptr` is a live allocation of `bytes`; the caller must then call
    /// [`free_taken`](Self::free_taken). False for null, and (logged,
    /// counted) for anything else.
    pub fn take(&self, ptr: DevicePtr, bytes: usize) -> bool {
        !ptr.is_null() && self.live.remove(self.name, ptr.addr(), bytes)
    }

    /// Returns an allocation that [`take`](Self::take) accepted to the
    /// allocator, after synchronising `stream` (when there is a GPU and a
    /// stream; `None`: the memory was never used). A failed
    /// synchronisation leaves the memory allocated (logged): the GPU may
    /// still use it.
    pub fn free_taken(&self, ptr: DevicePtr, bytes: usize, stream: Option<CudaStreamView>) {
        self.allocated.fetch_sub(bytes, Ordering::Relaxed);
        if let (Some(_), Some(stream)) = (self.device, stream) {
            if let Err(e) = stream.synchronize() {
                log::error!(
                    "{}: synchronizing {stream:?} before freeing {ptr} ({bytes} bytes) failed: {e}; \
                     the memory is leaked, not freed, since the GPU may still use it",
                    self.name
                );
                return;
            }
        }
        let Ok(layout) = self.layout(bytes) else {
            // Unreachable: the same layout was built when it was allocated.
            log::error!(
                "{}: no layout for {bytes} bytes at {ptr} (internal error)",
                self.name
            );
            return;
        };
        let p: *mut u8 = std::ptr::with_exposed_provenance_mut(ptr.addr() as usize);
        // SAFETY: `take` accepted `ptr`: it is the start of a live allocation
        // that `allocate` made with `std::alloc::alloc(layout)` for these
        // `bytes` (the record holds the requested size, checked equal), and
        // it was removed from the record under the shard lock, so it is
        // freed exactly once.
        unsafe { std::alloc::dealloc(p, layout) };
    }

    pub fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    pub fn live_allocations(&self) -> usize {
        self.live.len()
    }

    pub fn bad_frees(&self) -> usize {
        self.live.bad_frees()
    }
}

impl Drop for HostAllocations {
    fn drop(&mut self) {
        let live = self.live.len();
        if live > 0 {
            // Their sizes are known, but the GPU may still use them: leak.
            log::warn!(
                "{}: dropped with {live} live allocations ({} bytes); they are leaked",
                self.name,
                self.allocated_bytes()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_frees_are_refused_and_counted() {
        let mr = SystemMemoryResource::without_gpu();
        let s = CudaStreamView::DEFAULT;
        let p = mr.allocate(1000, 256, s).unwrap();
        // SAFETY: frees are checked; the bad ones are refused, never passed on.
        unsafe {
            mr.deallocate(p, 999, 256, s); // wrong size
            mr.deallocate(p.offset(256), 744, 256, s); // interior
            mr.deallocate(DevicePtr::new(0x1000), 64, 256, s); // foreign
        }
        assert_eq!((mr.bad_frees(), mr.live_allocations()), (3, 1));
        // Memory from another instance is refused too.
        let other = SystemMemoryResource::without_gpu();
        // SAFETY: `p` is foreign to `other`: the free is refused, never passed on.
        unsafe { other.deallocate(p, 1000, 256, s) };
        assert_eq!(other.bad_frees(), 1);
        assert!(!other.is_equal(&mr) && mr.is_equal(&mr.clone()));
        // SAFETY: `p` came from `mr` with these arguments and is not used again.
        unsafe { mr.deallocate(p, 1000, 256, s) };
        // SAFETY: a double free, which is refused, never passed on.
        unsafe { mr.deallocate(p, 1000, 256, s) }; // double
        assert_eq!(
            (mr.bad_frees(), mr.live_allocations(), mr.allocated_bytes()),
            (4, 0, 0)
        );
    }

    #[test]
    fn host_memory_is_real_and_aligned() {
        let mr = SystemMemoryResource::without_gpu();
        let p = mr.allocate_sync(4096, 64).unwrap();
        assert!(p.is_aligned(256));
        let ptr: *mut u8 = std::ptr::with_exposed_provenance_mut(p.addr() as usize);
        // SAFETY: 4096 writable bytes of host memory from `mr`, freed after.
        let bytes = unsafe { std::slice::from_raw_parts_mut(ptr, 4096) };
        bytes.fill(7);
        assert!(bytes.iter().all(|&b| b == 7));
        // SAFETY: `p` came from `mr` with these arguments and is not used again.
        unsafe { mr.deallocate_sync(p, 4096, 64) };
        assert!(mr.allocate(64, 512, CudaStreamView::DEFAULT).is_err());
        let e = mr.allocate(usize::MAX, 256, CudaStreamView::DEFAULT).unwrap_err();
        assert!(e.is_out_of_memory(), "{e}");
    }

    #[test]
    fn new_says_why_without_pageable_access() {
        match SystemMemoryResource::new() {
            Ok(mr) => assert!(!mr.is_simulated()),
            Err(e) => {
                let text = e.to_string();
                if crate::device::is_available() {
                    assert!(
                        text.contains("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS")
                            && text.contains("cannot access pageable"),
                        "{text}"
                    );
                }
            }
        }
    }
}
