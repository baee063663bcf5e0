//! Device-to-device copies: through the driver's copy ([`copy_bytes`],
//! the default) or through the Rust copy kernel ([`copy_bytes_kernel`]).
//!
//! On an H200 the driver's device-to-device copy moves 2^28 `u32` at 4.23
//! TB/s, as fast as PyTorch's `copy_` and CuPy's `copyto` (the same call),
//! and 8% above our kernel's 3.91 TB/s in the same run (2026-12-01,
//! docs/performance.md#kernels-against-cupy-and-pytorch), so the default is
//! the driver's.

use kernel_abi::BLOCK;
use rmm::{CudaStreamView, DevicePtr, Error, Result};

use crate::kernels::Kernels;

/// Refuses overlapping ranges (neither copy handles them).
fn check_disjoint(dst: DevicePtr, src: DevicePtr, bytes: usize) -> Result<()> {
    let (d, s, n) = (dst.addr(), src.addr(), bytes as u64);
    if d < s.saturating_add(n) && s < d.saturating_add(n) {
        return Err(Error::InvalidArgument(format!(
            "copy: ranges {dst}+{bytes} and {src}+{bytes} overlap"
        )));
    }
    Ok(())
}

/// Copies `bytes` bytes from `src` to `dst` in `stream` order with the
/// driver's copy (`cuMemcpyAsync`).
///
/// # Safety
/// Both ranges are device-accessible memory valid until the copy has run in
/// `stream` order.
///
/// # Errors
/// [`Error::InvalidArgument`] for overlapping ranges; driver errors.
pub unsafe fn copy_bytes(dst: DevicePtr, src: DevicePtr, bytes: usize, stream: CudaStreamView) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    check_disjoint(dst, src, bytes)?;
    // SAFETY: the caller guarantees both ranges until the copy has run.
    unsafe { rmm::launch::memcpy_async(dst, src, bytes, stream) }
}

/// Copies `bytes` bytes from `src` to `dst` in `stream` order with the
/// `rmm_copy_bytes` kernel (16-byte vector moves where alignment allows).
///
/// # Safety
/// As [`copy_bytes`].
///
/// # Errors
/// As [`copy_bytes`].
pub unsafe fn copy_bytes_kernel(
    dst: DevicePtr,
    src: DevicePtr,
    bytes: usize,
    stream: CudaStreamView,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    check_disjoint(dst, src, bytes)?;
    let (d, s, n) = (dst.addr(), src.addr(), bytes as u64);
    let k = Kernels::current()?;
    let grid = k.grid_for(bytes.div_ceil(16), BLOCK);
    let (mut dp, mut sp, mut np) = (d, s, n);
    let mut params = crate::kernel_params!(dp, sp, np);
    // SAFETY: parameters match `(dst: *mut u8, src: *const u8, n: usize)`;
    // the caller guarantees the memory.
    unsafe {
        k.launch(
            kernel_abi::elementwise::COPY_BYTES,
            grid,
            BLOCK,
            0,
            stream,
            &mut params,
        )
    }
}

/// Copies `n` elements of `T` from `src` to `dst`; see [`copy_bytes`].
///
/// # Safety
/// As [`copy_bytes`] for `n * size_of::<T>()` bytes.
///
/// # Errors
/// As [`copy_bytes`]; [`Error::InvalidArgument`] when the byte count overflows.
pub unsafe fn copy_raw<T: Copy>(
    dst: DevicePtr,
    src: DevicePtr,
    n: usize,
    stream: CudaStreamView,
) -> Result<()> {
    let bytes = n
        .checked_mul(std::mem::size_of::<T>())
        .ok_or_else(|| Error::InvalidArgument(format!("copy: {n} elements overflow")))?;
    // SAFETY: forwarded contract.
    unsafe { copy_bytes(dst, src, bytes, stream) }
}
