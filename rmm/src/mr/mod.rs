//! Memory resources: the [`MemoryResource`] trait, the type-erased
//! [`SharedResource`] handle, every resource, the adaptors and the per-device
//! current resource.
//!
//! | Resource | Memory | Notes |
//! |---|---|---|
//! | [`CudaMemoryResource`] | device, `cuMemAlloc` | stream ignored; the default per-device resource |
//! | [`ManagedMemoryResource`] | managed, `cuMemAllocManaged` | host and device accessible |
//! | [`CudaAsyncMemoryResource`] | device, its own driver pool | stream ordered; release threshold, export handles |
//! | [`CudaAsyncViewMemoryResource`] | device, an existing driver pool | does not own the pool |
//! | [`PinnedHostMemoryResource`] | pinned host, `cuMemHostAlloc` | host and device accessible |
//! | [`CallbackMemoryResource`] | whatever the callbacks return | for tests and bridges |
//! | [`SimulatedMemoryResource`] | none: addresses only | runs without a GPU; for tests and replays |
//! | [`PoolMemoryResource`] | sub-allocated from any upstream | coalescing best fit, O(log n), per-stream free lists |
//! | [`FixedSizeMemoryResource`] | sub-allocated from any upstream | blocks of one size, O(1) |
//! | [`BinningMemoryResource`] | bins by size, else the upstream | fixed-size bins or any resources |
//! | [`ArenaMemoryResource`] | one upstream allocation | per-thread / per-stream arenas of superblocks |
//! | [`VirtualPoolMemoryResource`] | device, `cuMemCreate` + `cuMemMap` | one contiguous range that grows; `release_unused` |
//!
//! Adaptors wrap an upstream resource and add one behaviour each; they stack
//! (see [`adaptors`]): [`AlignedAdaptor`], [`FailureCallbackAdaptor`],
//! [`LimitingAdaptor`], [`LoggingAdaptor`], [`PrefetchAdaptor`],
//! [`StatisticsAdaptor`], [`ThreadSafeAdaptor`], [`TrackingAdaptor`].
//!
//! [`by_name`] builds resources and adaptor stacks from names such as
//! `pool`, `simulated-arena` or `statistics_pool_unchecked` (the programs'
//! `--resource` options and the benchmarks use it).
//!
//! Every resource is cheap to clone (clones share state and compare equal)
//! and is `Send + Sync`: all of them may be used from many threads at once.
//!
//! # Zero bytes, alignment and out-of-memory
//! * `allocate(0, ..)` returns [`DevicePtr::NULL`] and `deallocate` of the null
//!   pointer does nothing.
//! * Base resources support power-of-two alignments up to
//!   [`CUDA_ALLOCATION_ALIGNMENT`] (256); anything else is [`Error::BadAlloc`].
//!   Every pointer they return is 256-byte aligned.
//! * Exhausted memory is [`Error::OutOfMemory`] (message contains
//!   `out_of_memory`); other allocation failures are [`Error::BadAlloc`] or
//!   [`Error::Cuda`].
//!
//! # Misuse is detected, never trusted
//! A free must name a pointer the resource handed out and is still live,
//! with the size it was requested with. The sub-allocators
//! ([`PoolMemoryResource`], [`FixedSizeMemoryResource`],
//! [`VirtualPoolMemoryResource`], [`ArenaMemoryResource`],
//! [`BinningMemoryResource`]), the [`LimitingAdaptor`], the
//! [`StatisticsAdaptor`] and the [`SimulatedMemoryResource`] keep a record of the live allocations
//! (address → requested bytes, one hash operation per call) and check every
//! free against it: a double free, a foreign, never-allocated or interior
//! pointer, or a wrong size is logged at error level (resource, pointer,
//! sizes), counted (`bad_frees()`) and ignored, so no later allocation
//! overlaps a live one and no counter drifts. `deallocate` never panics.
//! (The [`TrackingAdaptor`] refuses untracked pointers alike; a wrong size
//! there is logged and the block freed with its recorded size.)
//! The check can be turned off for measured hot paths with trusted callers
//! (`unchecked_frees` on the options or adaptor); it is on by default.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::align::{is_supported_alignment, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

