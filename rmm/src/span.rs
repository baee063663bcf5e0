//! Typed, borrowed views of device memory: [`DeviceSpan`] and
//! [`DeviceSpanMut`] (RMM's `cuda::std::span` conversions).
//!
//! Containers hand them out; device algorithms take them. A span is a
//! pointer and a length; it does not own memory and it borrows the container
//! it came from, so the memory outlives the span on the host side.
//!
//! # Stream order and simulated memory
//! A span of a container also records the container's stream (where its
//! memory is written, and where it will be freed) and whether the memory is
//! simulated ([`SpanInfo`]). Device algorithms run their kernels through
//! [`ExecPolicy::launch_ordered`](crate::exec_policy::ExecPolicy::launch_ordered),
//! which orders the kernels after the work already queued on each span's
//! stream, orders each span's stream after the kernels (so a later free
//! cannot overtake them), and refuses spans of simulated memory (there is
//! nothing behind their addresses). A span made by
//! [`from_raw_parts`](DeviceSpan::from_raw_parts) records no stream: its
//! ordering is its maker's promise.

use std::marker::PhantomData;
use std::ops::Range;

use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// What a device algorithm must know about a span besides its address: the
/// stream of the memory's owner (if any) and whether the memory is
/// simulated. See the [module docs](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanInfo<'a> {
    /// The owner's stream: kernels on the span must be ordered after its
    /// work, and it after theirs. `None` when the span's maker orders it.
    pub stream: Option<CudaStreamView<'a>>,
    /// True when the memory comes from a simulated resource (no GPU memory).
    pub simulated: bool,
}

/// A read-only view of `len` elements of `T` in device memory.
#[derive(Debug)]
pub struct DeviceSpan<'a, T> {
    ptr: DevicePtr,
    len: usize,
    info: SpanInfo<'a>,
    _borrow: PhantomData<&'a [T]>,
}

impl<T> Clone for DeviceSpan<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DeviceSpan<'_, T> {}

/// A writable view of `len` elements of `T` in device memory.
#[derive(Debug)]
pub struct DeviceSpanMut<'a, T> {
    ptr: DevicePtr,
    len: usize,
    info: SpanInfo<'a>,
    _borrow: PhantomData<&'a mut [T]>,
}

/// The address and length of the elements in `range` of a span of `len`
/// `T`s at `ptr`.
fn sub_range<T>(ptr: DevicePtr, len: usize, range: &Range<usize>) -> Result<(DevicePtr, usize)> {
    if range.start > range.end || range.end > len {
        return Err(Error::OutOfRange(format!(
            "range {range:?} of a span of {len} elements"
        )));
    }
    Ok((
        ptr.offset(range.start * std::mem::size_of::<T>()),
        range.end - range.start,
    ))
}

/// The accessors both span types share (`info`, `ptr`, `len`, `is_empty`,
/// `size_bytes`), written once; used inside `impl<'a, T>` blocks of a
/// struct with fields `ptr`, `len` and `info`.
macro_rules! span_accessors {
    () => {
        /// The owner's stream and whether the memory is simulated.
        pub fn info(&self) -> SpanInfo<'a> {
            self.info
        }
        /// Address of the first element.
        pub fn ptr(&self) -> DevicePtr {
            self.ptr
        }
        /// Number of elements.
        pub fn len(&self) -> usize {
            self.len
        }
        /// True when there are no elements.
        pub fn is_empty(&self) -> bool {
            self.len == 0
        }
        /// Size in bytes.
        pub fn size_bytes(&self) -> usize {
            self.len * std::mem::size_of::<T>()
        }
    };
}

impl<'a, T> DeviceSpan<'a, T> {
    /// A span over raw memory.
    ///
    /// # Safety
    /// `[ptr, ptr + len * size_of::<T>())` is device-accessible memory holding
    /// `T`s, aligned for `T`, valid and not written through another path for
    /// `'a`, and any work that writes it is complete or ordered before
    /// whatever stream the span is used on (the span records no stream).
    pub unsafe fn from_raw_parts(ptr: DevicePtr, len: usize) -> Self {
        // SAFETY: forwarded contract; no stream, not simulated.
        unsafe { Self::from_raw_parts_with(ptr, len, SpanInfo::default()) }
    }

