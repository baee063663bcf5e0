//! The process-wide registry of captures: which stream captures into which
//! graph, with which private pool.
//!
//! A capture begun through rmm ([`begin`]) is registered while the
//! registry's write lock is held across `cuStreamBeginCapture` (so no other
//! thread sees it unregistered) and removed under the same lock across
//! `cuStreamEndCapture` ([`end`]). A capture begun elsewhere (CuPy,
//! PyTorch, cudarc) is *adopted* by [`capture_of`] the first time a stream
//! of it is seen: registered under its capture id with a fresh
//! [`GraphPoolId`], so that every stream joined to it gets the same pool.
//! Adopted entries are not told when their capture ends: a stream found not
//! capturing (or capturing another capture) is dropped from the registry
//! when it is next looked up, and an adopted capture with no stream left
//! goes with it.
//!
//! # Cost
//! [`ENTRIES`] mirrors the number of registered streams: with none, the
//! registry answers "no capture" after one atomic load and no lock.
//!
//! # Lock
//! One `RwLock` (`REGISTRY`), a leaf: nothing else of ours is taken while it
//! is held. The driver calls made under it (begin, end and query a capture,
//! create and attach a user object) never wait for device work. See
//! docs/locks.md.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use super::detection::{capture_detection, CaptureDetection};
use super::mode::{capture_error, capture_state, invalidated};
use super::pool::GraphPoolId;
use super::registry_book::Registry;
use crate::device::DeviceId;
use crate::driver::{self, CaptureState, GraphHandle, StreamCaptureMode};
use crate::error::Result;
use crate::stream::CudaStreamView;

/// A capture in progress, as resources see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ActiveCapture {
    /// The driver's capture id (joined/forked streams share it).
    pub id: u64,
    /// The private pool this capture allocates from.
    pub pool: GraphPoolId,
    /// The graph being captured, for [`attach_lifetime`](super::attach_lifetime).
    pub graph: GraphHandle,
    /// The device of the stream the capture was found on, when known.
    pub device: Option<DeviceId>,
}

/// The registry of the process.
static REGISTRY: RwLock<Registry> = RwLock::new(Registry::new());

/// Registered streams (`Registry::stream_count`), written under the write
/// lock: 0 means no capture is registered.
static ENTRIES: AtomicUsize = AtomicUsize::new(0);

fn read() -> RwLockReadGuard<'static, Registry> {
    // A panic under the lock cannot leave the maps half-updated in a way
    // that breaks them (each update is a map operation); keep going.
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

