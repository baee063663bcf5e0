//! rmm memory as cudarc device memory: [`CudarcView`] (read) and
//! [`CudarcViewMut`] (read and write), cudarc's `DeviceSlice` /
//! `DevicePtr` / `DevicePtrMut` over a span of an rmm container, bound to
//! one cudarc stream and ordered with the container's stream
//! (see the rules in [the module docs](super)).

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{
    sys::CUdeviceptr, CudaStream as CudarcStream, DevicePtr as CudarcDevicePtr, DevicePtrMut, DeviceSlice,
    SyncOnDrop,
};

use super::order::Joined;
use crate::device::DeviceId;
use crate::error::Result;
use crate::span::{DeviceSpan, DeviceSpanMut};

/// A read-only view of `len` elements of `T` of rmm memory, usable wherever
/// cudarc takes device memory it reads (`memcpy_dtoh`, the source of
/// `memcpy_dtod`, cuBLAS inputs, `launch_builder(..).arg(&view)`), bound to
/// a cudarc stream.
///
/// It borrows the container (or span) it came from, so the memory cannot
/// be freed, resized or written through rmm while the view lives. Making
/// it orders cudarc's stream after the container's stream; dropping it
/// orders the container's stream (and so the memory's free) after the work
/// cudarc queued through the view. Simulated memory is refused.
///
/// Made by [`CudarcView::new`] from any [`DeviceSpan`], or by the
/// containers' `cudarc_view` (which also check the device).
#[derive(Debug)]
pub struct CudarcView<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    joined: Joined<'a>,
    _borrow: PhantomData<&'a [T]>,
}

/// A writable view of rmm memory for cudarc (`memcpy_htod`, `memset_zeros`,
/// the destination of `memcpy_dtod`, cuBLAS outputs,
/// `launch_builder(..).arg(&mut view)`); see [`CudarcView`] for the rules.
#[derive(Debug)]
pub struct CudarcViewMut<'a, T> {
    ptr: CUdeviceptr,
    len: usize,
    joined: Joined<'a>,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T> CudarcView<'a, T> {
    /// A view of `span` for work on cudarc's `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for
    /// simulated memory; [`Error::Logic`](crate::Error::Logic) when
    /// `stream`'s context is not its device's primary context; the driver's
    /// event error.
    pub fn new(span: DeviceSpan<'a, T>, stream: &Arc<CudarcStream>) -> Result<Self> {
        Self::on_device(span, None, stream)
    }

    pub(super) fn on_device(
        span: DeviceSpan<'a, T>,
        device: Option<DeviceId>,
        stream: &Arc<CudarcStream>,
    ) -> Result<Self> {
        let joined = Joined::open("CudarcView", span.info(), device, stream)?;
        Ok(CudarcView {
            ptr: span.ptr().addr(),
            len: span.len(),
            joined,
            _borrow: PhantomData,
        })
    }

    /// The device address, for a kernel parameter block of your own.
    pub fn device_address(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The address as a reference, for cudarc's `PushKernelArg`.
    pub(super) fn address_arg(&self) -> &CUdeviceptr {
        &self.ptr
    }
}

impl<'a, T> CudarcViewMut<'a, T> {
    /// A writable view of `span` for work on cudarc's `stream`.
    ///
    /// # Errors
    /// As [`CudarcView::new`].
    pub fn new(span: DeviceSpanMut<'a, T>, stream: &Arc<CudarcStream>) -> Result<Self> {
        Self::on_device(span, None, stream)
    }

    pub(super) fn on_device(
        span: DeviceSpanMut<'a, T>,
        device: Option<DeviceId>,
        stream: &Arc<CudarcStream>,
    ) -> Result<Self> {
        let joined = Joined::open("CudarcViewMut", span.info(), device, stream)?;
        Ok(CudarcViewMut {
            ptr: span.ptr().addr(),
            len: span.len(),
            joined,
            _borrow: PhantomData,
        })
    }

    /// The device address, for a kernel parameter block of your own.
    pub fn device_address(&self) -> CUdeviceptr {
        self.ptr
    }

    /// The address as a reference, for cudarc's `PushKernelArg`.
    pub(super) fn address_arg(&self) -> &CUdeviceptr {
        &self.ptr
    }
}

impl<T> DeviceSlice<T> for CudarcView<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudarcStream> {
        self.joined.stream()
    }
}

impl<T> DeviceSlice<T> for CudarcViewMut<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudarcStream> {
        self.joined.stream()
    }
}

impl<T> CudarcDevicePtr<T> for CudarcView<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudarcStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, self.joined.for_work_on(stream))
    }
}

impl<T> CudarcDevicePtr<T> for CudarcViewMut<'_, T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudarcStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, self.joined.for_work_on(stream))
    }
}

impl<T> DevicePtrMut<T> for CudarcViewMut<'_, T> {
    fn device_ptr_mut<'a>(&'a mut self, stream: &'a CudarcStream) -> (CUdeviceptr, SyncOnDrop<'a>) {
        (self.ptr, self.joined.for_work_on(stream))
    }
}
