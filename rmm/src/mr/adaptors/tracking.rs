//! [`TrackingAdaptor`]: the map of outstanding allocations.

use crate::mr::forensics::{reported, LayerState, LiveAllocation};
use std::backtrace::Backtrace;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::lock;
use crate::error::Result;
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// One outstanding allocation: its requested size, stream, thread and time
/// and, when the adaptor captures stacks, where it was made.
#[derive(Debug, Clone)]
pub struct AllocationInfo {
    /// Requested size in bytes.
    pub size: usize,
    /// The allocating call stack, when captured.
    pub backtrace: Option<Arc<Backtrace>>,
    /// The raw handle of the stream it was allocated on.
    pub stream: usize,
    /// The allocating thread ([`logger::thread_id`](crate::logger::thread_id),
    /// the logging adaptor's `Thread` column).
    pub thread: u64,
    /// When it was allocated.
    pub time: SystemTime,
}

/// Remembers every outstanding allocation (RMM's
/// `tracking_resource_adaptor`), optionally with the call stack that made it,
/// to find leaks.
///
/// A free of a pointer it does not know is reported with `log::error!` and
/// counted in [`bad_frees`](Self::bad_frees); it is *not* passed upstream
/// (it would free memory the upstream may have given to someone else). A free
/// with a wrong size is reported, counted and ignored the same way, as in
/// every resource and adaptor of this crate: the allocation stays live and
/// tracked until a free with its size. Thread safe; the map's lock is never
/// held across an upstream call.
///
/// ```
/// use rmm::mr::{MemoryResource, SimulatedMemoryResource, TrackingAdaptor};
/// use rmm::CudaStreamView;
/// let mr = TrackingAdaptor::new(SimulatedMemoryResource::new(1 << 30), false);
/// let p = mr.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// assert_eq!(mr.allocated_bytes(), 1000);
/// assert_eq!(mr.outstanding_allocations()[&p].size, 1000);
/// assert!(mr.outstanding_allocations_str().contains("1000 bytes"));
/// unsafe { mr.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
/// assert!(mr.outstanding_allocations().is_empty());
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct TrackingAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

#[derive(Debug)]
struct Inner<U> {
    upstream: U,
    capture_stacks: bool,
    map: Mutex<Map>,
    bad_frees: AtomicUsize,
}

#[derive(Debug, Default)]
struct Map {
    live: HashMap<DevicePtr, AllocationInfo>,
    bytes: usize,
}

