//! Out-of-memory observers: callbacks called with the [`OomReport`] of
//! every out-of-memory error, once per error, before any retry.
//!
//! Where they are called: by the [`FailureCallbackAdaptor`] before it calls
//! its callback (so before its retry), and by the outermost
//! [`SharedResource`] on the thread as the error leaves it (the handle
//! containers, execution policies, the per-device registry, Python and the
//! PyTorch hook allocate through). Sub-allocators that retry internally
//! (a pool halving its growth) run their upstream calls nested, so an
//! error they absorb is not reported. A stack called directly, without a
//! `SharedResource` or a failure-callback adaptor, reports through
//! [`notify_oom_observers`].
//!
//! [`FailureCallbackAdaptor`]: crate::mr::FailureCallbackAdaptor
//! [`SharedResource`]: crate::mr::SharedResource
#![forbid(unsafe_code)]

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::oom::OomReport;
use crate::error::Error;

/// An observer: called with each report.
pub type OomObserver = Arc<dyn Fn(&OomReport) + Send + Sync>;

/// Names a registered observer, for [`remove_oom_observer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OomObserverId(u64);

static OBSERVERS: Mutex<Vec<(u64, OomObserver)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Registered observers, read without the lock on the failure path.
static COUNT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// `SharedResource` calls and internal retries in progress on this thread.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// An observer runs on this thread (its own failures are not observed).
    static IN_OBSERVER: Cell<bool> = const { Cell::new(false) };
}

fn observers() -> std::sync::MutexGuard<'static, Vec<(u64, OomObserver)>> {
    OBSERVERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `observer`, called with the report of every out-of-memory
/// error from then on (see the module docs for where), on the thread that
/// allocated. An observer may take snapshots and allocate; out-of-memory
/// errors inside it are not observed. A panic in it is caught and logged.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
/// use rmm::mr::{add_oom_observer, remove_oom_observer, MemoryResource, SharedResource, SimulatedMemoryResource};
/// let seen = Arc::new(AtomicUsize::new(0));
/// let s = seen.clone();
/// let id = add_oom_observer(move |r| {
///     if r.request.size == 12345 << 20 { s.fetch_add(1, Ordering::SeqCst); }
/// });
/// let mr = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
/// assert!(mr.allocate(12345 << 20, 256, rmm::CudaStreamView::DEFAULT).is_err());
/// assert_eq!(seen.load(Ordering::SeqCst), 1);
/// remove_oom_observer(id);
/// ```
pub fn add_oom_observer(observer: impl Fn(&OomReport) + Send + Sync + 'static) -> OomObserverId {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let mut all = observers();
    all.push((id, Arc::new(observer)));
    COUNT.store(all.len(), Ordering::Release);
    OomObserverId(id)
}

/// Removes an observer; false when it was not registered.
pub fn remove_oom_observer(id: OomObserverId) -> bool {
    let mut all = observers();
    let before = all.len();
    all.retain(|(i, _)| *i != id.0);
    COUNT.store(all.len(), Ordering::Release);
    all.len() != before
}

/// Registers an observer that writes each report as JSON to a new file
/// `rmm-oom-<unix_time_ns>-<n>.json` in `directory` (created if missing);
/// a file that cannot be written is logged at error level.
pub fn write_oom_reports_to(directory: impl Into<PathBuf>) -> OomObserverId {
    let dir = directory.into();
    let n = AtomicU64::new(0);
    add_oom_observer(move |r| {
        let i = n.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("rmm-oom-{}-{i}.json", r.snapshot.unix_time_ns));
        if let Err(e) = write_report(&dir, &path, r) {
            log::error!(
                "rmm: cannot write the out-of-memory report {}: {e}",
                path.display()
            );
        }
    })
}

fn write_report(dir: &Path, path: &Path, r: &OomReport) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(path, r.to_json())
}

/// Calls every observer with `e`'s report, unless they saw it already
/// (or `e` is no out-of-memory error, or an observer runs on this thread).
pub fn notify_oom_observers(e: &Error) {
    let Some(report) = e.oom_report() else { return };
    if COUNT.load(Ordering::Acquire) == 0 || IN_OBSERVER.with(Cell::get) || !report.first_observation() {
        return;
    }
    let all: Vec<OomObserver> = observers().iter().map(|(_, o)| o.clone()).collect();
    IN_OBSERVER.with(|f| f.set(true));
    for o in all {
        if catch_unwind(AssertUnwindSafe(|| o(report))).is_err() {
            log::error!("rmm: an out-of-memory observer panicked (ignored)");
        }
    }
    IN_OBSERVER.with(|f| f.set(false));
}

/// Runs `f` nested: an out-of-memory error inside it leaves no outermost
/// `SharedResource`, so observers are not called for it there.
pub(crate) fn nested<T>(f: impl FnOnce() -> T) -> T {
    DEPTH.with(|d| d.set(d.get() + 1));
    let _undo = Undo;
    f()
}

struct Undo;
impl Drop for Undo {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Runs a `SharedResource` allocation: nested, and at the outermost level
/// an out-of-memory error is reported to the observers.
pub(crate) fn outermost<T>(f: impl FnOnce() -> crate::error::Result<T>) -> crate::error::Result<T> {
    let r = nested(f);
    if let Err(e) = &r {
        if DEPTH.with(Cell::get) == 0 {
            notify_oom_observers(e);
        }
    }
    r
}
