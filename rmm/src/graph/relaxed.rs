//! Relaxed capture mode for the calling thread, for the life of a guard.

use std::marker::PhantomData;

use crate::driver::{self, StreamCaptureMode};
use crate::error::Result;

/// Swaps the calling thread's capture mode to relaxed
/// (`cuThreadExchangeStreamCaptureMode`) while it lives, so that
/// synchronous calls on objects outside any capture (`cuMemAlloc`,
/// `cuMemFree`, `cuMemHostAlloc`, `cuStreamSynchronize` of a stream that is
/// not capturing) are legal while some stream captures; restores the
/// previous mode when dropped. Without it those calls fail and invalidate
/// every global-mode capture of the process (measured on the H200,
/// 2026-12-02).
///
/// The mode is the thread's, so the guard is neither `Send` nor `Sync`.
/// Guards nest (each restores what it found).
#[derive(Debug)]
pub(crate) struct RelaxedCaptureMode {
    previous: StreamCaptureMode,
    _thread_bound: PhantomData<*const ()>,
}

impl RelaxedCaptureMode {
    /// Enters relaxed mode on this thread (about 10 ns on the H200).
    ///
    /// # Errors
    /// The driver's error ([`Error::DriverUnavailable`](crate::Error::DriverUnavailable)
    /// without a driver).
    pub(crate) fn enter() -> Result<Self> {
        let previous = driver::exchange_capture_mode(StreamCaptureMode::Relaxed)?;
        Ok(RelaxedCaptureMode {
            previous,
            _thread_bound: PhantomData,
        })
    }
}

impl Drop for RelaxedCaptureMode {
    fn drop(&mut self) {
        if let Err(e) = driver::exchange_capture_mode(self.previous) {
            log::error!("restoring the thread's capture mode {:?}: {e}", self.previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{begin_capture, CaptureMode, CaptureStatus};

    #[test]
    fn relaxed_mode_lets_this_thread_allocate_while_it_captures() {
        crate::require_gpu!();
        let s = crate::CudaStream::non_blocking().unwrap();
        let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
        {
            let _relaxed = RelaxedCaptureMode::enter().unwrap();
            let p = driver::mem_alloc(1 << 20).unwrap();
            {
                let _nested = RelaxedCaptureMode::enter().unwrap();
            }
            // Still relaxed after the nested guard.
            let q = driver::mem_alloc(1 << 20).unwrap();
            // SAFETY: both were just allocated and are unused.
            unsafe { driver::mem_free(p).and(driver::mem_free(q)) }.unwrap();
            let side = crate::graph::side_stream(None).unwrap();
            side.synchronize().unwrap();
        }
        assert_eq!(
            s.view().capture_status().unwrap(),
            CaptureStatus::Active { id: capture.id() }
        );
        drop(capture.end().unwrap());
        // The guard restored thread-local mode: the same call now fails and
        // invalidates the capture.
        let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
        assert!(driver::mem_alloc(1 << 20).is_err());
        assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::Invalidated);
        assert!(capture.end().is_err());
    }
}
