//! [`DevicePod`]: the element types of the typed containers.
//!
//! A typed container ([`DeviceUvector`](crate::DeviceUvector),
//! [`DeviceScalar`](crate::DeviceScalar)) hands device bytes back to the host
//! as values of its element type: [`element`](crate::DeviceUvector::element),
//! [`copy_to_host`](crate::DeviceUvector::copy_to_host), a zeroed element,
//! uninitialised memory, a reinterpreted [`DeviceBuffer`](crate::DeviceBuffer)
//! ([`from_buffer`](crate::DeviceUvector::from_buffer)). That is only sound
//! for types where every bit pattern is a valid value, which is what this
//! trait promises. It is implemented for the integer and floating-point
//! primitives and for arrays of `DevicePod` types.
//!
//! `bool`, `char`, references, `NonZero*` and enums are not `DevicePod`:
//!
//! ```compile_fail
//! # use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceUvector};
//! let v = DeviceUvector::<bool>::with_resource(1, CudaStreamView::DEFAULT, SimulatedMemoryResource::new(1 << 20));
//! ```
//!
//! ```compile_fail
//! # use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceUvector};
//! let v = DeviceUvector::<char>::with_resource(1, CudaStreamView::DEFAULT, SimulatedMemoryResource::new(1 << 20));
//! ```
//!
//! ```compile_fail
//! # use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceUvector};
//! use std::num::NonZeroU32;
//! let v = DeviceUvector::<NonZeroU32>::with_resource(1, CudaStreamView::DEFAULT, SimulatedMemoryResource::new(1 << 20));
//! ```
//!
//! ```compile_fail
//! # use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceScalar};
//! let x = DeviceScalar::<bool>::with_resource(CudaStreamView::DEFAULT, SimulatedMemoryResource::new(1 << 20));
//! ```
//!
//! The same calls with `u8`, `u32` or `[f32; 4]` compile:
//!
//! ```
//! # use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceUvector};
//! let sim = SimulatedMemoryResource::new(1 << 20);
//! let v = DeviceUvector::<[f32; 4]>::with_resource(2, CudaStreamView::DEFAULT, sim)?;
//! assert_eq!(v.size_bytes(), 32);
//! # Ok::<(), rmm::Error>(())
//! ```

/// Plain data that may live in device memory and come back to the host as
/// any bit pattern.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes (including all zeros and
/// bytes never written) is a valid value of `Self`: no padding, no
/// references or pointers the host would follow, no niches (`bool`, `char`,
/// `NonZero*`, enums). (Zero-sized types are refused at run time by the
/// containers.)
pub unsafe trait DevicePod: Copy + Send + Sync + 'static {}

macro_rules! device_pod {
    ($($t:ty),*) => {$(
        // SAFETY: every bit pattern of a primitive integer or float is a
        // valid value; none holds a pointer.
        unsafe impl DevicePod for $t {}
    )*};
}
device_pod!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array has no padding between elements and its bit patterns are
// those of its elements, each of which is valid for any bits.
unsafe impl<T: DevicePod, const N: usize> DevicePod for [T; N] {}

#[cfg(test)]
mod tests {
    use super::DevicePod;

    fn is_pod<T: DevicePod>() -> usize {
        std::mem::size_of::<T>()
    }

    #[test]
    fn primitives_and_arrays_are_pod() {
        assert_eq!(is_pod::<u8>() + is_pod::<f64>() + is_pod::<[i16; 3]>(), 15);
        assert_eq!(is_pod::<[[u32; 2]; 2]>(), 16);
    }
}
