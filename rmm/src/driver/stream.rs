//! Streams and events.
//!
//! # Safety contract
//! Every call here that takes a [`StreamHandle`] or an [`EventHandle`] is
//! `unsafe`: its caller vouches that each handle is live (made by
//! [`stream_create`] / [`event_create`], or a stream of another library
//! that outlives the call, or one of the special streams) and, for the
//! destroying calls, that it is not used after. Creating calls write one
//! handle through an out-pointer to a local and take flags only.

use std::num::NonZeroUsize;

use cudarc::driver::sys as cu;

use super::device::ensure_context;
use super::{call, check};
use crate::error::{Error, Result};

/// A `CUstream`: one of ours, one of another library (entered through
/// [`from_raw`](Self::from_raw)), or one of the special handles
/// ([`NULL`](Self::NULL), [`LEGACY`](Self::LEGACY),
/// [`PER_THREAD`](Self::PER_THREAD)), which are always live. Held as the
/// handle's bits, so that it is `Send`, `Sync` and `const`-constructible.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamHandle(usize);

impl StreamHandle {
    /// The null stream (the legacy default stream).
    pub const NULL: StreamHandle = StreamHandle(0);
    /// `CU_STREAM_LEGACY`: the legacy default stream named explicitly.
    pub const LEGACY: StreamHandle = StreamHandle(0x1);
    /// `CU_STREAM_PER_THREAD`: the calling thread's default stream.
    pub const PER_THREAD: StreamHandle = StreamHandle(0x2);

    /// A stream handle given as an integer from outside (a `CUstream` of
    /// another library, Python or cust). Making one is safe; the calls that
    /// take it are `unsafe` and ask that it be live.
    pub const fn from_raw(raw: usize) -> StreamHandle {
        StreamHandle(raw)
    }

    /// The handle as an integer.
    pub const fn as_raw(self) -> usize {
        self.0
    }

    /// The driver's type, for a call.
    #[inline(always)]
    pub(super) fn raw(self) -> cu::CUstream {
        self.0 as cu::CUstream
    }
}

/// A `CUevent` made by [`event_create`]; never null, so that an
/// `Option<EventHandle>` is one word, as the handle itself.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHandle(NonZeroUsize);

impl EventHandle {
    /// The driver's type, for a call.
    fn raw(self) -> cu::CUevent {
        self.0.get() as cu::CUevent
    }
}

/// Creates a stream (`cuStreamCreate`); `non_blocking` sets
/// `CU_STREAM_NON_BLOCKING` (no implicit synchronisation with the legacy
/// default stream). (With the `cust` feature, cust makes the streams.)
#[cfg(not(feature = "cust"))]
pub fn stream_create(non_blocking: bool) -> Result<StreamHandle> {
    ensure_context()?;
    let mut s: cu::CUstream = std::ptr::null_mut();
    let flags = if non_blocking {
        cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32
    } else {
        cu::CUstream_flags::CU_STREAM_DEFAULT as u32
    };
    check(
        // SAFETY: `s` is a valid out-pointer; a context is current.
        call("cuStreamCreate", || unsafe { cu::cuStreamCreate(&mut s, flags) }),
        "cuStreamCreate",
        0,
    )?;
    Ok(StreamHandle(s as usize))
}

/// Destroys a stream (`cuStreamDestroy`); work already queued on it still
/// completes.
///
/// # Safety
/// `stream` came from [`stream_create`] and is not used after.
#[cfg(not(feature = "cust"))]
pub unsafe fn stream_destroy(stream: StreamHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a live stream of ours, used no more.
    let status = call("cuStreamDestroy_v2", || unsafe {
        cu::cuStreamDestroy_v2(stream.raw())
    });
    check(status, "cuStreamDestroy_v2", 0)
}

/// Blocks until all work on `stream` has finished.
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_synchronize(stream: StreamHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: `stream` is live.
    let status = call("cuStreamSynchronize", || unsafe {
        cu::cuStreamSynchronize(stream.raw())
    });
    check(status, "cuStreamSynchronize", 0)
}

/// True when all work on `stream` has finished.
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_query(stream: StreamHandle) -> Result<bool> {
    ensure_context()?;
    // SAFETY: the caller's contract: `stream` is live.
    let status = call("cuStreamQuery", || unsafe { cu::cuStreamQuery(stream.raw()) });
    match status {
        cu::CUresult::CUDA_SUCCESS => Ok(true),
        cu::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => check(other, "cuStreamQuery", 0).map(|_| false),
    }
}

/// Makes `stream` wait (on the GPU) for `event`.
///
/// # Safety
/// `stream` and `event` are live.
pub unsafe fn stream_wait_event(stream: StreamHandle, event: EventHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: both handles are live; flags must be 0.
    let status = call("cuStreamWaitEvent", || unsafe {
        cu::cuStreamWaitEvent(stream.raw(), event.raw(), 0)
    });
    check(status, "cuStreamWaitEvent", 0)
}

/// Creates an event; timing is disabled unless `timing` is set.
pub fn event_create(timing: bool) -> Result<EventHandle> {
    ensure_context()?;
    let mut e: cu::CUevent = std::ptr::null_mut();
    let flags = if timing {
        0
    } else {
        cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
    };
    check(
        // SAFETY: `e` is a valid out-pointer; a context is current.
        call("cuEventCreate", || unsafe { cu::cuEventCreate(&mut e, flags) }),
        "cuEventCreate",
        0,
    )?;
    NonZeroUsize::new(e as usize)
        .map(EventHandle)
        .ok_or_else(|| Error::Logic("cuEventCreate succeeded without an event".into()))
}

/// Destroys an event.
///
/// # Safety
/// `event` came from [`event_create`] and is not used after.
pub unsafe fn event_destroy(event: EventHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a live event of ours, used no more.
    let status = call("cuEventDestroy_v2", || unsafe {
        cu::cuEventDestroy_v2(event.raw())
    });
    check(status, "cuEventDestroy_v2", 0)
}

/// Records `event` on `stream`.
///
/// # Safety
/// `event` and `stream` are live.
pub unsafe fn event_record(event: EventHandle, stream: StreamHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: both handles are live.
    let status = call("cuEventRecord", || unsafe {
        cu::cuEventRecord(event.raw(), stream.raw())
    });
    check(status, "cuEventRecord", 0)
}

/// Blocks until `event` has completed.
///
/// # Safety
/// `event` is live.
pub unsafe fn event_synchronize(event: EventHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: `event` is live.
    let status = call("cuEventSynchronize", || unsafe {
        cu::cuEventSynchronize(event.raw())
    });
    check(status, "cuEventSynchronize", 0)
}

/// Milliseconds between two recorded timing events.
///
/// # Safety
/// `start` and `end` are live.
pub unsafe fn event_elapsed_ms(start: EventHandle, end: EventHandle) -> Result<f32> {
    ensure_context()?;
    let mut ms = 0f32;
    // SAFETY: `ms` is a valid out-pointer; the caller's contract: both
    // events are live.
    let status = call("cuEventElapsedTime", || unsafe {
        cu::cuEventElapsedTime(&mut ms, start.raw(), end.raw())
    });
    check(status, "cuEventElapsedTime", 0)?;
    Ok(ms)
}
