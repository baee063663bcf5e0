//! [`FaultyResource`]: an upstream whose allocations fail on a [`Trigger`]
//! and which counts what it holds.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use super::{InjectedError, Trigger};
use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::mr::{FreeBlockStats, GraphMemoryStats, MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Wraps any resource: fails its `allocate` as a [`Trigger`] says (before
/// the upstream is asked, so a fault never leaks), and tracks the bytes and
/// allocations live through it, so a test can check that a stack above it
/// gave everything back.
///
/// Frees are never failed: [`MemoryResource::deallocate`] cannot report an
/// error (a failing driver free is injected with
/// [`DriverFaults`](super::DriverFaults) instead). A free this resource
/// never handed out (or with another size) is counted in
/// [`bad_frees`](Self::bad_frees), logged and not passed on.
///
/// Clones share the state: keep one to look at the upstream after the
/// stack over it is dropped. See the [module documentation](super) for an
/// example.
///
/// Thread safety: `Send + Sync`; counters are exact under concurrent use.
pub struct FaultyResource<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

struct Inner<U> {
    upstream: U,
    state: Mutex<State>,
}

struct State {
    trigger: Trigger,
    error: InjectedError,
    /// Allocations asked for since the trigger was set (its index).
    seen: u64,
    injected: u64,
    /// Live allocations: address to bytes.
    live: BTreeMap<u64, usize>,
    live_bytes: usize,
    bad_frees: u64,
}

impl<U: MemoryResource> FaultyResource<U> {
    /// Wraps `upstream`; nothing fails until [`fail`](Self::fail).
    pub fn new(upstream: U) -> Self {
        FaultyResource {
            inner: Arc::new(Inner {
                upstream,
                state: Mutex::new(State {
                    trigger: Trigger::Never,
                    error: InjectedError::OutOfMemory,
                    seen: 0,
                    injected: 0,
                    live: BTreeMap::new(),
                    live_bytes: 0,
                    bad_frees: 0,
                }),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fails allocations as `trigger` says, with out-of-memory; counts
    /// allocations from 1 again.
    pub fn fail(&self, trigger: Trigger) {
        self.fail_with(trigger, InjectedError::OutOfMemory);
    }

    /// Fails allocations as `trigger` says, with `error`
    /// ([`InjectedError::OutOfMemory`] gives [`Error::OutOfMemory`], the
    /// others [`Error::Cuda`]).
    pub fn fail_with(&self, trigger: Trigger, error: InjectedError) {
        let mut s = self.state();
        s.trigger = trigger;
        s.error = error;
        s.seen = 0;
    }

    /// Stops failing ([`Trigger::Never`]).
    pub fn stop(&self) {
        self.fail(Trigger::Never);
    }

    /// Faults injected since construction.
    pub fn injected(&self) -> u64 {
        self.state().injected
    }

    /// Bytes handed out and not yet freed.
    pub fn live_bytes(&self) -> usize {
        self.state().live_bytes
    }

    /// Allocations handed out and not yet freed.
    pub fn live_allocations(&self) -> usize {
        self.state().live.len()
    }

    /// Frees of memory this resource did not hand out (or of a wrong size).
    pub fn bad_frees(&self) -> u64 {
        self.state().bad_frees
    }

    /// The wrapped resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    fn injected_error(&self, bytes: usize) -> Option<Error> {
        let mut s = self.state();
        s.seen += 1;
        if !s.trigger.fires(s.seen) {
            return None;
        }
        s.injected += 1;
        Some(match s.error {
            InjectedError::OutOfMemory => Error::out_of_memory(bytes, "injected fault (FaultyResource)"),
            e => Error::Cuda {
                code: e.code(),
                name: e.name(),
                call: "FaultyResource::allocate",
            },
        })
    }
}

impl<U: MemoryResource> Clone for FaultyResource<U> {
    fn clone(&self) -> Self {
        FaultyResource {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<U: MemoryResource> fmt::Debug for FaultyResource<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The state is read first: the upstream's Debug may take its own locks.
        let (trigger, injected, live_bytes) = {
            let s = self.state();
            (s.trigger, s.injected, s.live_bytes)
        };
        f.debug_struct("FaultyResource")
            .field("trigger", &trigger)
            .field("injected", &injected)
            .field("live_bytes", &live_bytes)
            .field("upstream", &self.inner.upstream)
            .finish()
    }
}

impl<U: MemoryResource> MemoryResource for FaultyResource<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        if bytes > 0 {
            if let Some(e) = self.injected_error(bytes) {
                return Err(e);
            }
        }
        let p = self.inner.upstream.allocate(bytes, alignment, stream)?;
        if !p.is_null() {
            let mut s = self.state();
            s.live.insert(p.addr(), bytes);
            s.live_bytes += bytes;
        }
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        {
            let mut s = self.state();
            if s.live.get(&ptr.addr()) != Some(&bytes) {
                s.bad_frees += 1;
                log::error!(
                    "FaultyResource: free of {ptr}+{bytes}, which it did not hand out; not passed on"
                );
                return;
            }
            s.live.remove(&ptr.addr());
            s.live_bytes -= bytes;
        }
        // SAFETY: the caller's contract; `ptr` came from the upstream with these arguments.
        unsafe { self.inner.upstream.deallocate(ptr, bytes, alignment, stream) }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<Self>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }

    fn is_device_accessible(&self) -> bool {
        self.inner.upstream.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.inner.upstream.is_host_accessible()
    }

    fn device(&self) -> Option<DeviceId> {
        self.inner.upstream.device()
    }

    fn is_simulated(&self) -> bool {
        self.inner.upstream.is_simulated()
    }

    fn free_block_stats(&self) -> Option<FreeBlockStats> {
        self.inner.upstream.free_block_stats()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        self.inner.upstream.graph_memory()
    }

    fn visit_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        visit(&self.inner.upstream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::SimulatedMemoryResource;

    const S: CudaStreamView<'static> = CudaStreamView::DEFAULT;

    #[test]
    fn fails_as_triggered_tracks_live_bytes_and_refuses_foreign_frees() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let f = FaultyResource::new(sim.clone());
        f.fail_with(Trigger::EveryNth(2), InjectedError::Unknown);
        let a = f.allocate(100, 256, S).unwrap();
        let e = f.allocate(100, 256, S).unwrap_err();
        assert!(matches!(e, Error::Cuda { code: 999, .. }), "{e}");
        assert_eq!((f.injected(), f.live_bytes(), f.live_allocations()), (1, 100, 1));
        // SAFETY: a wrong size; the resource refuses it without passing it on.
        unsafe { f.deallocate(a, 99, 256, S) };
        assert_eq!((f.bad_frees(), sim.allocated_bytes()), (1, 256));
        f.stop();
        let b = f.allocate(100, 256, S).unwrap();
        // SAFETY: both allocated above with these arguments.
        unsafe {
            f.deallocate(a, 100, 256, S);
            f.deallocate(b, 100, 256, S);
        }
        assert_eq!((f.live_bytes(), sim.allocated_bytes()), (0, 0));
        assert!(f.is_equal(&f.clone()) && !f.is_equal(&FaultyResource::new(sim)));
    }
}
