//! [`LimitingAdaptor`]: caps the bytes outstanding.

use crate::mr::forensics::{reported, LayerState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};
use crate::mr::detail::live_set::LiveSet;
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Fails allocations that would take the outstanding bytes over a limit
/// (RMM's `limiting_resource_adaptor`).
///
/// Each allocation counts `align_up(bytes, 256)`. The count is an atomic that
/// is reserved before the upstream call and rolled back when the upstream
/// fails, so concurrent allocations never overshoot the limit. Over the limit
/// the allocation fails with [`Error::OutOfMemory`] ("exceeded memory limit")
/// without calling the upstream. Thread safe when the upstream is.
///
/// Frees are checked against the live allocations (a sharded record, one
/// hash operation per call): a double free, a foreign, never-allocated or
/// interior pointer, or a wrong size is logged at error level, counted in
/// [`bad_frees`](Self::bad_frees), not passed upstream and not subtracted,
/// so the counter always equals the live bytes and never undercounts.
/// [`unchecked_frees`](Self::unchecked_frees) turns the check off.
///
/// ```
/// use rmm::mr::{LimitingAdaptor, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let mr = LimitingAdaptor::new(SimulatedMemoryResource::new(1 << 30), 4096);
/// let p = mr.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// assert_eq!(mr.allocated_bytes(), 1024);
/// let e = mr.allocate(4000, 256, CudaStreamView::DEFAULT).unwrap_err();
/// assert!(e.is_out_of_memory() && e.to_string().contains("exceeded memory limit"));
/// unsafe { mr.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
/// assert_eq!(mr.allocated_bytes(), 0);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct LimitingAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

#[derive(Debug)]
struct Inner<U> {
    upstream: U,
    limit: usize,
    allocated: AtomicUsize,
    /// The live allocations; `None` when frees are trusted.
    live: Option<LiveSet>,
}

impl<U: MemoryResource> Clone for LimitingAdaptor<U> {
    fn clone(&self) -> Self {
        LimitingAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> LimitingAdaptor<U> {
    /// Limits `upstream` to `allocation_limit` outstanding bytes.
    pub fn new(upstream: U, allocation_limit: usize) -> Self {
        LimitingAdaptor {
            inner: Arc::new(Inner {
                upstream,
                limit: allocation_limit,
                allocated: AtomicUsize::new(0),
                live: Some(LiveSet::default()),
            }),
        }
    }

    /// Trusts frees instead of checking them (for measured hot paths with
    /// trusted callers): a double free then lowers the counter below the
    /// live bytes. Call it on a fresh adaptor; on one that is already
    /// shared (cloned) it logs a warning and changes nothing.
    pub fn unchecked_frees(mut self) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.live = None,
            None => log::warn!("LimitingAdaptor::unchecked_frees on a shared adaptor; frees stay checked"),
        }
        self
    }

    /// Frees refused so far (0 when frees are unchecked).
    pub fn bad_frees(&self) -> usize {
        self.inner.live.as_ref().map_or(0, LiveSet::bad_frees)
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    /// Bytes outstanding (each allocation rounded up to 256).
    pub fn allocated_bytes(&self) -> usize {
        self.inner.allocated.load(Ordering::Acquire)
    }

    /// The limit in bytes.
    pub fn allocation_limit(&self) -> usize {
        self.inner.limit
    }
}

fn counted(bytes: usize) -> Option<usize> {
    align_up(bytes, CUDA_ALLOCATION_ALIGNMENT)
}

impl<U: MemoryResource> LimitingAdaptor<U> {
    /// What the adaptor adds to a free: (checked) the live record's check,
    /// then, after `free` passed it upstream, the bytes counted down.
    fn counted_free(&self, ptr: DevicePtr, bytes: usize, _stream: CudaStreamView, free: impl FnOnce()) {
        if let (Some(live), false) = (&self.inner.live, ptr.is_null()) {
            if !live.remove("LimitingAdaptor", ptr.addr(), bytes) {
                return;
            }
        }
        free();
        let size = counted(bytes).unwrap_or(0);
        let result = self
            .inner
            .allocated
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| cur.checked_sub(size));
        if result.is_err() {
            log::error!("LimitingAdaptor: free of {ptr} ({bytes} bytes) exceeds the bytes allocated");
            self.inner.allocated.store(0, Ordering::Release);
        }
    }
}

impl<U: MemoryResource> MemoryResource for LimitingAdaptor<U> {
    fn layer_state(&self) -> LayerState {
        let mut l = LayerState::new("limiting", "LimitingAdaptor");
        let used = self.allocated_bytes();
        let left = self.allocation_limit().saturating_sub(used);
        l.used_bytes = Some(used);
        l.limit_bytes = Some(self.allocation_limit());
        l.free_bytes = Some(left);
        l.largest_free_block = Some(left);
        l
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            let limit = self.inner.limit;
            let over = |current: usize| {
                let e = Error::OutOfMemory {
                    requested: bytes,
                    reason: format!(
                        "LimitingAdaptor: exceeded memory limit of {limit} bytes ({current} bytes allocated)"
                    ),
                    report: None,
                };
                log::error!("{e}");
                e
            };
            let Some(size) = counted(bytes) else {
                return Err(over(self.allocated_bytes()));
            };
            let reserved = self
                .inner
                .allocated
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cur| {
                    cur.checked_add(size).filter(|&n| n <= limit)
                });
            if let Err(current) = reserved {
                return Err(over(current));
            }
            match self.inner.upstream.allocate(bytes, alignment, stream) {
                Ok(p) => {
                    if let (Some(live), false) = (&self.inner.live, p.is_null()) {
                        live.insert("LimitingAdaptor", p.addr(), bytes);
                    }
                    Ok(p)
                }
                Err(e) => {
                    self.inner.allocated.fetch_sub(size, Ordering::AcqRel);
                    Err(e)
                }
            }
        })
    }

    forward_to_upstream!(deallocate around counted_free);
}