pub mod adaptors;
mod arena;
mod arena_book;
mod binning;
pub mod by_name;
mod callback;
mod cuda;
mod cuda_async;
mod fixed_size;
pub mod free_list;
mod live_set;
mod managed;
pub mod per_device;
mod pinned;
mod pool;
mod simulated;
mod stream_ordered;
mod vm_pool;

pub use adaptors::{
    AlignedAdaptor, AllocationInfo, Counter, FailureCallback, FailureCallbackAdaptor, LimitingAdaptor,
    LoggingAdaptor, PrefetchAdaptor, StatisticsAdaptor, ThreadSafeAdaptor, TrackingAdaptor,
};
pub use arena::{ArenaMemoryResource, ArenaOptions};
pub use binning::BinningMemoryResource;
pub use callback::{AllocateCallback, CallbackMemoryResource, DeallocateCallback};
pub use cuda::CudaMemoryResource;
pub use cuda_async::{
    CudaAsyncMemoryResource, CudaAsyncOptions, CudaAsyncViewMemoryResource, ExportHandleType,
};
pub use fixed_size::{FixedSizeMemoryResource, FixedSizeOptions};
pub use managed::ManagedMemoryResource;
pub use per_device::{
    current_device_resource, per_device_resource, reset_current_device_resource, reset_per_device_resource,
    set_current_device_resource, set_per_device_resource,
};
pub use pinned::PinnedHostMemoryResource;
pub use pool::{PoolMemoryResource, PoolOptions};
pub use simulated::SimulatedMemoryResource;
pub use vm_pool::{VirtualPoolMemoryResource, VirtualPoolOptions};

/// A stream-ordered memory allocator (RMM's `cuda::mr::resource` concept).
///
/// `allocate` returns memory that is usable in the order of `stream`;
/// `deallocate` returns it, and the memory may be reused by work ordered
/// after `stream`'s current work. The trait is object safe; containers and
/// the per-device registry hold resources as [`SharedResource`].
///
/// # Implementing
/// `deallocate` never panics: errors are logged through the `log` facade.
/// `is_equal` is true when memory from one resource may be freed through the
/// other (for shared-state resources: same state).
pub trait MemoryResource: Send + Sync + fmt::Debug + Any {
    /// Allocates `bytes` (0 gives [`DevicePtr::NULL`]) aligned to `alignment`
    /// (a power of two), usable in `stream` order.
    ///
    /// # Errors
    /// [`Error::OutOfMemory`] when memory is exhausted, [`Error::BadAlloc`]
    /// for an unsupported alignment, [`Error::Cuda`] for driver failures.
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr>;

    /// Returns memory to the resource, ordered after `stream`'s current work.
    ///
    /// # Safety
    /// `ptr` came from `allocate` on a resource equal to this one with the
    /// same `bytes` and `alignment`, is not freed twice, and no work ordered
    /// after this call on `stream` (or not ordered with it) uses it.
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView);

    /// Allocates on the default stream and waits for it.
    ///
    /// # Errors
    /// As [`allocate`](Self::allocate), plus a failed synchronisation.
    fn allocate_sync(&self, bytes: usize, alignment: usize) -> Result<DevicePtr> {
        let p = self.allocate(bytes, alignment, CudaStreamView::DEFAULT)?;
        if !self.is_simulated() {
            if let Err(e) = CudaStreamView::DEFAULT.synchronize() {
                // SAFETY: `p` was just allocated with these arguments and never used.
                unsafe { self.deallocate(p, bytes, alignment, CudaStreamView::DEFAULT) };
                return Err(e);
            }
        }
        Ok(p)
    }

    /// Frees memory from [`allocate_sync`](Self::allocate_sync).
    ///
    /// # Safety
    /// As [`deallocate`](Self::deallocate); the memory is no longer in use by
    /// any stream.
    unsafe fn deallocate_sync(&self, ptr: DevicePtr, bytes: usize, alignment: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.deallocate(ptr, bytes, alignment, CudaStreamView::DEFAULT) }
    }

    /// True when memory from `other` may be freed through `self` and back.
    fn is_equal(&self, other: &dyn MemoryResource) -> bool;

    /// True when the GPU can access the memory.
    fn is_device_accessible(&self) -> bool {
        true
    }

    /// True when the host can access the memory.
    fn is_host_accessible(&self) -> bool {
        false
    }

    /// The device this resource was created for, where it is bound to one.
    fn device(&self) -> Option<DeviceId> {
        None
    }

    /// True when no GPU is behind the resource (the simulated resource and
    /// adaptors over it): streams are then never synchronised nor recorded.
    fn is_simulated(&self) -> bool {
        false
    }

    /// The free memory this resource holds for reuse, for fragmentation
    /// reports (e.g. by [`crate::replay`]). Sub-allocators that keep free
    /// blocks report them; the default, `None`, means "not known".
    fn free_block_stats(&self) -> Option<FreeBlockStats> {
        None
    }

    /// `self` as `Any`, for [`is_equal`](Self::is_equal) implementations.
    fn as_any(&self) -> &dyn Any;
}