impl<U: MemoryResource> Clone for TrackingAdaptor<U> {
    fn clone(&self) -> Self {
        TrackingAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> TrackingAdaptor<U> {
    /// Tracks allocations made through `upstream`; with `capture_stacks` each
    /// one also records a [`Backtrace`] (slow: for debugging).
    pub fn new(upstream: U, capture_stacks: bool) -> Self {
        TrackingAdaptor {
            inner: Arc::new(Inner {
                upstream,
                capture_stacks,
                map: Mutex::new(Map::default()),
                bad_frees: AtomicUsize::new(0),
            }),
        }
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    /// Whether backtraces are captured.
    pub fn captures_stacks(&self) -> bool {
        self.inner.capture_stacks
    }

    /// A snapshot of the outstanding allocations, ordered by address.
    pub fn outstanding_allocations(&self) -> BTreeMap<DevicePtr, AllocationInfo> {
        lock(&self.inner.map)
            .live
            .iter()
            .map(|(p, i)| (*p, i.clone()))
            .collect()
    }

    /// Sum of the requested sizes of the outstanding allocations.
    pub fn allocated_bytes(&self) -> usize {
        lock(&self.inner.map).bytes
    }

    /// Frees that named an unknown pointer or a wrong size.
    pub fn bad_frees(&self) -> usize {
        self.inner.bad_frees.load(Ordering::Relaxed)
    }

    /// A readable report: one line per outstanding allocation (address and
    /// size), followed by its backtrace when captured.
    pub fn outstanding_allocations_str(&self) -> String {
        let all = self.outstanding_allocations();
        let total: usize = all.values().map(|i| i.size).sum();
        let mut s = format!("Outstanding allocations: {} ({} bytes)\n", all.len(), total);
        for (p, info) in &all {
            let _ = writeln!(s, "{p}: {} bytes", info.size);
            if let Some(bt) = &info.backtrace {
                let _ = writeln!(s, "{bt}");
            }
        }
        s
    }

    /// Writes [`outstanding_allocations_str`](Self::outstanding_allocations_str)
    /// to the debug log (`log::debug!`).
    pub fn log_outstanding_allocations(&self) {
        if log::log_enabled!(log::Level::Debug) {
            log::debug!("{}", self.outstanding_allocations_str().trim_end());
        }
    }
}

/// A captured backtrace as one line a frame (the function lines of
/// `Backtrace`'s display; the `at file:line` lines joined to their frame).
fn frames(b: &Backtrace) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in b.to_string().lines() {
        let t = line.trim();
        match out.last_mut() {
            Some(last) if t.starts_with("at ") => {
                last.push(' ');
                last.push_str(t);
            }
            _ if !t.is_empty() => out.push(t.to_string()),
            _ => {}
        }
    }
    out
}

impl<U: MemoryResource> MemoryResource for TrackingAdaptor<U> {
    fn layer_state(&self) -> LayerState {
        let mut l = LayerState::new("tracking", "TrackingAdaptor");
        let live: Vec<LiveAllocation> = self
            .outstanding_allocations()
            .into_iter()
            .map(|(p, info)| LiveAllocation {
                address: p.addr(),
                size: info.size,
                stream: Some(info.stream),
                thread: Some(info.thread),
                time: Some(crate::logger::format_time(info.time, '.')),
                backtrace: info.backtrace.map(|b| frames(&b)),
            })
            .collect();
        l.used_bytes = Some(live.iter().map(|a| a.size).sum());
        l.live_allocations = Some(live);
        l
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            let p = self.inner.upstream.allocate(bytes, alignment, stream)?;
            if p.is_null() {
                return Ok(p);
            }
            let backtrace = self
                .inner
                .capture_stacks
                .then(|| Arc::new(Backtrace::force_capture()));
            let mut map = lock(&self.inner.map);
            map.bytes += bytes;
            if let Some(old) = map.live.insert(
                p,
                AllocationInfo {
                    size: bytes,
                    backtrace,
                    stream: stream.as_raw(),
                    thread: crate::logger::thread_id(),
                    time: SystemTime::now(),
                },
            ) {
                map.bytes -= old.size;
                self.inner.bad_frees.fetch_add(1, Ordering::Relaxed);
                log::error!(
                    "TrackingAdaptor: upstream returned {p} again while it was outstanding ({} bytes)",
                    old.size
                );
            }
            Ok(p)
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        // Checked and removed under one lock, so two frees of one pointer
        // cannot both pass; the upstream call runs after the lock is dropped.
        let verdict = {
            let mut map = lock(&self.inner.map);
            match map.live.get(&ptr).map(|info| info.size) {
                None => Err(None),
                Some(size) if size != bytes => Err(Some(size)),
                Some(size) => {
                    map.live.remove(&ptr);
                    map.bytes -= size;
                    Ok(size)
                }
            }
        };
        match verdict {
            Ok(size) => {
                // SAFETY: `ptr` was allocated from the upstream with `size`
                // bytes (tracked, and the caller named that size) and the
                // caller's contract covers the rest.
                unsafe { self.inner.upstream.deallocate(ptr, size, alignment, stream) };
            }
            Err(None) => {
                self.inner.bad_frees.fetch_add(1, Ordering::Relaxed);
                log::error!(
                    "TrackingAdaptor: free of untracked pointer {ptr} ({bytes} bytes) \
                     (double free, or a foreign, never-allocated or interior pointer); ignored"
                );
            }
            Err(Some(size)) => {
                self.inner.bad_frees.fetch_add(1, Ordering::Relaxed);
                log::error!(
                    "TrackingAdaptor: free of {ptr} with {bytes} bytes, but it was allocated with \
                     {size} bytes; ignored (the allocation stays live)"
                );
            }
        }
    }

    forward_to_upstream!();
}
