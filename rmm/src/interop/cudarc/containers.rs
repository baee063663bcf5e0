//! The containers' doors to cudarc: `cudarc_view` / `cudarc_view_mut` on
//! [`DeviceUvector`], [`DeviceBuffer`] (as bytes) and [`DeviceScalar`], and
//! on spans. The containers also check that cudarc's stream is on the
//! memory's device.

use std::sync::Arc;

use cudarc::driver::CudaStream as CudarcStream;

use super::view::{CudarcView, CudarcViewMut};
use crate::error::Result;
use crate::pod::DevicePod;
use crate::span::{DeviceSpan, DeviceSpanMut, SpanInfo};
use crate::{DeviceBuffer, DeviceScalar, DeviceUvector};

impl<T: DevicePod> DeviceUvector<T> {
    /// The elements as cudarc device memory to read on cudarc's `stream`;
    /// see [`CudarcView`].
    ///
    /// # Errors
    /// As [`CudarcView::new`], and [`Error::Logic`](crate::Error::Logic)
    /// when `stream` is on another device than the vector.
    pub fn cudarc_view(&self, stream: &Arc<CudarcStream>) -> Result<CudarcView<'_, T>> {
        CudarcView::on_device(self.as_span(), Some(self.device()), stream)
    }

    /// The elements as cudarc device memory to write on cudarc's `stream`;
    /// see [`CudarcViewMut`].
    ///
    /// # Errors
    /// As [`cudarc_view`](Self::cudarc_view).
    pub fn cudarc_view_mut(&mut self, stream: &Arc<CudarcStream>) -> Result<CudarcViewMut<'_, T>> {
        let device = self.device();
        CudarcViewMut::on_device(self.as_span_mut(), Some(device), stream)
    }
}

impl<T: DevicePod> DeviceScalar<T> {
    /// The value as cudarc device memory (one element) to read; see
    /// [`DeviceUvector::cudarc_view`].
    ///
    /// # Errors
    /// As [`DeviceUvector::cudarc_view`].
    pub fn cudarc_view(&self, stream: &Arc<CudarcStream>) -> Result<CudarcView<'_, T>> {
        self.as_uvector().cudarc_view(stream)
    }

    /// The value as cudarc device memory (one element) to write.
    ///
    /// # Errors
    /// As [`DeviceUvector::cudarc_view`].
    pub fn cudarc_view_mut(&mut self, stream: &Arc<CudarcStream>) -> Result<CudarcViewMut<'_, T>> {
        let device = self.device();
        CudarcViewMut::on_device(self.as_span_mut(), Some(device), stream)
    }
}

impl DeviceBuffer {
    /// The buffer's bytes as cudarc device memory to read; see
    /// [`DeviceUvector::cudarc_view`].
    ///
    /// # Errors
    /// As [`DeviceUvector::cudarc_view`].
    pub fn cudarc_view(&self, stream: &Arc<CudarcStream>) -> Result<CudarcView<'_, u8>> {
        // SAFETY: the span covers exactly the buffer's bytes, allocated
        // while the span (and the view) borrow the buffer, written and freed
        // on the recorded stream.
        let span = unsafe { DeviceSpan::from_raw_parts_with(self.data(), self.size(), self.span_info()) };
        CudarcView::on_device(span, Some(self.device()), stream)
    }

    /// The buffer's bytes as cudarc device memory to write.
    ///
    /// # Errors
    /// As [`DeviceUvector::cudarc_view`].
    pub fn cudarc_view_mut(&mut self, stream: &Arc<CudarcStream>) -> Result<CudarcViewMut<'_, u8>> {
        let (device, info) = (self.device(), self.span_info());
        // SAFETY: as `cudarc_view`; the exclusive borrow of the buffer rules
        // out every other view of the bytes.
        let span = unsafe { DeviceSpanMut::from_raw_parts_with(self.data(), self.size(), info) };
        CudarcViewMut::on_device(span, Some(device), stream)
    }

    /// What a span of the buffer records: its stream, and whether it is simulated.
    fn span_info(&self) -> SpanInfo<'_> {
        SpanInfo {
            stream: Some(self.stream()),
            simulated: self.is_simulated(),
        }
    }
}
