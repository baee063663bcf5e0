//! Crate-private machinery of the resources: the stream-ordered engine
//! shared by the pool, fixed-size and virtual pool resources and the shell
//! around it (shared state, `MemoryResource` forwarding), the free lists
//! and live-allocation records they keep, the per-stream caches in front
//! of the binning resource's bins, the arena resource's book, and
//! small helpers (alignment checks, device binding), the recycling of
//! driver pools, and the headroom decision of the SAM headroom resource.
//!
//! Only [`free_list`] and the alignment checks are public, re-exported by
//! [`crate::mr`] at their old paths.

pub(crate) mod alignment;
pub(crate) mod annotations;
pub(crate) mod arena_book;
mod asymmetric_fence;
mod device;
pub(crate) mod driver_pools;
pub(crate) mod failed_frees;
pub mod free_list;
pub(crate) mod graph_memory;
pub(crate) mod headroom;
pub(crate) mod live_set;
pub(crate) mod private_pool;
pub(crate) mod shell;
pub(crate) mod spin_lock;
pub(crate) mod stream_cache;
pub(crate) mod stream_ordered;
mod stream_slots;
pub(crate) mod sync_driver;

pub(crate) use device::{bound_device, quiesce_device};
