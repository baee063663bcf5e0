//! Fill and copy over `rmm`'s containers ([`DeviceUvector`], [`DeviceBuffer`],
//! [`DeviceScalar`](rmm::DeviceScalar) through its vector view).
//!
//! Every function checks its arguments before it touches the GPU, then
//! enqueues its work through [`DeviceBuffer::access`] /
//! [`DeviceBuffer::access_all`], which make the container's device current
//! and order the work on `stream` after the containers' own streams (and
//! their streams after the work, so that a later free cannot overtake it),
//! with events, when the streams differ. Zero elements never call the
//! driver. Containers over a simulated resource have no contents: a
//! non-empty fill or copy of one is an [`Error::Logic`].
//!
//! Thread safety: the functions are thread safe; the containers are borrowed
//! mutably where they are written.
//!
//! ```no_run
//! use rmm::{CudaStream, DeviceUvector};
//! use rmm_suite::containers::{copy, fill};
//! let s = CudaStream::new()?;
//! let mut a = DeviceUvector::<f32>::new(1000, s.view())?;
//! fill(&mut a, 1.5, s.view())?;
//! let mut b = DeviceUvector::<f32>::new(1000, s.view())?;
//! copy(&mut b, &a, s.view())?;
//! assert!(b.copy_to_host(s.view())?.iter().all(|&x| x == 1.5));
//! # Ok::<(), rmm::Error>(())
//! ```

use rmm::launch::memset_async;
use rmm::{CudaStreamView, DeviceBuffer, DevicePod, DevicePtr, DeviceUvector, Error, Result};

use crate::copy::copy_bytes;
use crate::fill::{fill_raw, FillValue};

/// Zero-fills `bytes` bytes at `ptr` with 4-byte memsets where size and
/// address allow, else byte memsets.
///
/// # Safety
/// The range is live device memory until the memset runs in `stream` order.
unsafe fn memset_zero(ptr: DevicePtr, bytes: usize, stream: CudaStreamView) -> Result<()> {
    let (width, count) = if bytes.is_multiple_of(4) && ptr.is_aligned(4) {
        (4, bytes / 4)
    } else {
        (1, bytes)
    };
    // SAFETY: forwarded contract.
    unsafe { memset_async(ptr, 0, width, count, stream) }
}

/// Sets every element of `v` to `value` in `stream` order (does not block).
///
/// An all-zero bit pattern uses `cuMemsetD32Async`/`cuMemsetD8Async`; any
/// other value launches the fill kernel ([`fill_raw`]).
///
/// # Errors
/// [`Error::Logic`] for a non-empty vector over a simulated resource; the
/// driver's error (no device, launch failure).
pub fn fill<T: FillValue + DevicePod>(
    v: &mut DeviceUvector<T>,
    value: T,
    stream: CudaStreamView,
) -> Result<()> {
    let n = v.len();
    if n == 0 {
        return Ok(());
    }
    let (ptr, bytes) = (v.data(), v.size_bytes());
    v.as_buffer().access("fill", stream, |s| {
        if value.bits() == 0 {
            // SAFETY: the vector's `size_bytes()` bytes are live, borrowed
            // mutably, and kept allocated by `access` until the memset has run.
            unsafe { memset_zero(ptr, bytes, s) }
        } else {
            // SAFETY: as above; `n` elements of `T`, aligned for `T`.
            unsafe { fill_raw(ptr, n, value, s) }
        }
    })
}

/// Sets every byte of `buf` to `value` in `stream` order (`cuMemsetD8Async`).
///
/// # Errors
/// As [`fill`].
pub fn fill_bytes(buf: &mut DeviceBuffer, value: u8, stream: CudaStreamView) -> Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    buf.access("fill_bytes", stream, |s| {
        // SAFETY: the buffer's `size()` bytes are live, borrowed mutably, and
        // kept allocated by `access` until the memset has run.
        unsafe { memset_async(buf.data(), value as u32, 1, buf.size(), s) }
    })
}

/// Copies `src` into `dst` (both of `dst_len == src_len` elements of
/// `dst.size() / dst_len` bytes) with the driver's copy (`cuMemcpyAsync`,
/// [`copy_bytes`]); nothing for zero
/// elements. Simulated memory and buffers of two devices are refused by
/// [`DeviceBuffer::access_all`] before any driver call.
fn copy_checked(
    dst: &DeviceBuffer,
    src: &DeviceBuffer,
    (dst_len, src_len): (usize, usize),
    stream: CudaStreamView,
) -> Result<()> {
    if dst_len != src_len {
        return Err(Error::InvalidArgument(format!(
            "copy: destination has {dst_len} elements, source {src_len}"
        )));
    }
    if dst_len == 0 {
        return Ok(());
    }
    DeviceBuffer::access_all("copy", &[dst, src], stream, |s| {
        // SAFETY: both containers are live with `dst.size()` bytes (equal
        // lengths of one element type checked), distinct (one is borrowed
        // mutably by the caller), and kept allocated by `access_all` until
        // the copy has run.
        unsafe { copy_bytes(dst.data(), src.data(), dst.size(), s) }
    })
}

/// Copies all elements of `src` into `dst` (same length) in `stream` order
/// with the driver's copy, `cuMemcpyAsync` (does not block).
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ; [`Error::Logic`] when
/// either side is simulated (and non-empty) or the two live on different
/// devices; the driver's error.
pub fn copy<T: DevicePod>(
    dst: &mut DeviceUvector<T>,
    src: &DeviceUvector<T>,
    stream: CudaStreamView,
) -> Result<()> {
    copy_checked(dst.as_buffer(), src.as_buffer(), (dst.len(), src.len()), stream)
}

/// Copies all bytes of `src` into `dst` (same size) in `stream` order with
/// the driver's copy, `cuMemcpyAsync` (does not block).
///
/// # Errors
/// As [`copy`].
pub fn copy_buffer(dst: &mut DeviceBuffer, src: &DeviceBuffer, stream: CudaStreamView) -> Result<()> {
    copy_checked(dst, src, (dst.size(), src.size()), stream)
}
