//! [`StatisticsAdaptor`]: byte and allocation counters with nested scopes.

use crate::mr::forensics::{reported, Counters, LayerState};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::mr::detail::live_set::{log_bad_free, LiveMap};
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// A counter: its current value, the highest value seen and the sum of all
/// increments (RMM's `statistics_resource_adaptor::counter`).
///
/// Values are signed: inside a nested scope (see
/// [`StatisticsAdaptor::push_counters`]) freeing memory allocated before the
/// scope makes the scope's value negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counter {
    /// Current value.
    pub value: i64,
    /// Highest `value` seen.
    pub peak: i64,
    /// Sum of all increments.
    pub total: i64,
}

impl Counter {
    // Saturating everywhere: no input makes a counter panic or wrap.
    fn add(&mut self, n: i64) {
        self.value = self.value.saturating_add(n);
        self.total = self.total.saturating_add(n);
        self.peak = self.peak.max(self.value);
    }

    fn sub(&mut self, n: i64) {
        self.value = self.value.saturating_sub(n);
    }

    /// Folds a finished child scope into this one.
    fn merge_child(&mut self, child: &Counter) {
        self.peak = self.peak.max(self.value.saturating_add(child.peak));
        self.value = self.value.saturating_add(child.value);
        self.total = self.total.saturating_add(child.total);
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Level {
    bytes: Counter,
    allocations: Counter,
}

/// Counts the bytes and allocations that go through it (RMM's
/// `statistics_resource_adaptor`): current, peak and total of each, for the
/// *requested* sizes. Zero-byte allocations (null pointers) are not counted.
///
/// The counters form a stack: [`push_counters`](Self::push_counters) starts
/// a zeroed scope, [`pop_counters`](Self::pop_counters) ends it and merges it
/// into the scope below (value and total add up; the outer peak becomes
/// `max(peak, value + inner.peak)`). Thread safe; counters are updated under
/// a lock after the upstream call of an allocation and before that of a
/// free; the upstream is never called with the lock held.
///
/// Frees are checked against the live allocations (a record kept under the
/// counters' lock, one hash operation per call): a double free, a foreign, never-allocated or
/// interior pointer, or a wrong size is logged at error level, counted in
/// [`bad_frees`](Self::bad_frees), not passed upstream and not counted.
/// [`unchecked_frees`](Self::unchecked_frees) turns the check off; counters
/// saturate instead of overflowing either way.
///
/// ```
/// use rmm::mr::{MemoryResource, SimulatedMemoryResource, StatisticsAdaptor};
/// use rmm::CudaStreamView;
/// let mr = StatisticsAdaptor::new(SimulatedMemoryResource::new(1 << 30));
/// let a = mr.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// mr.push_counters();
/// let b = mr.allocate(500, 256, CudaStreamView::DEFAULT)?;
/// assert_eq!(mr.bytes_counter().value, 500);
/// unsafe { mr.deallocate(b, 500, 256, CudaStreamView::DEFAULT) };
/// let (inner_bytes, _) = mr.pop_counters()?;
/// assert_eq!(inner_bytes.peak, 500);
/// assert_eq!(mr.bytes_counter().peak, 1500);
/// unsafe { mr.deallocate(a, 1000, 256, CudaStreamView::DEFAULT) };
/// assert_eq!(mr.allocations_counter().total, 2);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct StatisticsAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

#[derive(Debug)]
struct Inner<U> {
    upstream: U,
    stack: RwLock<Books>,
    /// Frees refused so far.
    bad_frees: AtomicUsize,
}

/// What the adaptor's lock guards: the counter scopes and the live record.
#[derive(Debug)]
struct Books {
    /// Never empty: the outermost scope is always there.
    levels: Vec<Level>,
    /// The live allocations; `None` when frees are trusted.
    live: Option<LiveMap>,
}

impl<U: MemoryResource> Clone for StatisticsAdaptor<U> {
    fn clone(&self) -> Self {
        StatisticsAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> StatisticsAdaptor<U> {
    /// Counts what goes through to `upstream`.
    pub fn new(upstream: U) -> Self {
        StatisticsAdaptor {
            inner: Arc::new(Inner {
                upstream,
                stack: RwLock::new(Books {
                    levels: vec![Level::default()],
                    live: Some(LiveMap::default()),
                }),
                bad_frees: AtomicUsize::new(0),
            }),
        }
    }

    /// Trusts frees instead of checking them (for measured hot paths with
    /// trusted callers). Call it on a fresh adaptor; on one that is already
    /// shared (cloned) it logs a warning and changes nothing.
    pub fn unchecked_frees(mut self) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => inner.stack.get_mut().unwrap_or_else(|e| e.into_inner()).live = None,
            None => log::warn!("StatisticsAdaptor::unchecked_frees on a shared adaptor; frees stay checked"),
        }
        self
    }

    /// Frees refused so far (0 when frees are unchecked).
    pub fn bad_frees(&self) -> usize {
        self.inner.bad_frees.load(Ordering::Relaxed)
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    fn read(&self) -> RwLockReadGuard<'_, Books> {
        self.inner.stack.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Books> {
        self.inner.stack.write().unwrap_or_else(|e| e.into_inner())
    }

    fn top(&self) -> Level {
        // The stack always holds at least the outermost level.
        self.read().levels.last().copied().unwrap_or_default()
    }

    /// The byte counter of the current scope.
    pub fn bytes_counter(&self) -> Counter {
        self.top().bytes
    }

    /// The allocation counter of the current scope.
    pub fn allocations_counter(&self) -> Counter {
        self.top().allocations
    }

    /// Starts a nested scope with zeroed counters and returns the
    /// `(bytes, allocations)` counters of the scope it covers.
    pub fn push_counters(&self) -> (Counter, Counter) {
        let stack = &mut self.write().levels;
        let top = stack.last().copied().unwrap_or_default();
        stack.push(Level::default());
        (top.bytes, top.allocations)
    }

    /// Ends the current scope, merges it into the one below and returns its
    /// `(bytes, allocations)` counters.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when no scope was pushed.
    pub fn pop_counters(&self) -> Result<(Counter, Counter)> {
        let mut books = self.write();
        let stack = &mut books.levels;
        if stack.len() < 2 {
            return Err(Error::OutOfRange(
                "StatisticsAdaptor::pop_counters: no counters were pushed".into(),
            ));
        }
        let child = stack.pop().unwrap_or_default();
        if let Some(parent) = stack.last_mut() {
            parent.bytes.merge_child(&child.bytes);
            parent.allocations.merge_child(&child.allocations);
        }
        Ok((child.bytes, child.allocations))
    }

    /// Number of nested scopes pushed and not popped.
    pub fn depth(&self) -> usize {
        self.read().levels.len().saturating_sub(1)
    }
}

impl<U: MemoryResource> StatisticsAdaptor<U> {
    /// What the adaptor adds to a free: (checked) the live record's check,
    /// and the counters counted down, under the lock; then `free` passes it
    /// upstream without the lock. A null pointer is not passed on.
    fn counted_free(&self, ptr: DevicePtr, bytes: usize, _stream: CudaStreamView, free: impl FnOnce()) {
        if ptr.is_null() {
            return;
        }
        {
            let mut books = self.write();
            if let Some(live) = &mut books.live {
                if let Err(bad) = live.remove(ptr.addr(), bytes) {
                    drop(books);
                    self.inner.bad_frees.fetch_add(1, Ordering::Relaxed);
                    log_bad_free("StatisticsAdaptor", ptr.addr(), bytes, bad);
                    return;
                }
            }
            if let Some(top) = books.levels.last_mut() {
                top.bytes.sub(as_count(bytes));
                top.allocations.sub(1);
            }
        }
        free();
    }
}

impl<U: MemoryResource> MemoryResource for StatisticsAdaptor<U> {
    fn layer_state(&self) -> LayerState {
        let mut l = LayerState::new("statistics", "StatisticsAdaptor");
        let (b, n) = (self.bytes_counter(), self.allocations_counter());
        l.used_bytes = usize::try_from(b.value).ok();
        l.counters = Some(Counters {
            current_bytes: b.value,
            peak_bytes: b.peak,
            total_bytes: b.total,
            current_count: n.value,
            peak_count: n.peak,
            total_count: n.total,
        });
        l
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            let p = self.inner.upstream.allocate(bytes, alignment, stream)?;
            if p.is_null() {
                return Ok(p);
            }
            let mut books = self.write();
            if let Some(live) = &mut books.live {
                if !live.insert(p.addr(), bytes) {
                    log::error!(
                        "StatisticsAdaptor: upstream handed out {p} ({bytes} bytes) while it is live"
                    );
                }
            }
            if let Some(top) = books.levels.last_mut() {
                top.bytes.add(as_count(bytes));
                top.allocations.add(1);
            }
            Ok(p)
        })
    }

    forward_to_upstream!(deallocate around counted_free);
}

/// A byte count as a counter value, saturating at `i64::MAX`.
fn as_count(bytes: usize) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::Counter;

    #[test]
    fn merge_follows_rmm() {
        let mut parent = Counter {
            value: 100,
            peak: 150,
            total: 300,
        };
        let child = Counter {
            value: -20,
            peak: 80,
            total: 90,
        };
        parent.merge_child(&child);
        assert_eq!(
            parent,
            Counter {
                value: 80,
                peak: 180,
                total: 390
            }
        );
    }
}
