//! [`DeviceUvector`]: a typed, uninitialized device vector
//! (`rmm::device_uvector`), backed by a [`DeviceBuffer`].
//!
//! Element types are [`DevicePod`]: plain bits for which every bit pattern
//! is a valid value (integers, floats, arrays of them). New elements are
//! **uninitialized**: their bytes are whatever the memory held, and reading
//! an element that was never written returns those bytes as a `T`, which is
//! unspecified but never undefined behaviour.
//!
//! # Interop with cust (the `cust` feature)
//! [`DeviceUvector::data`] is the raw address, and the spans
//! ([`DeviceUvector::as_span`], [`DeviceUvector::as_span_mut`]) are what the
//! kernels of `rmm-suite` take ([`crate::launch`]). With the `cust` feature
//! (which links libcuda at build time), for Rust-CUDA code:
//! * `DeviceUvector::as_cust_ptr` is a `cust::memory::DevicePointer<T>`
//!   for `launch!`.
//! * `DeviceUvector::from_cust` adopts a `cust::memory::DeviceBuffer<T>`
//!   without a copy. cust frees its buffers with `cuMemFree`, so the vector
//!   frees the memory through a
//!   [`mr::CudaMemoryResource`](crate::mr::CudaMemoryResource) (which does
//!   the same). The buffer must belong to the current device.
//! * `DeviceUvector::into_cust` goes the other way only when the vector's
//!   resource is the [`mr::CudaMemoryResource`](crate::mr::CudaMemoryResource)
//!   itself (not an adaptor over it, not a pool: their memory must go back to
//!   them) and its length equals its capacity; otherwise the vector is handed
//!   back with an [`Error::Logic`].
//! * For any other resource, copy instead: `cust::memory::DeviceBuffer::from_slice`
//!   of [`DeviceUvector::copy_to_host`], or a device-to-device copy through
//!   `DeviceUvector::as_cust_ptr`.

use std::mem::{size_of, MaybeUninit};

#[cfg(feature = "cust")]
use cust::memory::DeviceCopy;

use crate::pod::DevicePod;

use crate::align::CUDA_ALLOCATION_ALIGNMENT;
use crate::buffer::DeviceBuffer;
#[cfg(feature = "cust")]
use crate::buffer::RawBufferParts;
#[cfg(feature = "cust")]
use crate::device::current_device;
use crate::device::DeviceId;
use crate::error::{Error, Result};
#[cfg(feature = "cust")]
use crate::mr::CudaMemoryResource;
use crate::mr::{current_device_resource, MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::span::{DeviceSpan, DeviceSpanMut, SpanInfo};
use crate::stream::CudaStreamView;
#[cfg(feature = "cust")]
use crate::stream::StreamRef;

/// Byte size of `n` elements of `T`, checked.
///
/// # Errors
/// [`Error::InvalidArgument`] for a zero-sized `T` or when the size overflows.
///
/// ```
/// use rmm::uvector::byte_size;
/// assert_eq!(byte_size::<u32>(10)?, 40);
/// assert!(byte_size::<u64>(usize::MAX / 4).is_err());
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn byte_size<T>(n: usize) -> Result<usize> {
    let size = size_of::<T>();
    if size == 0 {
        return Err(Error::InvalidArgument(
            "zero-sized element types are not supported by device containers".into(),
        ));
    }
    n.checked_mul(size).ok_or_else(|| {
        Error::InvalidArgument(format!("{n} elements of {size} bytes overflow the address space"))
    })
}

/// The widest memset element (4, 2 or 1 bytes) that divides both `size` and
/// the address `addr`, and how many of them make `size` bytes.
fn memset_plan(size: usize, addr: u64) -> (usize, usize) {
    let width = [4usize, 2]
        .into_iter()
        .find(|&w| size.is_multiple_of(w) && addr.is_multiple_of(w as u64))
        .unwrap_or(1);
    (width, size / width)
}

/// A typed, uninitialized vector in device memory (`rmm::device_uvector<T>`).
///
/// Move only; a deep copy is [`try_clone_on`](Self::try_clone_on). Elements
/// are stored with 256-byte alignment of the first element.
///
/// Thread safety: `Send + Sync` (like [`DeviceBuffer`]).
///
/// ```no_run
/// use rmm::{CudaStream, DeviceUvector};
/// let s = CudaStream::new()?;
/// let mut v = DeviceUvector::from_slice(&[1u32, 2, 3], s.view())?;
/// v.set_element(1, 20, s.view())?;
/// assert_eq!(v.element(1, s.view())?, 20);
/// assert_eq!(v.copy_to_host(s.view())?, vec![1, 20, 3]);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceUvector<T: DevicePod> {
    buf: DeviceBuffer,
    _marker: std::marker::PhantomData<T>,
}

