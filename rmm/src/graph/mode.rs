//! Capture modes and a stream's capture status.

use crate::driver::{self, CaptureState, StreamCaptureMode};
use crate::error::{Error, Result};
use crate::stream::CudaStreamView;

/// Which driver calls a capture forbids while it runs (`CUstreamCaptureMode`).
///
/// | Mode | Calls that could synchronise with the capture (`cuMemAlloc`, `cuMemFree`, `cuStreamSynchronize` of another stream, ...) |
/// |---|---|
/// | [`Global`](Self::Global) | refused on the capturing thread, and on every other thread not in relaxed mode, while the capture runs |
/// | [`ThreadLocal`](Self::ThreadLocal) | refused on the capturing thread only |
/// | [`Relaxed`](Self::Relaxed) | allowed (the caller keeps them away from the capture) |
///
/// A refused call fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and
/// **invalidates** the capture (measured on the H200, 2026-12-02).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureMode {
    /// `CU_STREAM_CAPTURE_MODE_GLOBAL` (the safest; what
    /// [`ExecPolicy::capture`](crate::exec_policy::ExecPolicy::capture) uses).
    Global,
    /// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`.
    ThreadLocal,
    /// `CU_STREAM_CAPTURE_MODE_RELAXED`.
    Relaxed,
}

impl CaptureMode {
    /// The driver layer's mode.
    pub(crate) fn to_driver(self) -> StreamCaptureMode {
        match self {
            CaptureMode::Global => StreamCaptureMode::Global,
            CaptureMode::ThreadLocal => StreamCaptureMode::ThreadLocal,
            CaptureMode::Relaxed => StreamCaptureMode::Relaxed,
        }
    }
}

/// Whether a stream is capturing (`cuStreamGetCaptureInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaptureStatus {
    /// The stream is not capturing: work runs when submitted.
    None,
    /// The stream is capturing: work is recorded into a graph. Streams
    /// joined to one capture (through an event recorded inside it) report
    /// the same `id`, unique in the process.
    Active {
        /// The capture sequence's id.
        id: u64,
    },
    /// The capture was invalidated by an illegal call; it must be ended
    /// (which yields no graph).
    Invalidated,
}

impl From<CaptureState> for CaptureStatus {
    fn from(s: CaptureState) -> Self {
        match s {
            CaptureState::None => CaptureStatus::None,
            CaptureState::Active { id, .. } => CaptureStatus::Active { id },
            CaptureState::Invalidated => CaptureStatus::Invalidated,
        }
    }
}

impl CudaStreamView<'_> {
    /// Whether this stream is capturing into a graph.
    ///
    /// The legacy default stream ([`CudaStreamView::DEFAULT`],
    /// [`CudaStreamView::LEGACY`]) cannot be captured: it answers
    /// [`CaptureStatus::None`] without a driver call. Any other stream,
    /// the per-thread default stream included, is asked of the driver
    /// (about 34 ns on the H200).
    ///
    /// # Errors
    /// [`Error::Capture`] when the driver call fails; [`Error::DriverUnavailable`]
    /// without a driver.
    ///
    /// ```no_run
    /// use rmm::graph::{begin_capture, CaptureMode, CaptureStatus};
    /// let s = rmm::CudaStream::non_blocking()?;
    /// assert_eq!(s.view().capture_status()?, CaptureStatus::None);
    /// let capture = begin_capture(s.view(), CaptureMode::Global)?;
    /// assert!(matches!(s.view().capture_status()?, CaptureStatus::Active { .. }));
    /// drop(capture.end()?);
    /// assert_eq!(s.view().capture_status()?, CaptureStatus::None);
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn capture_status(self) -> Result<CaptureStatus> {
        capture_state(self).map(CaptureStatus::from)
    }
}

/// The driver's capture state of `stream`; the legacy default stream is
/// never capturing (no driver call).
pub(crate) fn capture_state(stream: CudaStreamView<'_>) -> Result<CaptureState> {
    if stream.is_default() {
        return Ok(CaptureState::None);
    }
    // SAFETY: a view's stream is live for its lifetime (see
    // `CudaStreamView::handle`).
    unsafe { driver::stream_capture_info(stream.handle()) }.map_err(|e| capture_error(stream, e))
}

/// A driver error of a capture call on `stream` as [`Error::Capture`]
/// (naming the call and the driver's code); other errors unchanged.
pub(crate) fn capture_error(stream: CudaStreamView<'_>, e: Error) -> Error {
    match e {
        Error::Cuda { name, call, .. } => Error::Capture {
            stream: stream.as_raw(),
            reason: format!("{call} returned {name}"),
        },
        other => other,
    }
}

/// The [`Error::Capture`] of an invalidated capture on `stream`.
pub(crate) fn invalidated(stream: CudaStreamView<'_>) -> Error {
    Error::Capture {
        stream: stream.as_raw(),
        reason: "the capture was invalidated by a call that is illegal during capture \
                 (a synchronous allocation, free or synchronisation, or a wait on an event \
                 recorded outside the capture); end it and capture again"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_errors_of_capture_calls_name_the_stream_and_call() {
        // SAFETY: used for its number only, never given to the driver.
        let s = unsafe { CudaStreamView::from_raw(0xabc0) };
        let e = capture_error(
            s,
            Error::Cuda {
                code: 901,
                name: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
                call: "cuStreamEndCapture",
            },
        );
        assert_eq!(
            e.to_string(),
            "stream capture on stream 0xabc0: cuStreamEndCapture returned CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"
        );
        let other = Error::DriverUnavailable("none".into());
        assert_eq!(capture_error(s, other.clone()), other);
        assert!(matches!(invalidated(s), Error::Capture { stream: 0xabc0, .. }));
        assert_eq!(CaptureStatus::from(CaptureState::None), CaptureStatus::None);
        assert_eq!(CaptureMode::Relaxed.to_driver(), StreamCaptureMode::Relaxed);
    }

    #[test]
    fn the_legacy_default_stream_never_captures() {
        // No driver call: this holds without a GPU too.
        assert_eq!(CudaStreamView::DEFAULT.capture_status(), Ok(CaptureStatus::None));
        assert_eq!(CudaStreamView::LEGACY.capture_status(), Ok(CaptureStatus::None));
    }
}