/// The write guard; publishes the stream count when dropped.
struct Writer(RwLockWriteGuard<'static, Registry>);

impl Drop for Writer {
    fn drop(&mut self) {
        ENTRIES.store(self.0.stream_count(), Ordering::Release);
    }
}

fn write() -> Writer {
    Writer(REGISTRY.write().unwrap_or_else(|e| e.into_inner()))
}

/// Captures begun through rmm ([`begin`]) and not yet ended, in the process.
static RMM_CAPTURES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Of [`RMM_CAPTURES`], those begun on this thread ([`Capture`](super::Capture)
    /// is `!Send`: it ends on the thread that began it).
    static OWN_CAPTURES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How long [`wait_for_other_captures`] waits at most.
pub(crate) const CAPTURE_WAIT: Duration = Duration::from_secs(1);

/// Waits (up to [`CAPTURE_WAIT`]) until no capture begun through rmm on
/// *another* thread is under way: a device-wide synchronisation
/// (`cuCtxSynchronize`, `cuMemFree`, `cuMemFreeHost`) made while a stream of
/// the context captures fails that capture, whichever thread makes it
/// (seen on the H200, 2026-12-02, as `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`
/// in captures beside a pool's teardown). With no rmm capture under way this
/// is one atomic load. Captures begun outside rmm (CuPy, PyTorch) are not
/// waited for: rmm cannot tell when they end. Returns false when captures
/// were still under way after the wait (the caller goes on).
pub(crate) fn wait_for_other_captures() -> bool {
    let others = || RMM_CAPTURES.load(Ordering::Acquire) > OWN_CAPTURES.with(|c| c.get());
    if !others() {
        return true;
    }
    let start = std::time::Instant::now();
    while others() {
        if start.elapsed() >= CAPTURE_WAIT {
            log::warn!(
                "a device-wide synchronisation waited {CAPTURE_WAIT:?} for captures on other threads to end \
                 and goes ahead: it may invalidate them"
            );
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

/// True when no stream is registered (one atomic load).
#[inline]
fn nothing_registered() -> bool {
    ENTRIES.load(Ordering::Acquire) == 0
}

/// Runs `f` with the registry read-locked (for `attach_lifetime`).
pub(super) fn with_read<R>(f: impl FnOnce(&Registry) -> R) -> R {
    f(&read())
}

/// Begins a capture on `stream` and registers it with `pool`; returns the
/// capture id and its graph. The write lock is held across the driver
/// calls, so no lookup sees the capture unregistered.
pub(super) fn begin(
    stream: CudaStreamView<'_>,
    mode: StreamCaptureMode,
    pool: GraphPoolId,
    device: DeviceId,
) -> Result<(u64, GraphHandle)> {
    let mut registry = write();
    // Refused here rather than by the driver, which may invalidate the
    // capture in progress when asked to begin another.
    match capture_state(stream)? {
        CaptureState::None => {}
        CaptureState::Active { id, .. } => {
            return Err(crate::Error::Capture {
                stream: stream.as_raw(),
                reason: format!("the stream is already capturing (capture {id})"),
            })
        }
        CaptureState::Invalidated => return Err(invalidated(stream)),
    }
    // SAFETY: a view's stream is live for its lifetime.
    unsafe { driver::stream_begin_capture(stream.handle(), mode) }.map_err(|e| capture_error(stream, e))?;
    let (id, graph) = match capture_state(stream) {
        Ok(CaptureState::Active { id, graph }) => (id, graph),
        other => {
            // Begun but not readable: end it again so the stream stays usable.
            // SAFETY: as above.
            if let Ok(g) = unsafe { driver::stream_end_capture(stream.handle()) } {
                // SAFETY: the graph was just returned to us and is not used after.
                let _ = unsafe { driver::graph_destroy(g) };
            }
            return Err(match other {
                Err(e) => e,
                Ok(_) => invalidated(stream),
            });
        }
    };
    registry.0.begin(stream.as_raw(), id, pool, graph, device);
    RMM_CAPTURES.fetch_add(1, Ordering::AcqRel);
    OWN_CAPTURES.with(|c| c.set(c.get() + 1));
    Ok((id, graph))
}

/// Ends the capture `id` on `stream` and removes it from the registry
/// (whatever the driver answers); returns the driver's graph.
pub(super) fn end(stream: CudaStreamView<'_>, id: u64) -> Result<GraphHandle> {
    let mut registry = write();
    // SAFETY: a view's stream is live for its lifetime.
    let graph = unsafe { driver::stream_end_capture(stream.handle()) };
    registry.0.end(id);
    RMM_CAPTURES.fetch_sub(1, Ordering::AcqRel);
    OWN_CAPTURES.with(|c| c.set(c.get().saturating_sub(1)));
    graph.map_err(|e| match e {
        crate::Error::Cuda {
            name: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
            ..
        } => invalidated(stream),
        e => capture_error(stream, e),
    })
}

/// The capture `stream` belongs to, if any.
///
/// The legacy default stream: `Ok(None)` with no driver call. With
/// [`CaptureDetection::Registered`]: `Ok(None)` after one atomic load when
/// nothing is registered, and for every stream not registered; a registered
/// stream is re-checked with the driver (a stale entry is dropped). With
/// [`CaptureDetection::Driver`], every other stream is asked of the driver;
/// a capture begun outside rmm is adopted (see the module docs).
///
/// # Errors
/// [`Error::Capture`](crate::Error::Capture) when the stream's capture was
/// invalidated or the driver call fails.
#[inline]
pub(crate) fn capture_of(stream: CudaStreamView<'_>) -> Result<Option<ActiveCapture>> {
    if stream.is_default() {
        return Ok(None);
    }
    if capture_detection() == CaptureDetection::Registered
        && (nothing_registered() || read().of_stream(stream.as_raw()).is_none())
    {
        return Ok(None);
    }
    ask_driver(stream)
}

/// The registry's answer for `stream` after asking the driver.
#[inline(never)]
fn ask_driver(stream: CudaStreamView<'_>) -> Result<Option<ActiveCapture>> {
    let state = capture_state(stream)?;
    let raw = stream.as_raw();
    match state {
        CaptureState::Invalidated => Err(invalidated(stream)),
        CaptureState::None => {
            if !nothing_registered() && read().of_stream(raw).is_some() {
                write().0.forget_stream(raw);
            }
            Ok(None)
        }
        CaptureState::Active { id, .. } => {
            if let Some(known) = read().joined(raw, id) {
                return Ok(Some(known));
            }
            // SAFETY: a view's stream is live for its lifetime.
            let device = unsafe { driver::stream_device(stream.handle()) }
                .ok()
                .map(DeviceId);
            Ok(write().0.observe(raw, state, device, GraphPoolId::fresh))
        }
    }
}

/// True while any capture is registered (one atomic load): a capture may be
/// under way in the process. Entries of adopted captures that ended stay
/// until their stream is next looked up.
#[inline]
pub(crate) fn captures_registered() -> bool {
    !nothing_registered()
}

/// The registered capture of `stream`, for frees: `None` after one atomic
/// load when nothing is registered, and for streams not registered. A
/// registered stream is re-checked with the driver (a stale entry is
/// dropped; a new capture on it is adopted); when the driver cannot say
/// (an invalidated capture, a failed call) the registered capture is
/// returned.
pub(crate) fn registered_capture_of(stream: CudaStreamView<'_>) -> Option<ActiveCapture> {
    if nothing_registered() || stream.is_default() {
        return None;
    }
    let known = read().of_stream(stream.as_raw())?;
    ask_driver(stream).unwrap_or(Some(known))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tests that change or depend on the process-wide detection.
    static DETECTION: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn detection_lock() -> std::sync::MutexGuard<'static, ()> {
        DETECTION.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn an_rmm_capture_and_its_joined_stream_share_one_pool_on_the_gpu() {
        crate::require_gpu!();
        let _d = detection_lock();
        let s = crate::CudaStream::non_blocking().unwrap();
        let other = crate::CudaStream::non_blocking().unwrap();
        let buf = crate::DeviceBuffer::new(8192, s.view()).unwrap();
        let capture = crate::graph::begin_capture(s.view(), crate::graph::CaptureMode::ThreadLocal).unwrap();
        let found = capture_of(s.view()).unwrap().unwrap();
        assert_eq!((found.id, found.pool.0), (capture.id(), capture.pool().id()));
        assert_eq!(
            found.device,
            Some(DeviceId(crate::device::current_device().unwrap().0))
        );
        assert_eq!(registered_capture_of(s.view()), Some(found.clone()));
        assert_eq!(capture_of(other.view()), Ok(None));
        assert_eq!(registered_capture_of(other.view()), None);
        // Fork `other` into the capture (an event recorded inside it), join back.
        crate::stream::stream_wait(other.view(), s.view()).unwrap();
        let joined = capture_of(other.view()).unwrap().unwrap();
        assert_eq!(
            joined, found,
            "a joined stream is the same capture, with the same pool"
        );
        assert_eq!(registered_capture_of(other.view()), Some(found.clone()));
        // SAFETY: `buf` is live device memory of 8192 bytes; the graph is
        // never launched.
        unsafe {
            crate::launch::memset_async(buf.data(), 1, 1, 4096, s.view()).unwrap();
            crate::launch::memset_async(buf.data().offset(4096), 2, 1, 4096, other.view()).unwrap();
        }
        crate::stream::stream_wait(s.view(), other.view()).unwrap();
        let graph = capture.end().unwrap();
        assert_eq!(graph.node_count().unwrap(), 2, "one memset on each stream");
        assert_eq!(registered_capture_of(s.view()), None);
        assert_eq!(registered_capture_of(other.view()), None);
        assert_eq!(capture_of(other.view()), Ok(None));
        assert!(read().of_stream(other.view().as_raw()).is_none());
    }

    #[test]
    fn a_capture_begun_outside_rmm_is_adopted_and_dropped_when_it_ends() {
        crate::require_gpu!();
        let _d = detection_lock();
        let s = crate::CudaStream::non_blocking().unwrap();
        let unseen = crate::CudaStream::non_blocking().unwrap();
        for stream in [&s, &unseen] {
            // SAFETY: both streams are live; each capture is ended below.
            unsafe { driver::stream_begin_capture(stream.view().handle(), StreamCaptureMode::ThreadLocal) }
                .unwrap();
        }
        assert_eq!(registered_capture_of(s.view()), None, "not seen yet");
        let a = capture_of(s.view()).unwrap().unwrap();
        assert_eq!(capture_of(s.view()).unwrap(), Some(a.clone()), "adopted once");
        assert_eq!(registered_capture_of(s.view()), Some(a.clone()));
        super::super::set_capture_detection(CaptureDetection::Registered);
        let registered_only = (capture_of(s.view()), capture_of(unseen.view()));
        super::super::set_capture_detection(CaptureDetection::Driver);
        assert_eq!(registered_only, (Ok(Some(a.clone())), Ok(None)));
        let b = capture_of(unseen.view()).unwrap().unwrap();
        assert_ne!((a.id, a.pool), (b.id, b.pool));
        for stream in [&s, &unseen] {
            // SAFETY: as above; the graph is ours to destroy.
            let g = unsafe { driver::stream_end_capture(stream.view().handle()) }.unwrap();
            // SAFETY: the graph was just returned and is not used after.
            unsafe { driver::graph_destroy(g) }.unwrap();
        }
        // The registry learns it at the next look at each stream.
        assert_eq!(registered_capture_of(s.view()), None);
        assert_eq!(capture_of(unseen.view()), Ok(None));
        let r = read();
        assert!(r.of_stream(s.view().as_raw()).is_none() && r.of_stream(unseen.view().as_raw()).is_none());
        assert!(!r.knows(a.id) && !r.knows(b.id));
    }

    #[test]
    fn an_invalidated_capture_is_a_capture_error() {
        crate::require_gpu!();
        let s = crate::CudaStream::non_blocking().unwrap();
        let other = crate::CudaStream::non_blocking().unwrap();
        let capture = crate::graph::begin_capture(s.view(), crate::graph::CaptureMode::ThreadLocal).unwrap();
        let registered = registered_capture_of(s.view()).unwrap();
        // Synchronising another stream on the capturing thread is illegal in
        // thread-local mode and invalidates the capture.
        assert!(other.synchronize().is_err(), "illegal during capture");
        let e = capture_of(s.view()).unwrap_err();
        assert!(
            matches!(&e, crate::Error::Capture { stream, .. } if *stream == s.view().as_raw()),
            "{e:?}"
        );
        // Frees still see the registered capture.
        assert_eq!(registered_capture_of(s.view()), Some(registered));
        assert!(matches!(capture.end(), Err(crate::Error::Capture { .. })));
        assert_eq!(registered_capture_of(s.view()), None);
        assert_eq!(capture_of(s.view()), Ok(None));
    }

    #[test]
    fn lookups_on_the_legacy_default_stream_ask_nothing() {
        // No driver: these must answer without one.
        assert_eq!(capture_of(CudaStreamView::DEFAULT), Ok(None));
        assert_eq!(capture_of(CudaStreamView::LEGACY), Ok(None));
        assert_eq!(registered_capture_of(CudaStreamView::DEFAULT), None);
    }
}
