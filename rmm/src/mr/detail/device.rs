//! Device binding of the sub-allocators: which device one serves, and how
//! to wait for its memory before handing it back.
#![forbid(unsafe_code)]

use super::super::MemoryResource;
use crate::device::DeviceId;
use crate::error::Result;

/// The device a sub-allocator over `upstream` serves: the upstream's own
/// ([`MemoryResource::device`]) or, for a stateless upstream of device
/// memory such as [`CudaMemoryResource`](crate::mr::CudaMemoryResource), the device current at the call
/// (sub-allocators call it at construction). `None` over simulated, pinned
/// host and managed memory, which no single device owns.
///
/// # Errors
/// The driver's error when the current device cannot be read.
pub(crate) fn bound_device<U: MemoryResource + ?Sized>(upstream: &U) -> Result<Option<DeviceId>> {
    if let Some(d) = upstream.device() {
        return Ok(Some(d));
    }
    if upstream.is_simulated() || !upstream.is_device_accessible() || upstream.is_host_accessible() {
        return Ok(None);
    }
    crate::device::current_device().map(Some)
}

/// Waits for every use of a sub-allocator's memory before it is handed
/// back or reorganised: makes `device` (when there is one) current, then
/// synchronises it (not when `simulated`). Keep the returned guard while
/// returning memory; it restores the previous device. Runs from places that
/// cannot fail, such as `Drop`, so failures are logged as
/// "`what`: ... `why`", never raised.
pub(crate) fn quiesce_device(
    what: &str,
    why: &str,
    device: Option<DeviceId>,
    simulated: bool,
) -> Option<crate::device::DeviceGuard> {
    let guard = device.and_then(|device| match crate::device::DeviceGuard::new(device) {
        Ok(g) => Some(g),
        Err(e) => {
            log::error!("{what}: could not make {device} current {why}: {e}");
            None
        }
    });
    if !simulated {
        crate::graph::wait_for_other_captures();
        if let Err(e) = crate::driver::device_synchronize() {
            log::error!("{what}: device synchronize {why} failed: {e}");
        }
    }
    guard
}
