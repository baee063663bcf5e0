//! Stream capture, graphs, executable graphs and user objects.
//!
//! # Safety contract
//! Every call here that takes a [`StreamHandle`], [`GraphHandle`],
//! [`GraphExecHandle`] or [`UserObjectHandle`] is `unsafe`: its caller
//! vouches that each handle is live (a stream as [`super::stream`] asks; a
//! graph returned by [`stream_end_capture`] and not yet destroyed, or the
//! graph of a capture in progress as [`stream_capture_info`] reported it; an
//! executable graph from [`graph_instantiate`] not yet destroyed; a user
//! object from [`user_object_create`] whose reference the caller still owns)
//! and, for the destroying calls, that it is not used after. The other
//! arguments are flags, enumerations or out-pointers to locals of the C type
//! the entry point writes.
//!
//! Measured on the H200's host (2026-12-02, driver 580, 2 million calls on
//! a non-default stream that does not capture, in a C probe, three device
//! calls): `cuStreamIsCapturing` 18 to 28 ns, `cuStreamGetCaptureInfo_v3`
//! 24 to 34 ns, `cuCtxGetCurrent` 9 to 13 ns;
//! `cuThreadExchangeStreamCaptureMode` 10 ns (an earlier run).

use std::ffi::c_void;
use std::num::NonZeroUsize;

use cudarc::driver::sys as cu;

use super::device::{current_device, device_of_context, ensure_context, with_context};
use super::stream::StreamHandle;
use super::{call, check};
use crate::error::{Error, Result};

/// A `CUgraph`: made by [`stream_end_capture`] (owned by its caller, who
/// destroys it with [`graph_destroy`]) or reported by
/// [`stream_capture_info`] (the graph of a capture in progress, owned by the
/// capture). Never null.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphHandle(NonZeroUsize);

impl GraphHandle {
    /// The driver's type, for a call.
    fn raw(self) -> cu::CUgraph {
        self.0.get() as cu::CUgraph
    }

    /// The handle's bits (for logs and error messages).
    pub fn as_raw(self) -> usize {
        self.0.get()
    }

    /// A handle from its bits, for the registry's tests (which never give
    /// it to the driver).
    #[cfg(test)]
    pub fn from_raw(raw: NonZeroUsize) -> Self {
        GraphHandle(raw)
    }
}

/// A `CUgraphExec` made by [`graph_instantiate`]; never null.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GraphExecHandle(NonZeroUsize);

impl GraphExecHandle {
    /// The driver's type, for a call.
    fn raw(self) -> cu::CUgraphExec {
        self.0.get() as cu::CUgraphExec
    }
}

/// A `CUuserObject` made by [`user_object_create`]; never null.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserObjectHandle(NonZeroUsize);

impl UserObjectHandle {
    /// The driver's type, for a call.
    fn raw(self) -> cu::CUuserObject {
        self.0.get() as cu::CUuserObject
    }
}

/// `CUstreamCaptureMode`: which calls of other threads (and of this one) a
/// capture forbids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamCaptureMode {
    /// `CU_STREAM_CAPTURE_MODE_GLOBAL`.
    Global,
    /// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`.
    ThreadLocal,
    /// `CU_STREAM_CAPTURE_MODE_RELAXED`.
    Relaxed,
}

impl StreamCaptureMode {
    fn raw(self) -> cu::CUstreamCaptureMode {
        match self {
            StreamCaptureMode::Global => cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
            StreamCaptureMode::ThreadLocal => cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
            StreamCaptureMode::Relaxed => cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        }
    }

    fn from_raw(raw: cu::CUstreamCaptureMode) -> Self {
        match raw {
            cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL => StreamCaptureMode::Global,
            cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL => StreamCaptureMode::ThreadLocal,
            cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED => StreamCaptureMode::Relaxed,
        }
    }
}

/// What `cuStreamGetCaptureInfo` says of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureState {
    /// Not capturing.
    None,
    /// Capturing: the capture's id (unique in the process; streams joined
    /// to the capture report the same id) and the graph being captured.
    Active {
        /// The capture sequence's id.
        id: u64,
        /// The graph being captured (owned by the capture).
        graph: GraphHandle,
    },
    /// The capture was invalidated and must be ended.
    Invalidated,
}

/// Begins a capture on `stream` (`cuStreamBeginCapture_v2`).
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_begin_capture(stream: StreamHandle, mode: StreamCaptureMode) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: `stream` is live; `mode` is a valid
    // enumerator.
    let status = call("cuStreamBeginCapture_v2", || unsafe {
        cu::cuStreamBeginCapture_v2(stream.raw(), mode.raw())
    });
    check(status, "cuStreamBeginCapture_v2", 0)
}

