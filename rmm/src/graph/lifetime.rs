//! How long a graph uses memory: a count the driver decrements when a
//! graph and its executables are gone.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::mode::capture_error;
use super::registry::{self, ActiveCapture};
use crate::driver;
use crate::error::{Error, Result};

/// Counts the graphs that hold a private pool: +1 per
/// [`attach_lifetime`]; the driver's user-object destructor does -1 once
/// the graph and every executable instantiated from it are destroyed (by
/// then no launch of them is pending). [`alive`](Self::alive) false: no
/// graph, executable or pending launch uses the memory.
///
/// Clones share the count. The destructor runs on a driver thread,
/// asynchronously (within milliseconds on the H200, 2026-12-02): it only
/// decrements an atomic and drops an `Arc`, never calls the driver nor
/// takes a lock of ours.
#[derive(Clone, Debug, Default)]
pub(crate) struct GraphLifetime {
    refs: Arc<AtomicUsize>,
}

impl GraphLifetime {
    /// A count of 0 (no graph attached yet).
    pub(crate) fn new() -> Self {
        GraphLifetime::default()
    }

    /// True while a graph (or an executable of it) attached to this
    /// lifetime exists.
    pub(crate) fn alive(&self) -> bool {
        self.refs() > 0
    }

    /// Graphs attached and not yet destroyed.
    pub(crate) fn refs(&self) -> usize {
        self.refs.load(Ordering::Acquire)
    }
}

/// The user object's destructor: one count less.
///
/// # Safety
/// `data` came from `Arc::into_raw` of a lifetime's count in
/// [`attach_lifetime`], and this runs once for it.
unsafe extern "C" fn release_lifetime(data: *mut c_void) {
    // SAFETY: the function's contract: this reference was leaked for the
    // user object, which the driver destroys once.
    let refs = unsafe { Arc::from_raw(data as *const AtomicUsize) };
    refs.fetch_sub(1, Ordering::AcqRel);
}

/// Ties `lifetime` to the graph `capture` records into
/// (`cuUserObjectCreate` + `cuGraphRetainUserObject` with
/// `CU_GRAPH_USER_OBJECT_MOVE`): the count goes up now and down when that
/// graph and every executable instantiated from it are destroyed. Call it
/// once per pool and capture, right after [`capture_of`](super::capture_of)
/// found the capture.
///
/// The registry's read lock is held across the two driver calls: a capture
/// begun through rmm cannot end meanwhile (ending takes the write lock), so
/// its graph is live.
///
/// # Errors
/// [`Error::Capture`] when the capture has ended (an rmm capture no longer
/// registered) or the driver refuses; the count is then unchanged (or, if
/// the driver took the object but not the graph, drops back
/// asynchronously).
pub(crate) fn attach_lifetime(capture: &ActiveCapture, lifetime: &GraphLifetime) -> Result<()> {
    registry::with_read(|registry| {
        if !registry.holds(capture.id, capture.graph) {
            return Err(Error::Capture {
                stream: 0,
                reason: format!("capture {} has ended: no graph to attach memory to", capture.id),
            });
        }
        attach(capture, lifetime)
    })
}

/// The two driver calls of [`attach_lifetime`].
fn attach(capture: &ActiveCapture, lifetime: &GraphLifetime) -> Result<()> {
    lifetime.refs.fetch_add(1, Ordering::AcqRel);
    let data = Arc::into_raw(Arc::clone(&lifetime.refs)) as *mut c_void;
    // SAFETY: `release_lifetime(data)` only decrements the count and drops
    // the reference leaked just above; it is sound once, on any thread.
    let object = match unsafe { driver::user_object_create(data, release_lifetime) } {
        Ok(object) => object,
        Err(e) => {
            // The destructor will never run: undo by hand.
            // SAFETY: `data` is the reference leaked above, not given away.
            unsafe { release_lifetime(data) };
            return Err(attach_error(capture, e));
        }
    };
    // SAFETY: the graph is live (see `attach_lifetime`) and the driver
    // synchronises its own use of a capturing graph; we own the object's
    // one reference, moved to the graph on success.
    if let Err(e) = unsafe { driver::graph_retain_user_object_move(capture.graph, object) } {
        // SAFETY: the move failed, so we still own the reference; releasing
        // it runs the destructor (asynchronously), which undoes the count.
        if let Err(r) = unsafe { driver::user_object_release(object) } {
            log::error!("releasing the user object of capture {}: {r}", capture.id);
        }
        return Err(attach_error(capture, e));
    }
    Ok(())
}