/// Free memory held by a sub-allocator, as reported by
/// [`MemoryResource::free_block_stats`].
///
/// ```
/// use rmm::mr::FreeBlockStats;
/// let s = FreeBlockStats { free_bytes: 1000, largest_free_block: 250, free_blocks: 4 };
/// assert!((s.fragmentation() - 0.75).abs() < 1e-12);
/// assert_eq!(FreeBlockStats::default().fragmentation(), 0.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FreeBlockStats {
    /// Bytes held free, in all blocks.
    pub free_bytes: usize,
    /// Size of the largest free block.
    pub largest_free_block: usize,
    /// Number of free blocks.
    pub free_blocks: usize,
}

impl FreeBlockStats {
    /// `1 - largest_free_block / free_bytes`: 0 when all free memory is one
    /// block (or there is none), close to 1 when it is scattered.
    pub fn fragmentation(&self) -> f64 {
        if self.free_bytes == 0 {
            0.0
        } else {
            1.0 - self.largest_free_block as f64 / self.free_bytes as f64
        }
    }
}

impl dyn MemoryResource {
    /// Downcasts to a concrete resource, looking through [`SharedResource`].
    pub fn downcast_ref<T: MemoryResource>(&self) -> Option<&T> {
        let any = self.as_any();
        if let Some(shared) = any.downcast_ref::<SharedResource>() {
            return shared.inner().downcast_ref::<T>();
        }
        any.downcast_ref::<T>()
    }
}

/// A type-erased, reference-counted owning handle to any resource.
///
/// Cloning bumps a reference count; all clones are the same resource. It is
/// what containers, execution policies and the per-device registry store, and
/// it is itself a [`MemoryResource`].
///
/// ```
/// use rmm::mr::{MemoryResource, SharedResource, SimulatedMemoryResource};
/// let sim = SimulatedMemoryResource::new(1 << 30);
/// let shared = SharedResource::new(sim.clone());
/// assert!(shared.is_equal(&sim));
/// let p = shared.allocate(1000, 256, rmm::CudaStreamView::DEFAULT)?;
/// assert!(p.is_aligned(256));
/// unsafe { shared.deallocate(p, 1000, 256, rmm::CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Clone)]
pub struct SharedResource(Arc<dyn MemoryResource>);

impl SharedResource {
    /// Wraps a resource (a `SharedResource` is not wrapped twice).
    pub fn new<R: MemoryResource>(resource: R) -> Self {
        let any: &dyn Any = &resource;
        if let Some(shared) = any.downcast_ref::<SharedResource>() {
            return shared.clone();
        }
        SharedResource(Arc::new(resource))
    }

    /// Wraps an existing `Arc`.
    pub fn from_arc(resource: Arc<dyn MemoryResource>) -> Self {
        SharedResource(resource)
    }

    /// The resource inside.
    pub fn inner(&self) -> &dyn MemoryResource {
        &*self.0
    }

