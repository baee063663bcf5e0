//! Streams across the two libraries.
//!
//! cudarc → rmm: [`CudaStream::from_cudarc`] keeps cudarc's
//! `Arc<CudaStream>` alive inside an rmm stream, so every view of it, every
//! [`StreamRef`] (containers, execution policies) and every allocation and
//! free made on it is stream-ordered on cudarc's stream, and the stream
//! lives until the last of them drops.
//!
//! rmm → cudarc: cudarc can adopt a foreign stream only as a borrowed
//! handle (`CudaContext::wrap_borrowed_stream`, which cannot keep the owner
//! alive), so the safe direction is to make the stream in cudarc and hand it
//! to rmm; [`CudaStream::cudarc`] gives back cudarc's `Arc`. For a stream
//! rmm made, [`CudaStreamView::to_cudarc_borrowed`] is the `unsafe` bridge.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream as CudarcStream};

use super::context::primary_device;
use crate::error::Result;
use crate::stream::{CudaStream, CudaStreamView, StreamRef};

impl CudaStream {
    /// An rmm stream over cudarc's `stream`, which it keeps alive: cudarc
    /// destroys the stream when the last `Arc` drops, this one's included.
    ///
    /// cudarc's default and per-thread streams are accepted and keep their
    /// meaning ([`CudaStreamView::is_default`] is then true for the former).
    ///
    /// # Errors
    /// [`Error::Logic`](crate::Error::Logic) when `stream` belongs to a context other than its
    /// device's primary context; the driver's error when that device has no
    /// usable primary context.
    ///
    /// ```no_run
    /// use cudarc::driver::CudaContext;
    /// let ctx = CudaContext::new(0).expect("a GPU");
    /// let stream = rmm::CudaStream::from_cudarc(ctx.new_stream().expect("a stream"))?;
    /// let v = rmm::DeviceUvector::<f32>::new(1024, stream.view())?; // allocated on cudarc's stream
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn from_cudarc(stream: Arc<CudarcStream>) -> Result<Self> {
        primary_device(stream.context(), "CudaStream::from_cudarc")?;
        Ok(CudaStream::wrap_cudarc(stream))
    }

    /// The cudarc stream this stream was made from ([`from_cudarc`](Self::from_cudarc)),
    /// or `None` for a stream rmm made.
    pub fn cudarc(&self) -> Option<&Arc<CudarcStream>> {
        self.cudarc_stream()
    }
}

impl StreamRef {
    /// An owned reference that keeps cudarc's `stream` alive; see
    /// [`CudaStream::from_cudarc`].
    ///
    /// # Errors
    /// As [`CudaStream::from_cudarc`].
    pub fn from_cudarc(stream: Arc<CudarcStream>) -> Result<Self> {
        CudaStream::from_cudarc(stream).map(StreamRef::from)
    }
}

impl CudaStreamView<'_> {
    /// This stream as a cudarc stream of `ctx`, borrowed: dropping the
    /// returned `Arc` does not destroy the stream, and nothing keeps the
    /// stream alive for it. The special streams keep their handles (the
    /// default stream is cudarc's `default_stream`).
    ///
    /// # Errors
    /// [`Error::Logic`](crate::Error::Logic) when `ctx` is not its device's primary context.
    ///
    /// # Safety
    /// This view's stream belongs to `ctx`'s device, and outlives the
    /// returned `Arc` and every clone of it (including those cudarc keeps in
    /// slices and events made on it). Work submitted through cudarc is
    /// ordered with rmm's work on other streams by the caller (the views of
    /// [`super::CudarcView`] do this for rmm memory).
    pub unsafe fn to_cudarc_borrowed(self, ctx: &Arc<CudaContext>) -> Result<Arc<CudarcStream>> {
        primary_device(ctx, "CudaStreamView::to_cudarc_borrowed")?;
        // SAFETY: the caller promises the stream is live, of `ctx`'s device
        // (whose primary context `ctx` is, checked above), and outlives the
        // wrapper; ordering is the caller's, as cudarc's contract asks.
        Ok(unsafe { ctx.wrap_borrowed_stream(self.as_raw() as cudarc::driver::sys::CUstream) })
    }
}