/// Returned by [`DeviceUvector::into_cust`] when the memory cannot be handed
/// to cust; gives the vector back (`cust` feature).
#[cfg(feature = "cust")]
#[derive(Debug)]
pub struct IntoCustError<T: DevicePod> {
    /// Why it failed ([`Error::Logic`]).
    pub error: Error,
    /// The vector, unchanged.
    pub uvector: Box<DeviceUvector<T>>,
}

impl<T: DevicePod> DeviceUvector<T> {
    /// `len` uninitialized elements from the current device's resource.
    ///
    /// # Errors
    /// As [`with_resource`](Self::with_resource).
    pub fn new(len: usize, stream: CudaStreamView) -> Result<Self> {
        Self::with_resource(len, stream, current_device_resource())
    }

    /// `len` uninitialized elements from `resource`, on `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the byte size overflows or `T` is
    /// zero-sized; [`Error::BadAlloc`] when `T` needs more than 256-byte
    /// alignment; the resource's allocation error.
    ///
    /// ```
    /// use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceUvector, Error};
    /// let sim = SimulatedMemoryResource::new(1 << 20);
    /// let v = DeviceUvector::<u64>::with_resource(10, CudaStreamView::DEFAULT, sim.clone())?;
    /// assert_eq!((v.len(), v.size_bytes()), (10, 80));
    /// let e = DeviceUvector::<u64>::with_resource(usize::MAX / 2, CudaStreamView::DEFAULT, sim);
    /// assert!(matches!(e, Err(Error::InvalidArgument(_))));
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn with_resource<R: MemoryResource>(len: usize, stream: CudaStreamView, resource: R) -> Result<Self> {
        let bytes = byte_size::<T>(len)?;
        let alignment = std::mem::align_of::<T>().max(CUDA_ALLOCATION_ALIGNMENT);
        let buf = DeviceBuffer::with_alignment(bytes, alignment, stream, resource)?;
        Ok(DeviceUvector {
            buf,
            _marker: std::marker::PhantomData,
        })
    }

    /// A vector holding a copy of `values`, from the current device's
    /// resource; synchronises `stream`.
    ///
    /// # Errors
    /// As [`from_slice_with_resource`](Self::from_slice_with_resource).
    pub fn from_slice(values: &[T], stream: CudaStreamView) -> Result<Self> {
        Self::from_slice_with_resource(values, stream, current_device_resource())
    }

    /// A vector holding a copy of `values`, from `resource`; synchronises `stream`.
    ///
    /// # Errors
    /// As [`with_resource`](Self::with_resource) and
    /// [`copy_from_host`](Self::copy_from_host).
    pub fn from_slice_with_resource<R: MemoryResource>(
        values: &[T],
        stream: CudaStreamView,
        resource: R,
    ) -> Result<Self> {
        let mut v = Self::with_resource(values.len(), stream, resource)?;
        v.copy_from_host(values, stream)?;
        Ok(v)
    }

