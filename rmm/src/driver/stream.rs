//! Streams and events.

use cudarc::driver::sys as cu;

use super::check;
use super::device::ensure_context;
use crate::error::Result;

/// Creates a stream (`cuStreamCreate`); `non_blocking` sets
/// `CU_STREAM_NON_BLOCKING` (no implicit synchronisation with the legacy
/// default stream). (With the `cust` feature, cust makes the streams.)
#[cfg(not(feature = "cust"))]
pub fn stream_create(non_blocking: bool) -> Result<usize> {
    ensure_context()?;
    let mut s: cu::CUstream = std::ptr::null_mut();
    let flags = if non_blocking {
        cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32
    } else {
        cu::CUstream_flags::CU_STREAM_DEFAULT as u32
    };
    call!(cuStreamCreate(&mut s, flags))?;
    Ok(s as usize)
}

/// Destroys a stream (`cuStreamDestroy`); work already queued on it still
/// completes.
///
/// # Safety
/// `stream` came from [`stream_create`] and is not used after.
#[cfg(not(feature = "cust"))]
pub unsafe fn stream_destroy(stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuStreamDestroy_v2(stream as cu::CUstream))
}

/// Blocks until all work on `stream` has finished.
pub fn stream_synchronize(stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuStreamSynchronize(stream as cu::CUstream))
}

/// True when all work on `stream` has finished.
pub fn stream_query(stream: usize) -> Result<bool> {
    ensure_context()?;
    // SAFETY: the stream handle is validated by the driver.
    let status = unsafe { cu::cuStreamQuery(stream as cu::CUstream) };
    match status {
        cu::CUresult::CUDA_SUCCESS => Ok(true),
        cu::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => check(other, "cuStreamQuery", 0).map(|_| false),
    }
}

/// Makes `stream` wait (on the GPU) for `event`.
pub fn stream_wait_event(stream: usize, event: usize) -> Result<()> {
    ensure_context()?;
    call!(cuStreamWaitEvent(stream as cu::CUstream, event as cu::CUevent, 0))
}

/// Creates an event; timing is disabled unless `timing` is set.
pub fn event_create(timing: bool) -> Result<usize> {
    ensure_context()?;
    let mut e: cu::CUevent = std::ptr::null_mut();
    let flags = if timing {
        0
    } else {
        cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
    };
    call!(cuEventCreate(&mut e, flags))?;
    Ok(e as usize)
}

/// Destroys an event.
///
/// # Safety
/// `event` came from [`event_create`] and is not used after.
pub unsafe fn event_destroy(event: usize) -> Result<()> {
    ensure_context()?;
    call!(cuEventDestroy_v2(event as cu::CUevent))
}

/// Records `event` on `stream`.
pub fn event_record(event: usize, stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuEventRecord(event as cu::CUevent, stream as cu::CUstream))
}

/// Blocks until `event` has completed.
pub fn event_synchronize(event: usize) -> Result<()> {
    ensure_context()?;
    call!(cuEventSynchronize(event as cu::CUevent))
}

/// Milliseconds between two recorded timing events.
pub fn event_elapsed_ms(start: usize, end: usize) -> Result<f32> {
    ensure_context()?;
    let mut ms = 0f32;
    call!(cuEventElapsedTime(
        &mut ms,
        start as cu::CUevent,
        end as cu::CUevent
    ))?;
    Ok(ms)
}