fn attach_error(capture: &ActiveCapture, e: Error) -> Error {
    match capture_error(crate::CudaStreamView::DEFAULT, e) {
        Error::Capture { reason, .. } => Error::Capture {
            stream: 0,
            reason: format!("attaching a graph lifetime to capture {}: {reason}", capture.id),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_destructor_undoes_one_attach() {
        let l = GraphLifetime::new();
        assert!(!l.alive());
        l.refs.fetch_add(1, Ordering::AcqRel);
        let data = Arc::into_raw(Arc::clone(&l.refs)) as *mut c_void;
        assert!(l.alive());
        assert_eq!(Arc::strong_count(&l.refs), 2);
        // SAFETY: `data` is the reference leaked above, released once.
        unsafe { release_lifetime(data) };
        assert!(!l.alive());
        assert_eq!(l.refs(), 0);
        assert_eq!(Arc::strong_count(&l.refs), 1);
        let c = l.clone();
        c.refs.fetch_add(1, Ordering::AcqRel);
        assert_eq!(l.refs(), 1, "clones share the count");
    }

    /// Polls `done` for up to 10 s (the driver runs user-object destructors
    /// asynchronously, within milliseconds on the H200).
    fn eventually(done: impl Fn() -> bool) -> bool {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_secs(10) {
            if done() {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        done()
    }

    #[test]
    fn the_lifetime_ends_after_the_graph_and_its_executable_are_destroyed() {
        crate::require_gpu!();
        use crate::graph::{begin_capture, CaptureMode};
        let s = crate::CudaStream::non_blocking().unwrap();
        let buf = crate::DeviceBuffer::new(4096, s.view()).unwrap();
        let lifetime = GraphLifetime::new();
        let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
        let active = crate::graph::capture_of(s.view()).unwrap().unwrap();
        attach_lifetime(&active, &lifetime).unwrap();
        attach_lifetime(&active, &lifetime.clone()).unwrap();
        assert_eq!(lifetime.refs(), 2);
        // SAFETY: `buf` outlives the launch below.
        unsafe { crate::launch::memset_async(buf.data(), 1, 1, 4096, capture.stream()) }.unwrap();
        let graph = capture.end().unwrap();
        let e = attach_lifetime(&active, &lifetime).unwrap_err();
        assert!(
            matches!(&e, Error::Capture { reason, .. } if reason.contains("ended")),
            "{e:?}"
        );
        assert_eq!(lifetime.refs(), 2, "a refused attach leaves the count");
        let exec = graph.instantiate().unwrap();
        drop(graph);
        // SAFETY: `buf` is alive until the stream is synchronised below.
        unsafe { exec.launch(s.view()) }.unwrap();
        s.synchronize().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(lifetime.alive(), "the executable still holds the graph's objects");
        drop(exec);
        assert!(eventually(|| !lifetime.alive()), "refs {}", lifetime.refs());
    }

    #[test]
    fn an_abandoned_capture_ends_its_lifetime() {
        crate::require_gpu!();
        use crate::graph::{begin_capture, CaptureMode};
        let s = crate::CudaStream::non_blocking().unwrap();
        let lifetime = GraphLifetime::new();
        let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
        let active = crate::graph::capture_of(s.view()).unwrap().unwrap();
        attach_lifetime(&active, &lifetime).unwrap();
        assert!(lifetime.alive());
        drop(capture);
        assert!(eventually(|| !lifetime.alive()), "refs {}", lifetime.refs());
    }
}
