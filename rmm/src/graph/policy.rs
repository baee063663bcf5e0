//! Capturing an execution policy's work into an executable graph.
#![forbid(unsafe_code)]

use super::capture::begin_capture_in;
use super::exec::GraphExec;
use super::mode::CaptureMode;
use super::pool::GraphPool;
use crate::error::Result;
use crate::exec_policy::ExecPolicy;

impl ExecPolicy {
    /// Captures the work `f` submits on this policy's stream into a graph
    /// (global capture mode, a fresh [`GraphPool`]) and instantiates it.
    /// Scratch that `f` draws from the policy's resource during the capture
    /// belongs to the graph. See [`capture_in`](Self::capture_in).
    ///
    /// # Errors
    /// As [`capture_in`](Self::capture_in).
    ///
    /// ```no_run
    /// use rmm::exec_policy::ExecPolicy;
    /// let s = rmm::CudaStream::non_blocking()?;
    /// let policy = ExecPolicy::on_stream(s.view());
    /// let out = rmm::DeviceBuffer::new(1 << 20, s.view())?;
    /// let exec = policy.capture(|p| {
    ///     let tmp = p.scratch::<u8>(1 << 20)?;
    ///     // SAFETY: both ranges are live device memory of 1 MiB.
    ///     unsafe {
    ///         rmm::launch::memset_async(tmp.ptr(), 7, 1, 1 << 20, p.stream())?;
    ///         rmm::launch::memcpy_async(out.data(), tmp.ptr(), 1 << 20, p.stream())
    ///     }
    /// })?;
    /// for _ in 0..10 {
    ///     // SAFETY: `out` lives as long as every launch.
    ///     unsafe { exec.launch(s.view())? };
    /// }
    /// s.synchronize()?;
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn capture(&self, f: impl FnOnce(&ExecPolicy) -> Result<()>) -> Result<GraphExec> {
        self.capture_in(&GraphPool::new(), f)
    }

    /// As [`capture`](Self::capture), with the private pool `pool` (shared
    /// with other graphs captured with it, which must never run at the same
    /// time).
    ///
    /// The capture always ends, whatever `f` returns.
    ///
    /// # Errors
    /// [`Error::Capture`](crate::Error::Capture) for a policy on the legacy
    /// default stream or an invalidated capture; `f`'s error (first); the
    /// driver's error from instantiation.
    pub fn capture_in(
        &self,
        pool: &GraphPool,
        f: impl FnOnce(&ExecPolicy) -> Result<()>,
    ) -> Result<GraphExec> {
        let capture = begin_capture_in(self.stream(), CaptureMode::Global, pool)?;
        let work = f(self);
        let graph = capture.end();
        work?;
        graph?.instantiate()
    }
}
