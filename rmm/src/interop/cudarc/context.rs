//! The one context rule of the interop: cudarc's side must be the primary
//! context of its device, the context rmm allocates, frees and records
//! events in.
#![forbid(unsafe_code)]

use cudarc::driver::CudaContext;

use crate::device::DeviceId;
use crate::driver;
use crate::error::{Error, Result};

/// The device of `ctx` when `ctx` is that device's primary context.
///
/// # Errors
/// [`Error::Logic`] naming `what` when `ctx` is another context (one made
/// by `CudaContext::new_non_primary`, a CiG or a foreign context); the
/// driver's error when the device has no usable primary context.
pub(crate) fn primary_device(ctx: &CudaContext, what: &str) -> Result<DeviceId> {
    let ordinal = i32::try_from(ctx.ordinal()).map_err(|_| {
        Error::InvalidArgument(format!("{what}: device ordinal {} out of range", ctx.ordinal()))
    })?;
    let primary = driver::primary_context_address(ordinal)?;
    let theirs = ctx.cu_ctx() as usize;
    if theirs != primary {
        return Err(Error::Logic(format!(
            "{what}: cudarc's context {theirs:#x} is not device {ordinal}'s primary context \
             {primary:#x}; rmm works in primary contexts (make cudarc's with CudaContext::new)"
        )));
    }
    Ok(DeviceId(ordinal))
}

/// Checks that memory of `memory`'s device is used on a stream of `stream`'s.
///
/// # Errors
/// [`Error::Logic`] naming `what` and both devices when they differ.
pub(crate) fn same_device(memory: DeviceId, stream: DeviceId, what: &str) -> Result<()> {
    if memory == stream {
        Ok(())
    } else {
        Err(Error::Logic(format!(
            "{what}: the memory lives on {memory} and cudarc's stream on {stream}; \
             copy across devices with rmm::peer or DeviceBuffer::try_clone_on"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_must_match() {
        same_device(DeviceId(0), DeviceId(0), "t").unwrap();
        let e = same_device(DeviceId(1), DeviceId(0), "view").unwrap_err();
        assert!(
            matches!(&e, Error::Logic(m) if m.contains("device 1") && m.contains("device 0")),
            "{e}"
        );
    }
}
