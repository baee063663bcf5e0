//! [`DeviceScalar`]: one value in device memory (`rmm::device_scalar`).
#![forbid(unsafe_code)]

#[cfg(feature = "cust")]
use cust::memory::DeviceCopy;

use crate::pod::DevicePod;

use crate::device::DeviceId;
use crate::error::Result;
use crate::mr::{current_device_resource, MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;
use crate::uvector::DeviceUvector;

/// A single `T` in device memory, e.g. a counter a kernel updates and the
/// host reads back. Uninitialized unless made with a value (see the
/// [`uvector`](crate::uvector) module docs on reading unwritten memory).
///
/// Thread safety: `Send + Sync`.
///
/// ```no_run
/// use rmm::{CudaStream, DeviceScalar};
/// let s = CudaStream::new()?;
/// let mut x = DeviceScalar::with_value(41u64, s.view())?;
/// x.set_value_async(42, s.view())?;
/// assert_eq!(x.value(s.view())?, 42);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceScalar<T: DevicePod> {
    inner: DeviceUvector<T>,
}

impl<T: DevicePod> DeviceScalar<T> {
    /// An uninitialized scalar from the current device's resource.
    ///
    /// # Errors
    /// As [`DeviceUvector::with_resource`].
    pub fn new(stream: CudaStreamView) -> Result<Self> {
        Self::with_resource(stream, current_device_resource())
    }

    /// An uninitialized scalar from `resource`.
    ///
    /// # Errors
    /// As [`DeviceUvector::with_resource`].
    pub fn with_resource<R: MemoryResource>(stream: CudaStreamView, resource: R) -> Result<Self> {
        Ok(DeviceScalar {
            inner: DeviceUvector::with_resource(1, stream, resource)?,
        })
    }

    /// A scalar holding `value`, from the current device's resource; the
    /// value is written in `stream` order without blocking.
    ///
    /// # Errors
    /// As [`with_value_and_resource`](Self::with_value_and_resource).
    pub fn with_value(value: T, stream: CudaStreamView) -> Result<Self> {
        Self::with_value_and_resource(value, stream, current_device_resource())
    }

    /// A scalar holding `value`, from `resource`.
    ///
    /// # Errors
    /// As [`DeviceUvector::with_resource`] and
    /// [`set_value_async`](Self::set_value_async).
    pub fn with_value_and_resource<R: MemoryResource>(
        value: T,
        stream: CudaStreamView,
        resource: R,
    ) -> Result<Self> {
        let mut s = Self::with_resource(stream, resource)?;
        s.set_value_async(value, stream)?;
        Ok(s)
    }

    /// A deep copy from `resource` on `stream`.
    ///
    /// # Errors
    /// As [`DeviceUvector::try_clone_on`].
    pub fn try_clone_on<R: MemoryResource>(&self, stream: CudaStreamView, resource: R) -> Result<Self> {
        Ok(DeviceScalar {
            inner: self.inner.try_clone_on(stream, resource)?,
        })
    }

    /// The value, copied to the host on `stream`; synchronises `stream`.
    ///
    /// # Errors
    /// As [`DeviceUvector::element`].
    pub fn value(&self, stream: CudaStreamView) -> Result<T> {
        self.inner.element(0, stream)
    }

    /// Writes `value` in `stream` order without blocking (the host value
    /// need not outlive the call); see [`DeviceUvector::set_element_async`].
    ///
    /// # Errors
    /// As [`DeviceUvector::set_element_async`].
    pub fn set_value_async(&mut self, value: T, stream: CudaStreamView) -> Result<()> {
        self.inner.set_element_async(0, value, stream)
    }

    /// Sets all bytes of the value to zero in `stream` order.
    ///
    /// # Errors
    /// As [`DeviceUvector::set_element_to_zero_async`].
    pub fn set_value_to_zero_async(&mut self, stream: CudaStreamView) -> Result<()> {
        self.inner.set_element_to_zero_async(0, stream)
    }

    /// Address of the value in device memory.
    pub fn data(&self) -> DevicePtr {
        self.inner.data()
    }

    /// The address as a cust pointer, for `launch!` (`cust` feature).
    #[cfg(feature = "cust")]
    pub fn as_cust_ptr(&self) -> cust::memory::DevicePointer<T>
    where
        T: DeviceCopy,
    {
        self.inner.as_cust_ptr()
    }

    /// The stream the scalar is ordered on (kept alive by the scalar).
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.inner.stream()
    }

    /// Makes `stream` the scalar's stream; see [`crate::DeviceBuffer::set_stream`].
    ///
    /// # Errors
    /// As [`crate::DeviceBuffer::set_stream`].
    pub fn set_stream(&mut self, stream: CudaStreamView) -> Result<()> {
        self.inner.set_stream(stream)
    }

    /// The resource that owns the memory.
    pub fn resource(&self) -> &SharedResource {
        self.inner.resource()
    }

    /// The device that was current when the scalar was made.
    pub fn device(&self) -> DeviceId {
        self.inner.device()
    }

    /// The scalar as a one-element vector.
    pub fn as_uvector(&self) -> &DeviceUvector<T> {
        &self.inner
    }

    /// A writable one-element span, for kernels that write the value.
    pub fn as_span_mut(&mut self) -> crate::span::DeviceSpanMut<'_, T> {
        self.inner.as_span_mut()
    }
}
