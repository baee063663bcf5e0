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
//! | [`CudaAsyncManagedMemoryResource`] | managed, the device's default managed driver pool | stream-ordered; CUDA 13 drivers |
//! | [`PinnedHostMemoryResource`] | pinned host, `cuMemHostAlloc` | host and device accessible; pool it with [`PoolMemoryResource`] |
//! | [`SystemMemoryResource`] | system (pageable host), `std::alloc` | only where the GPU can access pageable memory (ATS, HMM) |
//! | [`SamHeadroomMemoryResource`] | system, advised to device or host | keeps a headroom of device memory free |
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
//! # Out-of-memory reports and snapshots
//! Every [`Error::OutOfMemory`] that leaves a resource's `allocate` carries
//! an [`OomReport`]: the request and, for each layer of the stack, what it
//! reserves and uses, its largest free block, free bytes by stream and
//! fragmentation, and a tracking adaptor's largest live sites; the error's
//! `Display` prints it. [`snapshot`] writes any stack as JSON,
//! [`add_oom_observer`] is called on every out-of-memory error before any
//! retry. See [`forensics`] and docs/snapshots.md.
//!
//! # Misuse is detected, never trusted
//! A free must name a pointer the resource handed out and is still live,
//! with the size it was requested with. The sub-allocators
//! ([`PoolMemoryResource`], [`FixedSizeMemoryResource`],
//! [`VirtualPoolMemoryResource`], [`ArenaMemoryResource`],
//! [`BinningMemoryResource`]), the [`LimitingAdaptor`], the
//! [`StatisticsAdaptor`], the [`SimulatedMemoryResource`], the
//! [`SystemMemoryResource`] and the [`SamHeadroomMemoryResource`] keep a record of the live allocations
//! (address → requested bytes, one hash operation per call) and check every
//! free against it: a double free, a foreign, never-allocated or interior
//! pointer, or a wrong size is logged at error level (resource, pointer,
//! sizes), counted (`bad_frees()`) and ignored, so no later allocation
//! overlaps a live one and no counter drifts. `deallocate` never panics.
//! (The [`TrackingAdaptor`] refuses untracked pointers alike; a wrong size
//! there is logged and the block freed with its recorded size.)
//! The check can be turned off for measured hot paths with trusted callers
//! (`unchecked_frees` on the options or adaptor); it is on by default.
//!
//! # CUDA graph capture
//! Memory allocated on a capturing stream belongs to the graph being
//! captured ([`crate::graph`]): a replay writes the same addresses again, so
//! that memory must not go to anyone else while the graph exists.
//! * [`CudaAsyncMemoryResource`] and [`CudaAsyncManagedMemoryResource`]:
//!   the driver turns the allocations into graph memory nodes it owns.
//! * Every other resource (the sub-allocators, cuda, managed, pinned,
//!   system, SAM headroom, callback) serves them from a *graph-private
//!   pool*, one per [`GraphPool`](crate::graph::GraphPool) (captures given
//!   the same `GraphPool` share it; they must never replay at the same
//!   time). Its chunks come from the resource's ordinary path on a side
//!   stream that never captures, in relaxed capture mode, so a pool growing
//!   with `cuMemAlloc` or a `cuMemAlloc`/`cuMemHostAlloc` of its own leaves
//!   the capture valid. A block freed inside the capture is reused only on
//!   the stream that freed it (graph order), one freed after it only by
//!   later captures of the pool; none goes back to the shared free lists.
//!   A free of older memory on a capturing stream waits until the graph is
//!   gone. Once every graph and executable graph of the pool is destroyed
//!   and no block of it is live, its memory goes back (checked on the next
//!   capturing allocation, free of graph memory, report or drop, in the
//!   caller's thread; a background thread every 20 ms only for resources
//!   no user handle holds any more; held back up to 1 s while
//!   any capture is under way, since a synchronising free such as
//!   `cuMemFree` invalidates captures on the device in every thread).
//!   [`MemoryResource::graph_memory`] reports what is held.
//! * Misuse: a free of one graph pool's memory on a stream capturing into
//!   another is logged and refused (`bad_frees` of the report); a resource
//!   dropped while a graph still uses its memory logs an error and keeps
//!   that memory reserved until the graph is gone, then frees it.
//! * Adaptors pass allocations and frees on as ever, so statistics,
//!   tracking and logging count and log graph memory like any other; the
//!   [`PrefetchAdaptor`] issues no prefetch on a capturing stream.
//! * Frees look for captures in rmm's registry (captures begun through
//!   [`crate::graph`], or adopted by an allocation on one of their
//!   streams): a free of older memory on a stream of a capture begun
//!   elsewhere (CuPy, PyTorch) before any allocation was made on it is not
//!   seen, and takes the ordinary path.
//!
//! [`DevicePtr::NULL`]: crate::ptr::DevicePtr::NULL
//! [`CUDA_ALLOCATION_ALIGNMENT`]: crate::align::CUDA_ALLOCATION_ALIGNMENT
//! [`Error::BadAlloc`]: crate::error::Error::BadAlloc
//! [`Error::OutOfMemory`]: crate::error::Error::OutOfMemory
//! [`Error::Cuda`]: crate::error::Error::Cuda

pub mod adaptors;
mod arena;
mod binning;
mod callback;
mod cuda;
mod cuda_async;
mod cuda_async_managed;
mod detail;
mod fixed_size;
pub mod forensics;
#[cfg(unix)]
mod ipc;
mod managed;
pub mod per_device;
mod pinned;
mod pool;
mod resource;
mod sam_headroom;
mod simulated;
mod system;
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
pub use cuda_async_managed::CudaAsyncManagedMemoryResource;
pub use fixed_size::{FixedSizeMemoryResource, FixedSizeOptions};
pub use forensics::{
    add_oom_observer, notify_oom_observers, remove_oom_observer, snapshot, write_oom_reports_to, Block,
    BlockState, Chunk, Counters, LayerState, LiveAllocation, LiveSite, OomObserverId, OomReport, OomRequest,
    Snapshot,
};
#[cfg(unix)]
pub use ipc::{ImportedAllocation, ImportedPool, PoolPointerExport};
pub use managed::ManagedMemoryResource;
pub use per_device::{
    current_device_resource, per_device_resource, reset_current_device_resource, reset_per_device_resource,
    set_current_device_resource, set_per_device_resource,
};
pub use pinned::PinnedHostMemoryResource;
pub use pool::{PoolMemoryResource, PoolOptions};
pub use sam_headroom::SamHeadroomMemoryResource;
pub use simulated::SimulatedMemoryResource;
pub use system::SystemMemoryResource;
pub use vm_pool::{VirtualPoolMemoryResource, VirtualPoolOptions};

pub(crate) use detail::alignment::{check_base_alignment, check_pow2_alignment};
pub use detail::failed_frees::failed_driver_frees;
pub use resource::{FreeBlockStats, GraphMemoryStats, MemoryResource, SharedResource};
