//! The capture guard: begin a capture on a stream, end it into a graph.

use std::marker::PhantomData;

use super::exec::Graph;
use super::mode::CaptureMode;
use super::pool::GraphPool;
use super::registry;
use crate::device::DeviceId;
use crate::driver;
use crate::error::{Error, Result};
use crate::stream::{CudaStreamView, StreamRef};

/// A capture in progress on a stream: work submitted to the stream is
/// recorded into a graph instead of running, until [`end`](Self::end)
/// returns that [`Graph`].
///
/// The guard keeps the stream alive (a [`StreamRef`]) and names the
/// [`GraphPool`] that memory allocated on the stream during the capture
/// comes from. Dropped without `end`, it ends the capture and destroys the
/// graph (logging any error; it never panics), so the stream is usable
/// again.
///
/// Not `Send`: in [`CaptureMode::Global`] and [`CaptureMode::ThreadLocal`]
/// the driver requires the capture to end on the thread that began it.
#[derive(Debug)]
pub struct Capture {
    stream: StreamRef,
    id: u64,
    pool: GraphPool,
    device: DeviceId,
    ended: bool,
    _thread_bound: PhantomData<*const ()>,
}

/// Begins a capture on `stream` with a fresh [`GraphPool`] (the graph's
/// memory is its own). See [`begin_capture_in`].
///
/// # Errors
/// As [`begin_capture_in`].
pub fn begin_capture(stream: CudaStreamView<'_>, mode: CaptureMode) -> Result<Capture> {
    begin_capture_in(stream, mode, &GraphPool::new())
}

/// Begins a capture on `stream` (`cuStreamBeginCapture`) whose allocations
/// come from `pool`'s private pools; registers it so that every resource
/// sees it.
///
/// Use a non-blocking stream ([`CudaStream::non_blocking`](crate::CudaStream::non_blocking)):
/// while a stream that synchronises with the legacy default stream
/// captures, legacy-default-stream work anywhere in the process fails
/// (`CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`) and invalidates the capture.
///
/// # Errors
/// [`Error::Capture`] for the legacy default stream (which cannot be
/// captured; the per-thread default stream can), a stream already
/// capturing, or another refusal of the driver.
///
/// ```no_run
/// use rmm::graph::{begin_capture_in, CaptureMode, GraphPool};
/// let s = rmm::CudaStream::non_blocking()?;
/// let shared = GraphPool::new();
/// // Two graphs that never run at the same time may share memory.
/// let a = begin_capture_in(s.view(), CaptureMode::Global, &shared)?.end()?;
/// let b = begin_capture_in(s.view(), CaptureMode::Global, &shared)?.end()?;
/// # drop((a, b));
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn begin_capture_in(stream: CudaStreamView<'_>, mode: CaptureMode, pool: &GraphPool) -> Result<Capture> {
    if stream.is_default() {
        return Err(Error::Capture {
            stream: stream.as_raw(),
            reason: "the legacy default stream cannot be captured; capture a CudaStream \
                     or the per-thread default stream"
                .into(),
        });
    }
    // SAFETY: a view's stream is live for its lifetime.
    let device = DeviceId(unsafe { driver::stream_device(stream.handle()) }?);
    let (id, _graph) = registry::begin(stream, mode.to_driver(), pool.pool_id(), device)?;
    Ok(Capture {
        stream: StreamRef::from(stream),
        id,
        pool: pool.clone(),
        device,
        ended: false,
        _thread_bound: PhantomData,
    })
}

impl Capture {
    /// The pool memory allocated during this capture comes from.
    pub fn pool(&self) -> &GraphPool {
        &self.pool
    }

    /// The capturing stream.
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.stream.view()
    }

    /// The driver's id of this capture (what
    /// [`CaptureStatus::Active`](super::CaptureStatus::Active) reports).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Ends the capture (`cuStreamEndCapture`) and returns its graph.
    ///
    /// # Errors
    /// [`Error::Capture`] when the capture was invalidated (a call illegal
    /// during capture was made) or the driver refuses to end it (e.g. a
    /// stream joined to the capture was not joined back); the capture is
    /// over either way and the stream usable.
    pub fn end(mut self) -> Result<Graph> {
        self.ended = true;
        let handle = registry::end(self.stream.view(), self.id)?;
        Ok(Graph::from_capture(handle, self.device))
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        match registry::end(self.stream.view(), self.id) {
            // The graph of an abandoned capture: destroyed at once.
            Ok(graph) => drop(Graph::from_capture(graph, self.device)),
            Err(e) => log::warn!("ending the dropped capture {}: {e}", self.id),
        }
    }
}