    /// A vector holding a copy of `len` elements at `src` (device, managed or
    /// host memory; the driver infers the direction), from `resource`,
    /// copied on `stream` without synchronising.
    ///
    /// # Safety
    /// `[src, src + len * size_of::<T>())` holds `len` valid `T`s that the
    /// driver can copy from, and stays valid and unchanged until the copy has
    /// run in `stream` order.
    ///
    /// # Errors
    /// As [`with_resource`](Self::with_resource) and [`DeviceBuffer::from_device`].
    pub unsafe fn from_device<R: MemoryResource>(
        src: DevicePtr,
        len: usize,
        stream: CudaStreamView,
        resource: R,
    ) -> Result<Self> {
        let bytes = byte_size::<T>(len)?;
        let v = Self::with_resource(len, stream, resource)?;
        // SAFETY: forwarded contract; `v` is freshly allocated with `bytes` bytes.
        let buf = unsafe { DeviceBuffer::from_device_into(v.buf, src, bytes, stream)? };
        Ok(DeviceUvector {
            buf,
            _marker: std::marker::PhantomData,
        })
    }

    /// Reinterprets a buffer as elements of `T`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the buffer's size is not a multiple of
    /// `size_of::<T>()` or `T` is zero-sized, or the buffer's alignment is
    /// smaller than `T`'s (the buffer is dropped in that case).
    pub fn from_buffer(buf: DeviceBuffer) -> Result<Self> {
        let size = size_of::<T>();
        byte_size::<T>(0)?;
        if !buf.size().is_multiple_of(size) || buf.alignment() < std::mem::align_of::<T>() {
            return Err(Error::InvalidArgument(format!(
                "a buffer of {} bytes aligned to {} does not hold elements of {} bytes aligned to {}",
                buf.size(),
                buf.alignment(),
                size,
                std::mem::align_of::<T>()
            )));
        }
        Ok(DeviceUvector {
            buf,
            _marker: std::marker::PhantomData,
        })
    }

    /// A deep copy from `resource`, copied on `stream`; see
    /// [`DeviceBuffer::try_clone_on`].
    ///
    /// # Errors
    /// As [`DeviceBuffer::try_clone_on`].
    pub fn try_clone_on<R: MemoryResource>(&self, stream: CudaStreamView, resource: R) -> Result<Self> {
        Ok(DeviceUvector {
            buf: self.buf.try_clone_on(stream, resource)?,
            _marker: std::marker::PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.buf.size() / size_of::<T>()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Number of elements the allocation can hold.
    pub fn capacity(&self) -> usize {
        self.buf.capacity() / size_of::<T>()
    }

    /// Size of the elements in bytes.
    pub fn size_bytes(&self) -> usize {
        self.buf.size()
    }

    /// Address of the first element (null when the capacity is 0).
    pub fn data(&self) -> DevicePtr {
        self.buf.data()
    }

    /// The first element's address as a cust pointer, for `launch!` (`cust` feature).
    #[cfg(feature = "cust")]
    pub fn as_cust_ptr(&self) -> cust::memory::DevicePointer<T>
    where
        T: DeviceCopy,
    {
        self.buf.data().as_cust()
    }

    /// A read-only span of the elements.
    ///
    /// The span records the vector's stream and whether its memory is
    /// simulated (see [`SpanInfo`]).
    pub fn as_span(&self) -> DeviceSpan<'_, T> {
        // SAFETY: the span covers exactly the vector's elements, which stay
        // allocated while the span borrows the vector and are freed on the
        // recorded stream; writes to them are ordered on that stream.
        unsafe { DeviceSpan::from_raw_parts_with(self.buf.data(), self.len(), self.span_info()) }
    }

    /// A writable span of the elements; see [`as_span`](Self::as_span).
    pub fn as_span_mut(&mut self) -> DeviceSpanMut<'_, T> {
        let info = self.span_info();
        // SAFETY: as `as_span`; the exclusive borrow rules out other views.
        unsafe { DeviceSpanMut::from_raw_parts_with(self.buf.data(), self.len(), info) }
    }

    fn span_info(&self) -> SpanInfo<'_> {
        SpanInfo {
            stream: Some(self.buf.stream()),
            simulated: self.buf.is_simulated(),
        }
    }

