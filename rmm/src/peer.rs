//! Peer access and copies between devices.

use crate::device::DeviceId;
use crate::driver;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// True when `device` can read and write `peer`'s memory directly.
///
/// # Errors
/// The driver's error for a bad ordinal.
pub fn can_access_peer(device: DeviceId, peer: DeviceId) -> Result<bool> {
    driver::can_access_peer(device.value(), peer.value())
}

/// Lets kernels and copies on `device` access `peer`'s memory (idempotent).
/// The current device is restored afterwards.
///
/// # Errors
/// [`Error::Logic`] when the hardware has no peer path between the two, or
/// `device == peer`; the driver's error otherwise.
pub fn enable_peer_access(device: DeviceId, peer: DeviceId) -> Result<()> {
    if device == peer {
        return Err(Error::Logic(format!("{device} cannot be its own peer")));
    }
    if !can_access_peer(device, peer)? {
        return Err(Error::Logic(format!("{device} has no peer access to {peer}")));
    }
    let _guard = crate::device::DeviceGuard::new(device)?;
    driver::enable_peer_access(peer.value())
}

/// Copies `bytes` from `src` on `src_device` to `dst` on `dst_device` in
/// `stream` order (`cuMemcpyPeerAsync`; works with or without peer access,
/// staging through the host when there is none).
///
/// # Safety
/// Both ranges are valid device memory of their devices until the copy has
/// run in `stream` order.
///
/// # Errors
/// [`Error::InvalidArgument`] when a pointer is not device memory of the
/// named device (checked with the driver's pointer attributes); driver errors.
pub unsafe fn copy_peer_async(
    dst: DevicePtr,
    dst_device: DeviceId,
    src: DevicePtr,
    src_device: DeviceId,
    bytes: usize,
    stream: CudaStreamView,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    for (p, d, what) in [(dst, dst_device, "destination"), (src, src_device, "source")] {
        match driver::pointer_kind(p.addr())? {
            driver::PointerKind::Device(ordinal) if ordinal == d.value() => {}
            other => {
                return Err(Error::InvalidArgument(format!(
                    "peer copy {what} {p} is not memory of {d} (driver says {other:?})"
                )))
            }
        }
    }
    // SAFETY: forwarded contract; both pointers were checked above, and the
    // stream is live for the borrow.
    unsafe {
        driver::memcpy_peer_async(
            dst.addr(),
            dst_device.value(),
            src.addr(),
            src_device.value(),
            bytes,
            stream.handle(),
        )
    }
}