/// Ends the capture on `stream` (`cuStreamEndCapture`) and returns its
/// graph, which the caller then owns. An invalidated capture is ended too
/// and returns the driver's error (`CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`)
/// with no graph.
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_end_capture(stream: StreamHandle) -> Result<GraphHandle> {
    ensure_context()?;
    let mut graph: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: the caller's contract: `stream` is live; `graph` is a valid
    // out-pointer.
    let status = call("cuStreamEndCapture", || unsafe {
        cu::cuStreamEndCapture(stream.raw(), &mut graph)
    });
    check(status, "cuStreamEndCapture", 0)?;
    NonZeroUsize::new(graph as usize)
        .map(GraphHandle)
        .ok_or_else(|| Error::Logic("cuStreamEndCapture succeeded without a graph".into()))
}

/// The capture state of `stream`: `cuStreamIsCapturing`, the driver's
/// cheapest capture query, and only for a stream that captures (or whose
/// capture was invalidated) `cuStreamGetCaptureInfo_v3` for the capture's
/// id and graph. Every allocation on a non-default stream asks this under
/// the default [`CaptureDetection`](crate::graph::CaptureDetection).
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_capture_info(stream: StreamHandle) -> Result<CaptureState> {
    let mut status = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // No context check first (a thread-local lookup, a call in a shared
    // library): `with_context` makes one current only where the driver
    // asks for it.
    let result = with_context(|| {
        // SAFETY: the caller's contract: `stream` is live; `status` is a
        // valid out-pointer.
        call("cuStreamIsCapturing", || unsafe {
            cu::cuStreamIsCapturing(stream.raw(), &mut status)
        })
    })?;
    check(result, "cuStreamIsCapturing", 0)?;
    if status == cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
        return Ok(CaptureState::None);
    }
    let mut id: cu::cuuint64_t = 0;
    let mut graph: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: the caller's contract: `stream` is live; `status`, `id` and
    // `graph` are valid out-pointers; the dependency outputs are optional
    // (null).
    let result = call("cuStreamGetCaptureInfo_v3", || unsafe {
        cu::cuStreamGetCaptureInfo_v3(
            stream.raw(),
            &mut status,
            &mut id,
            &mut graph,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    });
    check(result, "cuStreamGetCaptureInfo_v3", 0)?;
    Ok(match status {
        cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => CaptureState::None,
        cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_INVALIDATED => CaptureState::Invalidated,
        cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => match NonZeroUsize::new(graph as usize)
        {
            Some(g) => CaptureState::Active {
                id,
                graph: GraphHandle(g),
            },
            None => {
                return Err(Error::Logic(
                    "cuStreamGetCaptureInfo reported an active capture without a graph".into(),
                ))
            }
        },
    })
}

/// Sets the calling thread's capture mode and returns the previous one
/// (`cuThreadExchangeStreamCaptureMode`).
pub fn exchange_capture_mode(mode: StreamCaptureMode) -> Result<StreamCaptureMode> {
    ensure_context()?;
    let mut raw = mode.raw();
    // SAFETY: `raw` is a valid in/out pointer holding a valid enumerator.
    let status = call("cuThreadExchangeStreamCaptureMode", || unsafe {
        cu::cuThreadExchangeStreamCaptureMode(&mut raw)
    });
    check(status, "cuThreadExchangeStreamCaptureMode", 0)?;
    Ok(StreamCaptureMode::from_raw(raw))
}

/// The device ordinal `stream` belongs to: the current device for the
/// special streams, otherwise the device of its context (`cuStreamGetCtx`).
///
/// # Safety
/// `stream` is live.
pub unsafe fn stream_device(stream: StreamHandle) -> Result<i32> {
    if matches!(
        stream,
        StreamHandle::NULL | StreamHandle::LEGACY | StreamHandle::PER_THREAD
    ) {
        return current_device();
    }
    ensure_context()?;
    let mut ctx: cu::CUcontext = std::ptr::null_mut();
    // SAFETY: the caller's contract: `stream` is live; `ctx` is a valid
    // out-pointer.
    let status = call("cuStreamGetCtx", || unsafe {
        cu::cuStreamGetCtx(stream.raw(), &mut ctx)
    });
    check(status, "cuStreamGetCtx", 0)?;
    // SAFETY: the context of a live stream is live.
    unsafe { device_of_context(ctx) }
}

/// Instantiates `graph` (`cuGraphInstantiateWithFlags`) in the current
/// context with `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`: memory a
/// graph allocates through graph memory nodes and does not free is freed
/// when the executable is launched again.
///
/// # Safety
/// `graph` is live and not used by another thread during the call.
pub unsafe fn graph_instantiate(graph: GraphHandle) -> Result<GraphExecHandle> {
    ensure_context()?;
    let mut exec: cu::CUgraphExec = std::ptr::null_mut();
    let flags = cu::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0;
    // SAFETY: the caller's contract: `graph` is live and not used
    // concurrently; `exec` is a valid out-pointer.
    let status = call("cuGraphInstantiateWithFlags", || unsafe {
        cu::cuGraphInstantiateWithFlags(&mut exec, graph.raw(), flags as u64)
    });
    check(status, "cuGraphInstantiateWithFlags", 0)?;
    NonZeroUsize::new(exec as usize)
        .map(GraphExecHandle)
        .ok_or_else(|| Error::Logic("cuGraphInstantiate succeeded without an executable graph".into()))
}