    /// The stream the vector is ordered on (kept alive by the vector).
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.buf.stream()
    }

    /// Makes `stream` the vector's stream; see [`DeviceBuffer::set_stream`].
    ///
    /// # Errors
    /// As [`DeviceBuffer::set_stream`].
    pub fn set_stream(&mut self, stream: CudaStreamView) -> Result<()> {
        self.buf.set_stream(stream)
    }

    /// The resource that owns the memory.
    pub fn resource(&self) -> &SharedResource {
        self.buf.resource()
    }

    /// The device that was current when the vector was made.
    pub fn device(&self) -> DeviceId {
        self.buf.device()
    }

    /// The underlying buffer.
    pub fn as_buffer(&self) -> &DeviceBuffer {
        &self.buf
    }

    /// Gives up the typed view: the memory as a [`DeviceBuffer`] of
    /// `len() * size_of::<T>()` bytes (capacity kept).
    pub fn release(self) -> DeviceBuffer {
        self.buf
    }

    /// Resizes to `len` elements; see [`DeviceBuffer::resize`]. New elements
    /// are uninitialized.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the byte size overflows; as
    /// [`DeviceBuffer::resize`].
    pub fn resize(&mut self, len: usize, stream: CudaStreamView) -> Result<()> {
        self.buf.resize(byte_size::<T>(len)?, stream)
    }

    /// Grows the capacity to at least `capacity` elements.
    ///
    /// # Errors
    /// As [`resize`](Self::resize).
    pub fn reserve(&mut self, capacity: usize, stream: CudaStreamView) -> Result<()> {
        self.buf.reserve(byte_size::<T>(capacity)?, stream)
    }

    /// Makes the capacity equal to the length.
    ///
    /// # Errors
    /// As [`DeviceBuffer::shrink_to_fit`].
    pub fn shrink_to_fit(&mut self, stream: CudaStreamView) -> Result<()> {
        self.buf.shrink_to_fit(stream)
    }

    fn check_index(&self, i: usize) -> Result<usize> {
        let len = self.len();
        if i >= len {
            return Err(Error::OutOfRange(format!(
                "index {i} of a device vector of {len} elements"
            )));
        }
        Ok(i * size_of::<T>())
    }

    /// Element `i`, copied to the host on `stream`; synchronises `stream`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when `i >= len()` (checked before any GPU work);
    /// the driver's copy or synchronisation error; [`Error::Logic`] for
    /// simulated memory.
    pub fn element(&self, i: usize, stream: CudaStreamView) -> Result<T> {
        let offset = self.check_index(i)?;
        let mut out = MaybeUninit::<T>::uninit();
        // SAFETY: `out` has room for one `T`; the copy completes (the stream
        // is synchronised) before `read_raw` returns.
        unsafe {
            self.buf
                .read_raw(offset, out.as_mut_ptr().cast(), size_of::<T>(), stream)?
        };
        // SAFETY: all `size_of::<T>()` bytes were written by the copy, and
        // every bit pattern is a valid `T` (`T: DevicePod`).
        Ok(unsafe { out.assume_init() })
    }

    /// The first element; see [`element`](Self::element).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the vector is empty; as [`element`](Self::element).
    pub fn front_element(&self, stream: CudaStreamView) -> Result<T> {
        self.element(0, stream)
    }

    /// The last element; see [`element`](Self::element).
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when the vector is empty; as [`element`](Self::element).
    pub fn back_element(&self, stream: CudaStreamView) -> Result<T> {
        match self.len() {
            0 => Err(Error::OutOfRange("back_element of an empty device vector".into())),
            n => self.element(n - 1, stream),
        }
    }

    /// Writes `value` to element `i` on `stream` and synchronises `stream`.
    ///
    /// # Errors
    /// As [`element`](Self::element).
    pub fn set_element(&mut self, i: usize, value: T, stream: CudaStreamView) -> Result<()> {
        let offset = self.check_index(i)?;
        // SAFETY: `value` is a live `T` of `size_of::<T>()` bytes; the stream is
        // synchronised before `write_raw` returns.
        unsafe {
            self.buf
                .write_raw(offset, (&value as *const T).cast(), size_of::<T>(), stream)
        }
    }

    /// Writes `value` to element `i` in `stream` order, without waiting.
    ///
    /// Unlike RMM, the host value need not outlive the call: values of up
    /// to 64 bytes travel as memset arguments (one `cuMemsetD32Async` per
    /// run of equal aligned words, `cuMemsetD8Async` for unaligned bytes), so
    /// no host memory is read after the call returns and no host function
    /// runs. Larger values are copied and `stream` is synchronised.
    ///
    /// # Errors
    /// As [`element`](Self::element).
    pub fn set_element_async(&mut self, i: usize, value: T, stream: CudaStreamView) -> Result<()> {
        let offset = self.check_index(i)?;
        self.buf.write_value_async(offset, value, stream)
    }

    /// Sets every byte of element `i` to zero in `stream` order (does not block).
    ///
    /// # Errors
    /// As [`element`](Self::element).
    pub fn set_element_to_zero_async(&mut self, i: usize, stream: CudaStreamView) -> Result<()> {
        let offset = self.check_index(i)?;
        let (width, count) = memset_plan(size_of::<T>(), self.data().offset(offset).addr());
        self.buf.memset(offset, 0, width, count, stream)
    }

    /// Copies the elements to a new host vector on `stream`; synchronises `stream`.
    ///
    /// # Errors
    /// The driver's copy or synchronisation error; [`Error::Logic`] for a
    /// non-empty simulated vector.
    pub fn copy_to_host(&self, stream: CudaStreamView) -> Result<Vec<T>> {
        let n = self.len();
        let mut out: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `out` has room for `n` elements = `size_bytes()` bytes; the
        // copy completes before `read_raw` returns.
        unsafe {
            self.buf
                .read_raw(0, out.as_mut_ptr().cast(), self.size_bytes(), stream)?
        };
        // SAFETY: the copy initialised all `n` elements' bytes, and every bit
        // pattern is a valid `T` (`T: DevicePod`).
        unsafe { out.set_len(n) };
        Ok(out)
    }

    /// Overwrites all elements with `values` (same length) on `stream`;
    /// synchronises `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch; as
    /// [`copy_to_host`](Self::copy_to_host).
    pub fn copy_from_host(&mut self, values: &[T], stream: CudaStreamView) -> Result<()> {
        if values.len() != self.len() {
            return Err(Error::InvalidArgument(format!(
                "copy_from_host: {} host elements into a device vector of {}",
                values.len(),
                self.len()
            )));
        }
        // SAFETY: `values` is `size_bytes()` readable bytes; the copy completes
        // before `write_raw` returns.
        unsafe {
            self.buf
                .write_raw(0, values.as_ptr().cast(), self.size_bytes(), stream)
        }
    }

    /// Adopts a cust buffer (`cust` feature). cust allocates with `cuMemAlloc` (and frees with
    /// `cuMemFree`), which is exactly what [`CudaMemoryResource`] does, so the
    /// vector takes the memory over without a copy and frees it through a
    /// `CudaMemoryResource`. The buffer must belong to the current device.
    ///
    /// Only buffers whose memory `cuMemFree` may release are accepted by cust
    /// itself (its `from_raw_parts` requires that), so this is safe.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero-sized `T`; the driver's error
    /// when no device is current. On error the cust buffer is dropped (freed).
    #[cfg(feature = "cust")]
    pub fn from_cust(buffer: cust::memory::DeviceBuffer<T>, stream: CudaStreamView) -> Result<Self>
    where
        T: DeviceCopy,
    {
        let len = buffer.len();
        byte_size::<T>(len)?;
        let device = current_device()?;
        let ptr = DevicePtr::new(buffer.as_device_ptr().as_raw());
        let bytes = len * size_of::<T>();
        // cust frees nothing for a null / empty buffer, and neither do we.
        std::mem::forget(buffer);
        let parts = RawBufferParts {
            ptr: if bytes == 0 { DevicePtr::NULL } else { ptr },
            size: bytes,
            capacity: if ptr.is_null() { 0 } else { bytes },
            alignment: CUDA_ALLOCATION_ALIGNMENT,
            stream: StreamRef::from(stream),
            resource: SharedResource::new(CudaMemoryResource::new()),
            device,
        };
        // SAFETY: the memory came from cuMemAlloc (cust's contract) with
        // `bytes` bytes, 256-byte aligned, on the current device; cust no
        // longer owns it (forgotten above). CudaMemoryResource frees with
        // cuMemFree and ignores size, alignment and stream.
        let buf = unsafe { DeviceBuffer::from_raw_parts(parts) };
        Ok(DeviceUvector {
            buf,
            _marker: std::marker::PhantomData,
        })
    }

    /// Hands the memory to a cust buffer (`cust` feature), which frees it
    /// with `cuMemFree` on drop. Only possible when the vector's resource is the
    /// [`CudaMemoryResource`] (any other resource must free its own memory)
    /// and its length equals its capacity (cust knows no capacity). The
    /// vector's stream is synchronised first, since cust's buffer is not
    /// stream ordered.
    ///
    /// # Errors
    /// [`IntoCustError`] with [`Error::Logic`] (or the synchronisation error)
    /// and the unchanged vector.
    #[cfg(feature = "cust")]
    pub fn into_cust(self) -> std::result::Result<cust::memory::DeviceBuffer<T>, IntoCustError<T>>
    where
        T: DeviceCopy,
    {
        let fail = |error: Error, v: Self| IntoCustError {
            error,
            uvector: Box::new(v),
        };
        if !crate::mr::per_device::is_initial_resource(self.resource()) {
            return Err(fail(
                Error::Logic(format!(
                    "into_cust: the memory belongs to {:?}; only CudaMemoryResource memory can be freed by cust",
                    self.resource()
                )),
                self,
            ));
        }
        if self.buf.size() != self.buf.capacity() {
            return Err(fail(
                Error::Logic("into_cust: call shrink_to_fit first (cust buffers have no capacity)".into()),
                self,
            ));
        }
        if !self.is_empty() {
            let synced = self.buf.guard().and_then(|_g| self.stream().synchronize());
            if let Err(e) = synced {
                return Err(fail(e, self));
            }
        }
        let len = self.len();
        let parts = self.buf.into_raw_parts();
        // SAFETY: the memory came from cuMemAlloc (CudaMemoryResource) with
        // exactly `len` elements; nobody else owns it any more and no work is
        // pending on it (stream synchronised). A null pointer with length 0
        // is what cust itself builds for empty buffers.
        Ok(unsafe { cust::memory::DeviceBuffer::from_raw_parts(parts.ptr.as_cust::<T>(), len) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::SimulatedMemoryResource;

    const S: CudaStreamView<'static> = CudaStreamView::DEFAULT;

    #[test]
    fn memset_plans() {
        assert_eq!(memset_plan(1, 0x100), (1, 1));
        assert_eq!(memset_plan(2, 0x100), (2, 1));
        assert_eq!(memset_plan(3, 0x100), (1, 3));
        assert_eq!(memset_plan(8, 0x100), (4, 2));
        assert_eq!(memset_plan(12, 0x10c), (4, 3));
        assert_eq!(memset_plan(6, 0x106), (2, 3));
        assert_eq!(memset_plan(16, 0x100), (4, 4));
        assert_eq!(memset_plan(5, 0x100), (1, 5));
        // A misaligned address narrows the width.
        assert_eq!(memset_plan(8, 0x102), (2, 4));
        assert_eq!(memset_plan(8, 0x101), (1, 8));
    }

    #[test]
    fn byte_size_checks() {
        assert_eq!(byte_size::<u8>(usize::MAX).unwrap(), usize::MAX);
        assert!(matches!(
            byte_size::<u16>(usize::MAX / 2 + 1),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(byte_size::<()>(1), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn zero_sized_rejected() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        #[derive(Clone, Copy, Debug)]
        struct Zst;
        // SAFETY: a zero-sized type has one (empty) bit pattern.
        unsafe impl DevicePod for Zst {}
        let r = DeviceUvector::<Zst>::with_resource(3, S, sim);
        assert!(matches!(r, Err(Error::InvalidArgument(_))));
    }
}
