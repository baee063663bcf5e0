//! The ordering between an rmm container's stream and the cudarc stream
//! that works on its memory: the protocol of
//! [`DeviceBuffer::access`](crate::DeviceBuffer::access), held open for
//! the life of a view.
//!
//! 1. Opening: cudarc's stream waits (an event) for the work queued on the
//!    memory's stream, so cudarc sees rmm's writes.
//! 2. While open: work on cudarc's stream is ordered by that stream; work
//!    that cudarc runs on *another* of its streams (`device_ptr` with a
//!    different stream) first waits for cudarc's stream, and the host waits
//!    for it once it is queued (cudarc's `SyncOnDrop::Sync`), so it is done
//!    before the view can close.
//! 3. Closing (drop): the memory's stream waits for cudarc's stream, so the
//!    memory's later work, and its free, come after everything cudarc
//!    queued through the view.

use std::sync::Arc;

use cudarc::driver::{CudaStream as CudarcStream, SyncOnDrop};

use super::context::{primary_device, same_device};
use crate::device::{DeviceGuard, DeviceId};
use crate::error::{Error, Result};
use crate::span::SpanInfo;
use crate::stream::{stream_wait, CudaStreamView};

/// An open join between the memory's stream (`owner`) and cudarc's stream.
#[derive(Debug)]
pub(super) struct Joined<'a> {
    owner: Option<CudaStreamView<'a>>,
    stream: Arc<CudarcStream>,
    device: DeviceId,
}

impl<'a> Joined<'a> {
    /// Checks and opens the join (step 1) for memory described by `info`,
    /// on `memory_device` when the caller knows it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for simulated memory; [`Error::Logic`] for
    /// a stream outside its device's primary context, or of another device
    /// than the memory's; the driver's event error.
    pub(super) fn open(
        what: &str,
        info: SpanInfo<'a>,
        memory_device: Option<DeviceId>,
        stream: &Arc<CudarcStream>,
    ) -> Result<Self> {
        if info.simulated {
            return Err(Error::InvalidArgument(format!(
                "{what}: simulated memory has no device memory behind it for cudarc to use"
            )));
        }
        let device = primary_device(stream.context(), what)?;
        if let Some(memory) = memory_device {
            same_device(memory, device, what)?;
        }
        let joined = Joined {
            owner: info.stream,
            stream: Arc::clone(stream),
            device,
        };
        if let Some(owner) = joined.owner {
            let _g = DeviceGuard::new(device)?;
            stream_wait(joined.cudarc_view(), owner)?;
        }
        Ok(joined)
    }

    /// cudarc's stream, as `DeviceSlice::stream` returns it.
    pub(super) fn stream(&self) -> &Arc<CudarcStream> {
        &self.stream
    }

    /// cudarc's stream as an rmm view, valid while `self` holds the `Arc`.
    fn cudarc_view(&self) -> CudaStreamView<'_> {
        // SAFETY: `self.stream` keeps cudarc's stream alive for the view's
        // lifetime (borrowed from `self`); its context is its device's
        // primary context (checked in `open`), the one rmm's calls use.
        unsafe { CudaStreamView::from_raw(self.stream.cu_stream() as usize) }
    }

    /// Step 2 for work cudarc queues on `stream`: nothing to do on the
    /// view's own stream; another stream first waits for it, and the host
    /// waits for that stream once the work is queued. Errors go to cudarc's
    /// context error state, as cudarc's own `device_ptr` does.
    pub(super) fn for_work_on<'s>(&'s self, stream: &'s CudarcStream) -> SyncOnDrop<'s> {
        if *stream == *self.stream {
            return SyncOnDrop::Record(None);
        }
        stream.context().record_err(stream.join(&self.stream));
        SyncOnDrop::Sync(Some(stream))
    }
}

impl Drop for Joined<'_> {
    /// Step 3; a failure is logged (a drop cannot return it).
    fn drop(&mut self) {
        let Some(owner) = self.owner else { return };
        let joined = DeviceGuard::new(self.device).and_then(|_g| stream_wait(owner, self.cudarc_view()));
        if let Err(e) = joined {
            // Without the event the host waits instead, so that the memory
            // is not freed before cudarc's work on it has run.
            let synced = self.stream.synchronize();
            log::error!(
                "cudarc view: {owner:?} could not wait for cudarc's stream {:?} ({e}); \
                 synchronised it instead: {synced:?}",
                self.cudarc_view()
            );
        }
    }
}