/// Launches `exec` on `stream` (`cuGraphLaunch`).
///
/// # Safety
/// `exec` and `stream` are live; `exec` is not used by another thread
/// during the call; the memory its nodes use is valid when they run.
pub unsafe fn graph_launch(exec: GraphExecHandle, stream: StreamHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract.
    let status = call("cuGraphLaunch", || unsafe {
        cu::cuGraphLaunch(exec.raw(), stream.raw())
    });
    check(status, "cuGraphLaunch", 0)
}

/// Destroys `graph` (`cuGraphDestroy`).
///
/// # Safety
/// `graph` came from [`stream_end_capture`] and is not used after.
pub unsafe fn graph_destroy(graph: GraphHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a live graph it owns, used no more.
    let status = call("cuGraphDestroy", || unsafe { cu::cuGraphDestroy(graph.raw()) });
    check(status, "cuGraphDestroy", 0)
}

/// Destroys `exec` (`cuGraphExecDestroy`); launches still pending complete
/// first (the driver frees it asynchronously).
///
/// # Safety
/// `exec` came from [`graph_instantiate`] and is not used after.
pub unsafe fn graph_exec_destroy(exec: GraphExecHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a live executable graph, used no more.
    let status = call("cuGraphExecDestroy", || unsafe {
        cu::cuGraphExecDestroy(exec.raw())
    });
    check(status, "cuGraphExecDestroy", 0)
}

/// Number of nodes of `graph` (`cuGraphGetNodes` without a node array).
///
/// # Safety
/// `graph` is live and not used by another thread during the call.
pub unsafe fn graph_node_count(graph: GraphHandle) -> Result<usize> {
    ensure_context()?;
    let mut count = 0usize;
    // SAFETY: the caller's contract; a null node array asks for the count
    // only, written through the valid out-pointer `count`.
    let status = call("cuGraphGetNodes", || unsafe {
        cu::cuGraphGetNodes(graph.raw(), std::ptr::null_mut(), &mut count)
    });
    check(status, "cuGraphGetNodes", 0)?;
    Ok(count)
}

/// The destructor of a user object: called once, on a driver thread.
pub type UserObjectDestructor = unsafe extern "C" fn(*mut c_void);

/// Creates a user object holding `data` with one reference owned by the
/// caller (`cuUserObjectCreate`, `CU_USER_OBJECT_NO_DESTRUCTOR_SYNC`): when
/// its last reference goes, the driver calls `destroy(data)` on one of its
/// own threads, asynchronously.
///
/// # Safety
/// `destroy(data)` is sound to call once from any thread at any later time,
/// and neither calls the driver nor blocks on anything a thread calling the
/// driver may hold.
pub unsafe fn user_object_create(
    data: *mut c_void,
    destroy: UserObjectDestructor,
) -> Result<UserObjectHandle> {
    ensure_context()?;
    let mut object: cu::CUuserObject = std::ptr::null_mut();
    let flags = cu::CUuserObject_flags::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC as u32;
    // SAFETY: `object` is a valid out-pointer; the caller's contract covers
    // what the driver later does with `data` and `destroy`.
    let status = call("cuUserObjectCreate", || unsafe {
        cu::cuUserObjectCreate(&mut object, data, Some(destroy), 1, flags)
    });
    check(status, "cuUserObjectCreate", 0)?;
    NonZeroUsize::new(object as usize)
        .map(UserObjectHandle)
        .ok_or_else(|| Error::Logic("cuUserObjectCreate succeeded without an object".into()))
}

/// Moves the caller's one reference of `object` to `graph`
/// (`cuGraphRetainUserObject`, `CU_GRAPH_USER_OBJECT_MOVE`): the graph,
/// and every executable instantiated from it, keep the object alive.
///
/// # Safety
/// `graph` is live (a graph being captured counts) and not used by another
/// thread during the call; the caller owns one reference of `object`,
/// which it no longer owns after success.
pub unsafe fn graph_retain_user_object_move(graph: GraphHandle, object: UserObjectHandle) -> Result<()> {
    ensure_context()?;
    let flags = cu::CUuserObjectRetain_flags::CU_GRAPH_USER_OBJECT_MOVE as u32;
    // SAFETY: the caller's contract.
    let status = call("cuGraphRetainUserObject", || unsafe {
        cu::cuGraphRetainUserObject(graph.raw(), object.raw(), 1, flags)
    });
    check(status, "cuGraphRetainUserObject", 0)
}

/// Releases one reference of `object` (`cuUserObjectRelease`); the last one
/// schedules its destructor.
///
/// # Safety
/// The caller owns one reference of `object` and does not use it after.
pub unsafe fn user_object_release(object: UserObjectHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract.
    let status = call("cuUserObjectRelease", || unsafe {
        cu::cuUserObjectRelease(object.raw(), 1)
    });
    check(status, "cuUserObjectRelease", 0)
}
