//! Resource adaptors: each wraps an upstream [`MemoryResource`](super::MemoryResource) and adds one
//! behaviour (RMM's `*_resource_adaptor`s).
//!
//! | Adaptor | Adds |
//! |---|---|
//! | [`AlignedAdaptor`] | alignments above 256 bytes (over-allocates and aligns up) |
//! | [`FailureCallbackAdaptor`] | a callback on out-of-memory that may free memory and ask for a retry |
//! | [`LimitingAdaptor`] | a cap on the bytes outstanding |
//! | [`LoggingAdaptor`] | a CSV log of every allocation and free (RMM's format, read by the `rmm-replay` crate) |
//! | [`PrefetchAdaptor`] | prefetch of managed memory to the current device after allocation |
//! | [`StatisticsAdaptor`] | byte and allocation counters with nested scopes |
//! | [`ThreadSafeAdaptor`] | a mutex around the upstream |
//! | [`TrackingAdaptor`] | the map of outstanding allocations, optionally with backtraces |
//!
//! Every adaptor is generic over its upstream `U` (by default the type-erased
//! [`SharedResource`](super::SharedResource)), owns it, gives it back through
//! `upstream()`, is cheap to clone (clones share state and compare equal), is
//! `Send + Sync`, and reports the upstream's device, accessibility and
//! simulation status. Adaptors stack:
//!
//! ```
//! use rmm::mr::{LimitingAdaptor, MemoryResource, SimulatedMemoryResource, StatisticsAdaptor, TrackingAdaptor};
//! use rmm::CudaStreamView;
//! let sim = SimulatedMemoryResource::new(1 << 30);
//! let mr = StatisticsAdaptor::new(TrackingAdaptor::new(LimitingAdaptor::new(sim, 1 << 20), false));
//! let p = mr.allocate(1000, 256, CudaStreamView::DEFAULT)?;
//! assert_eq!(mr.upstream().allocated_bytes(), 1000);
//! assert_eq!(mr.upstream().upstream().allocated_bytes(), 1024);
//! assert!(mr.allocate(1 << 20, 256, CudaStreamView::DEFAULT).unwrap_err().is_out_of_memory());
//! unsafe { mr.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
//! assert_eq!(mr.bytes_counter().peak, 1000);
//! # Ok::<(), rmm::Error>(())
//! ```

/// The `MemoryResource` methods an adaptor forwards to its upstream
/// unchanged, written once for all of them. Every adaptor keeps its shared
/// state in an `Arc` field `inner` with its upstream in `inner.upstream`.
///
/// - `forward_to_upstream!()`: `is_equal` (clones share `inner` and compare
///   equal), accessibility, device, simulation status, free-block stats and graph memory.
/// - `forward_to_upstream!(deallocate)`: those, and `deallocate`, which
///   passes every free upstream as it is.
/// - `forward_to_upstream!(deallocate around NAME)`: those, and
///   `deallocate`, which calls the adaptor's own
///   `fn NAME(&self, ptr: DevicePtr, bytes: usize, stream: CudaStreamView, free: impl FnOnce())`:
///   that method states what the adaptor adds around a free, and calls
///   `free` to pass the free upstream as it is (or does not, to stop it).
macro_rules! forward_to_upstream {
    () => {
        fn is_equal(&self, other: &dyn $crate::mr::MemoryResource) -> bool {
            other
                .downcast_ref::<Self>()
                .is_some_and(|o| std::sync::Arc::ptr_eq(&o.inner, &self.inner))
        }
        fn is_device_accessible(&self) -> bool {
            self.upstream().is_device_accessible()
        }
        fn is_host_accessible(&self) -> bool {
            self.upstream().is_host_accessible()
        }
        fn device(&self) -> Option<$crate::device::DeviceId> {
            self.upstream().device()
        }
        fn is_simulated(&self) -> bool {
            self.upstream().is_simulated()
        }
        fn free_block_stats(&self) -> Option<$crate::mr::FreeBlockStats> {
            self.upstream().free_block_stats()
        }
        fn graph_memory(&self) -> Option<$crate::mr::GraphMemoryStats> {
            self.upstream().graph_memory()
        }
    };
    (deallocate) => {
        forward_to_upstream!(@deallocate self, ptr, bytes, alignment, stream, free => free());
    };
    (deallocate around $around:ident) => {
        forward_to_upstream!(
            @deallocate self, ptr, bytes, alignment, stream, free => self.$around(ptr, bytes, stream, free)
        );
    };
    // The one `deallocate`: `$free` passes the free upstream as it is, `$call` uses it.
    (@deallocate $s:ident, $p:ident, $b:ident, $a:ident, $st:ident, $free:ident => $call:expr) => {
        unsafe fn deallocate(
            &$s,
            $p: $crate::ptr::DevicePtr,
            $b: usize,
            $a: usize,
            $st: $crate::stream::CudaStreamView,
        ) {
            let $free = || {
                // SAFETY: forwarded contract: `ptr` came from this adaptor,
                // hence from the upstream. The closure borrows this call's
                // arguments and runs at most once, inside this call:
                // `$call` calls it once, or hands it to the adaptor's
                // method, which takes it as `impl FnOnce()`.
                unsafe { $s.inner.upstream.deallocate($p, $b, $a, $st) }
            };
            $call
        }
        forward_to_upstream!();
    };
}

mod aligned;
mod failure_callback;
mod limiting;
mod logging;
mod prefetch;
mod statistics;
mod thread_safe;
mod tracking;

pub use aligned::AlignedAdaptor;
pub use failure_callback::{FailureCallback, FailureCallbackAdaptor};
pub use limiting::LimitingAdaptor;
pub use logging::LoggingAdaptor;
pub use prefetch::PrefetchAdaptor;
pub use statistics::{Counter, StatisticsAdaptor};
pub use thread_safe::ThreadSafeAdaptor;
pub use tracking::{AllocationInfo, TrackingAdaptor};

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: adaptor state stays consistent because
/// no adaptor panics while holding a lock.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
