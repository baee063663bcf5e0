//! One stream per device that rmm owns and never captures.
#![forbid(unsafe_code)]

use std::sync::OnceLock;

use crate::device::{self, DeviceGuard, DeviceId};
use crate::error::{Error, Result};
use crate::stream::{CudaStream, CudaStreamView};

/// Side streams by device ordinal, made at first use, kept for the process.
static SIDE_STREAMS: OnceLock<Vec<OnceLock<CudaStream>>> = OnceLock::new();

/// A non-blocking stream of `device` (the current device for `None`) that
/// rmm owns and never captures: resources move chunk traffic onto it while
/// a stream of theirs captures (under
/// [`RelaxedCaptureMode`](super::RelaxedCaptureMode)). Made at its first
/// use with its device current, then kept for the life of the process
/// (while a capture runs, call it inside a `RelaxedCaptureMode`: its first
/// call per device creates a stream and sets the current device).
///
/// # Errors
/// [`Error::InvalidArgument`] for a device that does not exist; the
/// driver's error from making the stream.
pub(crate) fn side_stream(device: Option<DeviceId>) -> Result<CudaStreamView<'static>> {
    let device = match device {
        Some(d) => d,
        None => device::current_device()?,
    };
    let count = device::device_count();
    let table = SIDE_STREAMS.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
    let slot = usize::try_from(device.value())
        .ok()
        .and_then(|d| table.get(d))
        .ok_or_else(|| Error::InvalidArgument(format!("{device} does not exist (device count {count})")))?;
    if let Some(s) = slot.get() {
        return Ok(s.view());
    }
    let made = {
        let _current = DeviceGuard::new(device)?;
        CudaStream::non_blocking()?
    };
    // A racing thread may have set it first: its stream is kept, ours drops.
    Ok(slot.get_or_init(|| made).view())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::CaptureStatus;

    #[test]
    fn each_device_has_one_side_stream_that_is_not_capturing() {
        crate::require_gpu!();
        let a = side_stream(None).unwrap();
        let b = side_stream(Some(device::current_device().unwrap())).unwrap();
        assert_eq!(a, b);
        assert!(!a.is_default() && !a.is_per_thread_default());
        assert_eq!(a.capture_status().unwrap(), CaptureStatus::None);
        let count = device::device_count() as i32;
        assert!(matches!(
            side_stream(Some(DeviceId(count))),
            Err(Error::InvalidArgument(_))
        ));
    }
}