    /// A span over raw memory owned by something ordered on `info.stream`.
    ///
    /// # Safety
    /// As [`from_raw_parts`](Self::from_raw_parts), except that work on the
    /// memory may be pending on `info.stream` (device algorithms order
    /// themselves after it), and the memory stays allocated until work
    /// queued on `info.stream` after the span's use has run; `info.simulated`
    /// is true when the memory is simulated.
    pub unsafe fn from_raw_parts_with(ptr: DevicePtr, len: usize, info: SpanInfo<'a>) -> Self {
        DeviceSpan {
            ptr,
            len,
            info,
            _borrow: PhantomData,
        }
    }

    span_accessors!();
    /// The elements in `range`.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when `range` does not lie inside the span.
    pub fn subspan(&self, range: Range<usize>) -> Result<DeviceSpan<'a, T>> {
        let (ptr, len) = sub_range::<T>(self.ptr, self.len, &range)?;
        Ok(DeviceSpan {
            ptr,
            len,
            info: self.info,
            _borrow: PhantomData,
        })
    }
}

impl<'a, T> DeviceSpanMut<'a, T> {
    /// A writable span over raw memory.
    ///
    /// # Safety
    /// As [`DeviceSpan::from_raw_parts`], and nothing else reads or writes the
    /// memory for `'a`.
    pub unsafe fn from_raw_parts(ptr: DevicePtr, len: usize) -> Self {
        // SAFETY: forwarded contract; no stream, not simulated.
        unsafe { Self::from_raw_parts_with(ptr, len, SpanInfo::default()) }
    }

    /// A writable span over raw memory owned by something ordered on
    /// `info.stream`.
    ///
    /// # Safety
    /// As [`DeviceSpan::from_raw_parts_with`], and nothing else reads or
    /// writes the memory for `'a`.
    pub unsafe fn from_raw_parts_with(ptr: DevicePtr, len: usize, info: SpanInfo<'a>) -> Self {
        DeviceSpanMut {
            ptr,
            len,
            info,
            _borrow: PhantomData,
        }
    }

    span_accessors!();
    /// A read-only view of the same elements.
    pub fn as_span(&self) -> DeviceSpan<'_, T> {
        DeviceSpan {
            ptr: self.ptr,
            len: self.len,
            info: self.info,
            _borrow: PhantomData,
        }
    }
    /// Reborrows for a shorter lifetime.
    pub fn reborrow(&mut self) -> DeviceSpanMut<'_, T> {
        DeviceSpanMut {
            ptr: self.ptr,
            len: self.len,
            info: self.info,
            _borrow: PhantomData,
        }
    }
    /// The elements in `range`, writable.
    ///
    /// # Errors
    /// [`Error::OutOfRange`] when `range` does not lie inside the span.
    pub fn subspan_mut(&mut self, range: Range<usize>) -> Result<DeviceSpanMut<'_, T>> {
        let (ptr, len) = sub_range::<T>(self.ptr, self.len, &range)?;
        Ok(DeviceSpanMut {
            ptr,
            len,
            info: self.info,
            _borrow: PhantomData,
        })
    }
}

impl<'a, T> From<DeviceSpanMut<'a, T>> for DeviceSpan<'a, T> {
    fn from(s: DeviceSpanMut<'a, T>) -> Self {
        DeviceSpan {
            ptr: s.ptr,
            len: s.len,
            info: s.info,
            _borrow: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subspans_check_bounds() {
        // SAFETY: the span is never dereferenced.
        let s = unsafe { DeviceSpan::<u32>::from_raw_parts(DevicePtr::new(0x1000), 10) };
        let sub = s.subspan(2..5).unwrap();
        assert_eq!((sub.ptr().addr(), sub.len(), sub.size_bytes()), (0x1008, 3, 12));
        assert!(matches!(s.subspan(5..11), Err(Error::OutOfRange(_))));
        #[allow(clippy::reversed_empty_ranges)]
        let bad = s.subspan(6..5);
        assert!(bad.is_err());
        // SAFETY: the span is never dereferenced.
        let mut m = unsafe { DeviceSpanMut::<u64>::from_raw_parts(DevicePtr::new(0x2000), 4) };
        assert_eq!(m.subspan_mut(1..4).unwrap().ptr().addr(), 0x2008);
        assert!(m.subspan_mut(0..5).is_err());
        assert_eq!(DeviceSpan::from(m).len(), 4);
    }
}
