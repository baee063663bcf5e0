//! Fill and copy over `rmm`'s containers ([`DeviceUvector`], [`DeviceBuffer`],
//! [`DeviceScalar`](rmm::DeviceScalar) through its vector view).
//!
//! Every function checks its arguments before it touches the GPU, makes the
//! container's device current for the launch, and orders the work on
//! `stream` after the containers' own streams (and their streams after the
//! work, so that a later free cannot overtake it), with events, when the
//! streams differ. Zero elements never call the driver. Containers over a
//! simulated resource have no contents: a non-empty fill or copy of one is
//! an [`Error::Logic`].
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

use rmm::buffer::stream_wait;
use rmm::device::DeviceGuard;
use rmm::launch::memset_async;
use rmm::mr::MemoryResource;
use rmm::{CudaStreamView, DeviceBuffer, DevicePod, DevicePtr, DeviceUvector, Error, Result};

use crate::copy::copy_bytes;
use crate::fill::{fill_raw, FillValue};

fn check_real(buf: &DeviceBuffer, what: &str) -> Result<()> {
    if buf.resource().is_simulated() {
        return Err(Error::Logic(format!(
            "{what}: a container over a simulated resource has no memory to write"
        )));
    }
    Ok(())
}

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
    check_real(v.as_buffer(), "fill")?;
    let _g = DeviceGuard::new(v.device())?;
    stream_wait(stream, v.stream())?;
    if value.bits() == 0 {
        // SAFETY: the vector's `size_bytes()` bytes are live; its stream
        // waits for `stream` below before any free.
        unsafe { memset_zero(v.data(), v.size_bytes(), stream)? };
    } else {
        // SAFETY: as above; `n` elements of `T`, aligned for `T`.
        unsafe { fill_raw(v.data(), n, value, stream)? };
    }
    stream_wait(v.stream(), stream)
}

/// Sets every byte of `buf` to `value` in `stream` order (`cuMemsetD8Async`).
///
/// # Errors
/// As [`fill`].
pub fn fill_bytes(buf: &mut DeviceBuffer, value: u8, stream: CudaStreamView) -> Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    check_real(buf, "fill_bytes")?;
    let _g = DeviceGuard::new(buf.device())?;
    stream_wait(stream, buf.stream())?;
    // SAFETY: the buffer's `size()` bytes are live; its stream waits for
    // `stream` below before any free.
    unsafe { memset_async(buf.data(), value as u32, 1, buf.size(), stream)? };
    stream_wait(buf.stream(), stream)
}

fn check_copy(dst: &DeviceBuffer, src: &DeviceBuffer, dst_len: usize, src_len: usize) -> Result<bool> {
    if dst_len != src_len {
        return Err(Error::InvalidArgument(format!(
            "copy: destination has {dst_len} elements, source {src_len}"
        )));
    }
    if dst_len == 0 {
        return Ok(false);
    }
    check_real(dst, "copy")?;
    check_real(src, "copy")?;
    if dst.device() != src.device() {
        return Err(Error::Logic(format!(
            "copy: the kernel cannot copy from {} to {}; use try_clone_on (cuMemcpy) across devices",
            src.device(),
            dst.device()
        )));
    }
    Ok(true)
}

fn copy_impl(dst: &DeviceBuffer, src: &DeviceBuffer, stream: CudaStreamView) -> Result<()> {
    let _g = DeviceGuard::new(dst.device())?;
    stream_wait(stream, dst.stream())?;
    stream_wait(stream, src.stream())?;
    // SAFETY: both containers are live with `dst.size()` bytes (equal sizes
    // checked), distinct (one is borrowed mutably), and both of their streams
    // wait for `stream` below before any free.
    unsafe { copy_bytes(dst.data(), src.data(), dst.size(), stream)? };
    stream_wait(dst.stream(), stream)?;
    stream_wait(src.stream(), stream)
}

/// Copies all elements of `src` into `dst` (same length) in `stream` order
/// with the copy kernel (does not block).
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
    if check_copy(dst.as_buffer(), src.as_buffer(), dst.len(), src.len())? {
        copy_impl(dst.as_buffer(), src.as_buffer(), stream)?;
    }
    Ok(())
}

/// Copies all bytes of `src` into `dst` (same size) in `stream` order with
/// the copy kernel (does not block).
///
/// # Errors
/// As [`copy`].
pub fn copy_buffer(dst: &mut DeviceBuffer, src: &DeviceBuffer, stream: CudaStreamView) -> Result<()> {
    if check_copy(dst, src, dst.size(), src.size())? {
        copy_impl(dst, src, stream)?;
    }
    Ok(())
}