    /// True when both handles hold the very same object.
    pub fn ptr_eq(&self, other: &SharedResource) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl fmt::Debug for SharedResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedResource").field(&self.0).finish()
    }
}

impl MemoryResource for SharedResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        self.0.allocate(bytes, alignment, stream)
    }
    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        // SAFETY: forwarded contract.
        unsafe { self.0.deallocate(ptr, bytes, alignment, stream) }
    }
    fn allocate_sync(&self, bytes: usize, alignment: usize) -> Result<DevicePtr> {
        self.0.allocate_sync(bytes, alignment)
    }
    unsafe fn deallocate_sync(&self, ptr: DevicePtr, bytes: usize, alignment: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.0.deallocate_sync(ptr, bytes, alignment) }
    }
    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        self.0.is_equal(other)
    }
    fn is_device_accessible(&self) -> bool {
        self.0.is_device_accessible()
    }
    fn is_host_accessible(&self) -> bool {
        self.0.is_host_accessible()
    }
    fn device(&self) -> Option<DeviceId> {
        self.0.device()
    }
    fn is_simulated(&self) -> bool {
        self.0.is_simulated()
    }
    fn free_block_stats(&self) -> Option<FreeBlockStats> {
        self.0.free_block_stats()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The device a sub-allocator over `upstream` serves: the upstream's own
/// ([`MemoryResource::device`]) or, for a stateless upstream of device
/// memory such as [`CudaMemoryResource`], the device current at the call
/// (sub-allocators call it at construction). `None` over simulated, pinned
/// host and managed memory, which no single device owns.
///
/// # Errors
/// The driver's error when the current device cannot be read.
pub(crate) fn bound_device<U: MemoryResource + ?Sized>(upstream: &U) -> Result<Option<DeviceId>> {
    if let Some(d) = upstream.device() {
        return Ok(Some(d));
    }
    if upstream.is_simulated() || !upstream.is_device_accessible() || upstream.is_host_accessible() {
        return Ok(None);
    }
    crate::device::current_device().map(Some)
}

/// Waits for every use of a sub-allocator's memory before it is handed
/// back or reorganised: makes `device` (when there is one) current, then
/// synchronises it (not when `simulated`). Keep the returned guard while
/// returning memory; it restores the previous device. Runs from places that
/// cannot fail, such as `Drop`, so failures are logged as
/// "`what`: ... `why`", never raised.
pub(crate) fn quiesce_device(
    what: &str,
    why: &str,
    device: Option<DeviceId>,
    simulated: bool,
) -> Option<crate::device::DeviceGuard> {
    let guard = device.and_then(|device| match crate::device::DeviceGuard::new(device) {
        Ok(g) => Some(g),
        Err(e) => {
            log::error!("{what}: could not make {device} current {why}: {e}");
            None
        }
    });
    if !simulated {
        if let Err(e) = crate::driver::device_synchronize() {
            log::error!("{what}: device synchronize {why} failed: {e}");
        }
    }
    guard
}

/// Checks an alignment for a base resource: a power of two no larger than 256.
///
/// # Errors
/// [`Error::BadAlloc`] naming the alignment.
pub fn check_base_alignment(alignment: usize) -> Result<()> {
    if is_supported_alignment(alignment) {
        Ok(())
    } else {
        Err(Error::BadAlloc(format!(
            "unsupported alignment {alignment}: must be a power of two no larger than {CUDA_ALLOCATION_ALIGNMENT}"
        )))
    }
}

/// Checks an alignment for resources that accept any power of two.
///
/// # Errors
/// [`Error::BadAlloc`] when `alignment` is not a power of two (the same
/// variant as [`check_base_alignment`], so every resource and adaptor
/// reports a bad alignment alike).
pub fn check_pow2_alignment(alignment: usize) -> Result<()> {
    if crate::align::is_pow2(alignment) {
        Ok(())
    } else {
        Err(Error::BadAlloc(format!(
            "unsupported alignment {alignment}: must be a power of two"
        )))
    }
}
