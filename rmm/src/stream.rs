//! Streams: an owning, shared [`CudaStream`], a borrowed, copyable
//! [`CudaStreamView`], the owned [`StreamRef`] that containers keep, and a
//! round-robin [`CudaStreamPool`] (`rmm/cuda_stream*.hpp`).
//!
//! # Lifetimes
//! A [`CudaStreamView<'a>`](CudaStreamView) borrows its stream for `'a`, so
//! it cannot outlive it: a view of a [`CudaStream`] borrows the
//! `CudaStream`; the special streams ([`CudaStreamView::DEFAULT`],
//! [`LEGACY`](CudaStreamView::LEGACY), [`PER_THREAD`](CudaStreamView::PER_THREAD))
//! are `CudaStreamView<'static>`. A [`CudaStream`] is shared ownership (an
//! `Arc` inside; the driver stream is destroyed when the last clone drops),
//! and a view of one can be turned into a [`StreamRef`] that keeps the
//! stream alive. Containers and execution policies store a `StreamRef`, so
//! a buffer made on a stream keeps that stream alive until it has been
//! freed on it, whatever the caller does with its own `CudaStream`.
//!
//! ```compile_fail
//! // A view cannot outlive its stream.
//! let v = {
//!     let s = rmm::CudaStream::new().unwrap();
//!     s.view()
//! };
//! v.synchronize().unwrap();
//! ```
//!
//! ```no_run
//! // A container keeps its stream alive.
//! let buf = {
//!     let s = rmm::CudaStream::new()?;
//!     rmm::DeviceBuffer::new(100, s.view())?
//! }; // `s` dropped here; the stream lives on inside `buf`
//! buf.stream().synchronize()?;
//! # Ok::<(), rmm::Error>(())
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[cfg(feature = "cust")]
use cust::stream::{Stream, StreamFlags};

use crate::driver::{self, StreamHandle};
use crate::error::{Error, Result};
use crate::graph::{CaptureStatus, RelaxedCaptureMode};
use crate::ptr::DevicePtr;

/// The driver stream a [`CudaStream`] owns: with the `cust` feature, cust's
/// `Stream` (so that a stream converts to and from cust, which cannot adopt a
/// raw handle); otherwise our own, made and destroyed through the driver
/// module.
#[cfg(not(feature = "cust"))]
#[derive(Debug)]
struct Stream {
    raw: StreamHandle,
}

#[cfg(not(feature = "cust"))]
impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: `raw` came from driver::stream_create and this value is its
        // only owner (shared through an `Arc`, dropped once); nothing uses the
        // handle after.
        if let Err(e) = unsafe { driver::stream_destroy(self.raw) } {
            log::warn!("destroying stream {:#x}: {e}", self.raw.as_raw());
        }
    }
}

/// Makes a stream; `non_blocking`: no implicit synchronisation with the
/// legacy default stream.
#[cfg(not(feature = "cust"))]
fn create_stream(non_blocking: bool) -> Result<Stream> {
    driver::stream_create(non_blocking).map(|raw| Stream { raw })
}

#[cfg(feature = "cust")]
fn create_stream(non_blocking: bool) -> Result<Stream> {
    let flags = if non_blocking {
        StreamFlags::NON_BLOCKING
    } else {
        StreamFlags::DEFAULT
    };
    create_cust_stream(flags)
}

#[cfg(feature = "cust")]
fn create_cust_stream(flags: StreamFlags) -> Result<Stream> {
    driver::ensure_context()?;
    Stream::new(flags, None).map_err(|e| Error::Cuda {
        code: e as u32,
        name: "cuStreamCreate failed",
        call: "cuStreamCreate",
    })
}

/// The handle of an owned stream.
#[cfg(not(feature = "cust"))]
fn raw_handle(s: &Stream) -> StreamHandle {
    s.raw
}

#[cfg(feature = "cust")]
fn raw_handle(s: &Stream) -> StreamHandle {
    StreamHandle::from_raw(s.as_inner() as usize)
}

/// What a [`CudaStream`] keeps alive: a stream it made, or (feature
/// `cudarc`) a cudarc stream it was made from, which cudarc destroys when
/// its last `Arc` drops (see `crate::interop::cudarc`).
#[derive(Debug)]
enum StreamOwner {
    Ours(Stream),
    #[cfg(feature = "cudarc")]
    Cudarc {
        /// cudarc's `Arc<CudaStream>`, type-erased: cudarc's stream holds
        /// atomics (its context's counters) that no comparison of ours
        /// reads, and clippy's `mutable_key_type` would otherwise flag every
        /// set or map keyed by a stream view.
        keep: Box<dyn std::any::Any + Send + Sync>,
        raw: StreamHandle,
    },
}

impl StreamOwner {
    fn handle(&self) -> StreamHandle {
        match self {
            StreamOwner::Ours(s) => raw_handle(s),
            #[cfg(feature = "cudarc")]
            StreamOwner::Cudarc { raw, .. } => *raw,
        }
    }
}

/// A non-owning, copyable handle to a CUDA stream, valid for `'a`.
///
/// Memory allocated on a stream view is valid in that stream's order. The
/// constants name the legacy default stream ([`CudaStreamView::DEFAULT`], the
/// null handle), the explicit legacy handle and the per-thread default stream.
/// A view never destroys its stream, and cannot outlive it: a view of a
/// [`CudaStream`] borrows it. Anything that must remember a stream beyond a
/// call (a container, an execution policy) keeps a [`StreamRef`] made from
/// the view, which holds a clone of the `CudaStream`.
///
/// Equality, ordering and hashing compare the raw handle only.
///
/// ```
/// use rmm::CudaStreamView;
/// assert!(CudaStreamView::DEFAULT.is_default());
/// assert!(CudaStreamView::PER_THREAD.is_per_thread_default());
/// assert_ne!(CudaStreamView::DEFAULT, CudaStreamView::PER_THREAD);
/// ```
#[derive(Clone, Copy)]
pub struct CudaStreamView<'a> {
    raw: StreamHandle,
    /// The stream this view borrows, when it is one of ours; lets
    /// [`StreamRef::from`] keep it alive. `None` for the special streams and
    /// for views made by [`CudaStreamView::from_raw`].
    owner: Option<&'a Arc<StreamOwner>>,
}

impl CudaStreamView<'static> {
    /// The default stream (null handle, legacy semantics).
    pub const DEFAULT: CudaStreamView<'static> = CudaStreamView::special(StreamHandle::NULL);
    /// The legacy default stream named explicitly (`CU_STREAM_LEGACY`).
    pub const LEGACY: CudaStreamView<'static> = CudaStreamView::special(StreamHandle::LEGACY);
    /// The per-thread default stream (`CU_STREAM_PER_THREAD`).
    pub const PER_THREAD: CudaStreamView<'static> = CudaStreamView::special(StreamHandle::PER_THREAD);

    const fn special(raw: StreamHandle) -> Self {
        CudaStreamView { raw, owner: None }
    }
}

impl Default for CudaStreamView<'_> {
    /// [`CudaStreamView::DEFAULT`].
    fn default() -> Self {
        CudaStreamView::DEFAULT
    }
}

impl<'a> CudaStreamView<'a> {
    /// Wraps a raw `CUstream` handle given as an integer.
    ///
    /// Such a view does not keep its stream alive: a container or policy
    /// that stores it (see [`StreamRef`]) stores the raw handle.
    ///
    /// # Safety
    /// `raw` is a live stream of the current context, or one of the special
    /// handles 0, 1, 2, for `'a` and, if the view is given to anything that
    /// stores its stream (a container, an [`ExecPolicy`](crate::exec_policy::ExecPolicy),
    /// a [`StreamRef`]), for as long as that keeps it. Views only ever passed
    /// to the simulated resource (which never calls the driver) may hold any
    /// value.
    pub const unsafe fn from_raw(raw: usize) -> Self {
        CudaStreamView {
            raw: StreamHandle::from_raw(raw),
            owner: None,
        }
    }

    /// The raw handle as an integer.
    pub const fn as_raw(self) -> usize {
        self.raw.as_raw()
    }

    /// The driver handle, live for `'a`: the view borrows its
    /// [`CudaStream`], names a special stream, or came from
    /// [`from_raw`](Self::from_raw), whose contract says so. What the
    /// driver layer's stream calls ask of a [`StreamHandle`].
    #[inline(always)]
    pub(crate) const fn handle(self) -> StreamHandle {
        self.raw
    }

    /// True for the default stream, null or legacy handle.
    pub const fn is_default(self) -> bool {
        matches!(self.raw, StreamHandle::NULL | StreamHandle::LEGACY)
    }

    /// True for the per-thread default stream.
    pub const fn is_per_thread_default(self) -> bool {
        matches!(self.raw, StreamHandle::PER_THREAD)
    }

    /// Blocks until all work on the stream has finished.
    ///
    /// # Errors
    /// The driver's error (e.g. an earlier kernel fault).
    pub fn synchronize(self) -> Result<()> {
        // SAFETY: a view's stream is live for `'a` (see `handle`).
        unsafe { driver::stream_synchronize(self.raw) }
    }

    /// Like [`synchronize`](Self::synchronize) but logs instead of returning
    /// an error; for drop paths.
    pub fn synchronize_no_throw(self) {
        if let Err(e) = self.synchronize() {
            log::error!("stream {self:?} synchronize failed: {e}");
        }
    }

    /// True when all work on the stream has finished.
    ///
    /// # Errors
    /// The driver's error.
    pub fn is_idle(self) -> Result<bool> {
        // SAFETY: a view's stream is live for `'a` (see `handle`).
        unsafe { driver::stream_query(self.raw) }
    }

    /// Prefetches `[ptr, ptr + bytes)` of managed memory to `device` in this
    /// stream's order (`cuMemPrefetchAsync`), for [`crate::device::prefetch`]
    /// and the prefetch adaptor.
    ///
    /// # Errors
    /// The driver's error (`CUDA_ERROR_INVALID_VALUE` for memory that is not
    /// managed).
    pub(crate) fn prefetch(self, ptr: DevicePtr, bytes: usize, device: i32) -> Result<()> {
        // SAFETY: a view's stream is live for `'a` (see `handle`); a prefetch
        // never changes memory contents, and the driver checks the range.
        unsafe { driver::mem_prefetch_async(ptr, bytes, device, self.raw) }
    }
}

impl PartialEq for CudaStreamView<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl Eq for CudaStreamView<'_> {}
impl std::hash::Hash for CudaStreamView<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.raw.hash(state);
    }
}
impl PartialOrd for CudaStreamView<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for CudaStreamView<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.raw.cmp(&other.raw)
    }
}

impl std::fmt::Debug for CudaStreamView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.raw.as_raw() {
            0 => write!(f, "CudaStreamView(default)"),
            1 => write!(f, "CudaStreamView(legacy)"),
            2 => write!(f, "CudaStreamView(per-thread)"),
            h => write!(f, "CudaStreamView({h:#x})"),
        }
    }
}

impl std::fmt::LowerHex for CudaStreamView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.raw.as_raw(), f)
    }
}

impl<'a> From<&'a CudaStream> for CudaStreamView<'a> {
    fn from(s: &'a CudaStream) -> Self {
        s.view()
    }
}

/// An owned reference to a stream, kept by containers and execution
/// policies: one of the special streams, a clone of a [`CudaStream`] (which
/// keeps that stream alive), or the raw handle of a view made by
/// [`CudaStreamView::from_raw`] (whose contract covers it).
///
/// Made from any view with [`From`]; [`view`](Self::view) borrows it back.
///
/// ```
/// use rmm::stream::StreamRef;
/// use rmm::CudaStreamView;
/// let r = StreamRef::from(CudaStreamView::PER_THREAD);
/// assert_eq!(r.view(), CudaStreamView::PER_THREAD);
/// ```
#[derive(Clone)]
pub struct StreamRef {
    raw: StreamHandle,
    owner: Option<Arc<StreamOwner>>,
}

impl StreamRef {
    /// A view of the stream, valid while this reference is.
    pub fn view(&self) -> CudaStreamView<'_> {
        CudaStreamView {
            raw: self.raw,
            owner: self.owner.as_ref(),
        }
    }

    /// The raw handle as an integer.
    pub fn as_raw(&self) -> usize {
        self.raw.as_raw()
    }
}

impl Default for StreamRef {
    /// The default stream.
    fn default() -> Self {
        StreamRef::from(CudaStreamView::DEFAULT)
    }
}

impl From<CudaStreamView<'_>> for StreamRef {
    fn from(v: CudaStreamView<'_>) -> Self {
        StreamRef {
            raw: v.raw,
            owner: v.owner.cloned(),
        }
    }
}

impl From<&CudaStream> for StreamRef {
    fn from(s: &CudaStream) -> Self {
        StreamRef::from(s.view())
    }
}

impl From<CudaStream> for StreamRef {
    fn from(s: CudaStream) -> Self {
        StreamRef::from(s.view())
    }
}

impl PartialEq for StreamRef {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}
impl Eq for StreamRef {}

impl std::fmt::Debug for StreamRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.view(), f)
    }
}

/// An owning CUDA stream; never the default stream. Cloning shares the
/// stream (an `Arc` inside); it is destroyed when the last clone, and the
/// last container or policy that keeps it (through a [`StreamRef`]), drops.
/// `Send + Sync` (CUDA streams are thread safe).
///
/// ```no_run
/// let s = rmm::CudaStream::new()?;
/// let v = s.view();
/// v.synchronize()?;
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct CudaStream {
    inner: Arc<StreamOwner>,
}

impl CudaStream {
    /// A new stream that synchronises with the legacy default stream.
    ///
    /// # Errors
    /// The driver's error when no device is usable
    /// ([`Error::DriverUnavailable`] without a driver).
    pub fn new() -> Result<Self> {
        create_stream(false).map(Self::wrap)
    }

    /// A new stream that does not synchronise with the legacy default stream.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn non_blocking() -> Result<Self> {
        create_stream(true).map(Self::wrap)
    }

    /// A new stream with cust's flags.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    #[cfg(feature = "cust")]
    pub fn with_flags(flags: StreamFlags) -> Result<Self> {
        create_cust_stream(flags).map(Self::wrap)
    }

    fn wrap(inner: Stream) -> Self {
        CudaStream {
            inner: Arc::new(StreamOwner::Ours(inner)),
        }
    }

    /// A stream that keeps cudarc's `stream` alive; the checks are
    /// `CudaStream::from_cudarc`'s (`crate::interop::cudarc`).
    #[cfg(feature = "cudarc")]
    pub(crate) fn wrap_cudarc(stream: Arc<cudarc::driver::CudaStream>) -> Self {
        let raw = StreamHandle::from_raw(stream.cu_stream() as usize);
        CudaStream {
            inner: Arc::new(StreamOwner::Cudarc {
                keep: Box::new(stream),
                raw,
            }),
        }
    }

    /// The cudarc stream this stream was made from, if it was.
    #[cfg(feature = "cudarc")]
    pub(crate) fn cudarc_stream(&self) -> Option<&Arc<cudarc::driver::CudaStream>> {
        match &*self.inner {
            StreamOwner::Cudarc { keep, .. } => keep.downcast_ref(),
            StreamOwner::Ours(_) => None,
        }
    }

    /// A view of this stream; it borrows the stream and cannot outlive it.
    pub fn view(&self) -> CudaStreamView<'_> {
        CudaStreamView {
            raw: self.inner.handle(),
            owner: Some(&self.inner),
        }
    }

    /// Blocks until all work on the stream has finished.
    ///
    /// # Errors
    /// As [`CudaStreamView::synchronize`].
    pub fn synchronize(&self) -> Result<()> {
        self.view().synchronize()
    }

    /// The cust stream inside, for `launch!`; `None` for a stream made from
    /// a cudarc stream (feature `cudarc`), which has no cust stream.
    #[cfg(feature = "cust")]
    pub fn as_cust(&self) -> Option<&Stream> {
        match &*self.inner {
            StreamOwner::Ours(s) => Some(s),
            #[cfg(feature = "cudarc")]
            StreamOwner::Cudarc { .. } => None,
        }
    }

    /// The cust stream inside, by value, when this is the only reference to
    /// it (no clone, container or policy keeps it); otherwise `self` back.
    ///
    /// # Errors
    /// `self`, unchanged, when the stream is shared or was made from a
    /// cudarc stream.
    #[cfg(feature = "cust")]
    pub fn into_cust(self) -> std::result::Result<Stream, Self> {
        match Arc::try_unwrap(self.inner) {
            Ok(StreamOwner::Ours(s)) => Ok(s),
            #[cfg(feature = "cudarc")]
            Ok(other) => Err(CudaStream {
                inner: Arc::new(other),
            }),
            Err(inner) => Err(CudaStream { inner }),
        }
    }
}

#[cfg(feature = "cust")]
impl From<Stream> for CudaStream {
    fn from(inner: Stream) -> Self {
        CudaStream::wrap(inner)
    }
}

/// Makes `waiter` wait (on the GPU, without blocking the host) for the work
/// submitted to `producer` so far. A no-op when both are the same stream.
///
/// Crate-private: outside `rmm`, device work on a container's memory is
/// ordered through [`DeviceBuffer::access`](crate::DeviceBuffer::access) or
/// [`ExecPolicy::launch_ordered`](crate::exec_policy::ExecPolicy::launch_ordered),
/// which join both ways around the work.
///
/// # Errors
/// The driver's error from creating, recording or waiting on the event.
pub(crate) fn stream_wait(waiter: CudaStreamView, producer: CudaStreamView) -> Result<()> {
    if waiter == producer {
        return Ok(());
    }
    let event = driver::event_create(false)?;
    // SAFETY: the event was created above and is destroyed below; both views'
    // streams are live for the call (see `CudaStreamView::handle`).
    let r = unsafe { driver::event_record(event, producer.handle()) }
        // SAFETY: as above.
        .and_then(|()| unsafe { driver::stream_wait_event(waiter.handle(), event) });
    // SAFETY: the event was created above; destroying it after the wait was
    // enqueued is allowed (the driver releases it once it completes).
    if let Err(e) = unsafe { driver::event_destroy(event) } {
        log::error!("stream_wait: cuEventDestroy failed: {e}");
    }
    r
}

/// Runs `work`, which enqueues device work on `stream`, ordered with the
/// streams of the memory it uses (`owners`, the streams where that memory is
/// written and will be freed):
///
/// 1. `stream` waits for the work already queued on each owner (an event
///    per owner that differs from `stream`; repeated owners count once), so
///    `work` sees the owners' writes;
/// 2. `work` runs;
/// 3. each owner waits for `stream`, so the owner's later work, and the free
///    of its memory, comes after `work`'s. This runs even when `work` fails
///    part way (it may have enqueued something before failing); a failed
///    join is logged and returned unless `work`'s own error comes first.
///
/// Under stream capture (see [`owner_joins`]) an owner in the same capture
/// is joined as above (the events become graph edges); an owner outside the
/// capture is synchronised on the host instead of step 1 and left out of
/// step 3; anything else is refused before `work` runs.
///
/// The one home of the join protocol behind
/// [`DeviceBuffer::access`](crate::DeviceBuffer::access) and
/// [`ExecPolicy::launch_ordered`](crate::exec_policy::ExecPolicy::launch_ordered).
///
/// # Errors
/// The driver's event error from step 1 (then `work` does not run);
/// [`Error::Capture`] from [`owner_joins`]; `work`'s error; the driver's
/// event error from step 3.
pub(crate) fn run_ordered<'s, R>(
    what: &str,
    stream: CudaStreamView<'s>,
    owners: impl IntoIterator<Item = CudaStreamView<'s>>,
    work: impl FnOnce(CudaStreamView<'s>) -> Result<R>,
) -> Result<R> {
    let mut distinct: Vec<CudaStreamView<'s>> = Vec::new();
    for owner in owners {
        if owner != stream && !distinct.contains(&owner) {
            distinct.push(owner);
        }
    }
    let joined_by_events = owner_joins(what, stream, &distinct)?;
    for &owner in &joined_by_events {
        stream_wait(stream, owner)?;
    }
    let result = work(stream);
    let mut joined = Ok(());
    for &owner in &joined_by_events {
        if let Err(e) = stream_wait(owner, stream) {
            log::error!("{what}: {owner:?} could not wait for the work on {stream:?}: {e}");
            joined = joined.and(Err(e));
        }
    }
    let value = result?;
    joined.map(|()| value)
}

/// The owners [`run_ordered`] joins with events, after settling stream
/// capture (`owners` are distinct and differ from `stream`; none: no driver
/// call):
///
/// - neither `stream` nor an owner captures, or both belong to one capture
///   (the owner forked into it, or the other way round): joined by events,
///   which inside a capture become the graph's dependencies;
/// - `stream` captures and an owner does not: the graph runs at each of its
///   launches, which no event recorded now can order. The owner is
///   synchronised on the host now (in relaxed capture mode, so the capture
///   survives), so every launch of the graph comes after the work queued on
///   it so far; no event is made. Ordering later launches with the owner's
///   later work, and keeping the memory allocated while the graph may run,
///   is the caller's part, as for any memory a graph uses;
/// - an owner captures and `stream` does not, or they belong to different
///   captures, or either capture is invalidated: [`Error::Capture`] naming
///   the stream, before any work (an event would pull `stream` into another
///   capture, or fail and invalidate it).
fn owner_joins<'s>(
    what: &str,
    stream: CudaStreamView<'s>,
    owners: &[CudaStreamView<'s>],
) -> Result<Vec<CudaStreamView<'s>>> {
    if owners.is_empty() {
        return Ok(Vec::new());
    }
    let refuse = |s: CudaStreamView<'_>, reason: String| Error::Capture {
        stream: s.as_raw(),
        reason: format!("{what}: {reason}"),
    };
    let work = stream.capture_status()?;
    let mut by_events = Vec::with_capacity(owners.len());
    for &owner in owners {
        match (work, owner.capture_status()?) {
            (CaptureStatus::None, CaptureStatus::None) => by_events.push(owner),
            (CaptureStatus::Active { id: a }, CaptureStatus::Active { id: b }) if a == b => by_events.push(owner),
            (CaptureStatus::Active { .. }, CaptureStatus::None) => {
                let _relaxed = RelaxedCaptureMode::enter()?;
                owner.synchronize()?;
            }
            (CaptureStatus::None, CaptureStatus::Active { .. }) => {
                return Err(refuse(
                    owner,
                    format!(
                        "memory used by work on {stream:?} belongs to this stream, which is capturing; \
                         run the work on the capturing stream (or a stream joined to its capture)"
                    ),
                ))
            }
            (CaptureStatus::Active { .. }, CaptureStatus::Active { .. }) => {
                return Err(refuse(
                    owner,
                    format!("memory used by work captured on {stream:?} belongs to this stream, which another capture holds"),
                ))
            }
            (CaptureStatus::Invalidated, _) => {
                return Err(refuse(stream, "the capture on this stream is invalidated".into()))
            }
            (_, CaptureStatus::Invalidated) => {
                return Err(refuse(owner, "the capture on this stream is invalidated".into()))
            }
        }
    }
    Ok(by_events)
}

/// A fixed ring of streams handed out round robin (`rmm::cuda_stream_pool`).
///
/// ```no_run
/// let pool = rmm::CudaStreamPool::new(4)?;
/// assert_eq!(pool.get_stream_by_id(5), pool.get_stream_by_id(1));
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct CudaStreamPool {
    streams: Vec<CudaStream>,
    next: AtomicUsize,
}

impl CudaStreamPool {
    /// RMM's default pool size.
    pub const DEFAULT_SIZE: usize = 16;

    /// A pool of `size` new streams.
    ///
    /// # Errors
    /// [`Error::Logic`] when `size` is 0; the driver's error otherwise.
    pub fn new(size: usize) -> Result<Self> {
        if size == 0 {
            return Err(Error::Logic("stream pool size must be greater than zero".into()));
        }
        let streams = (0..size).map(|_| CudaStream::new()).collect::<Result<Vec<_>>>()?;
        Ok(CudaStreamPool {
            streams,
            next: AtomicUsize::new(0),
        })
    }

    /// The next stream, round robin; thread safe.
    pub fn get_stream(&self) -> CudaStreamView<'_> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.streams.len();
        self.streams[i].view()
    }

    /// Stream number `id % pool_size()`.
    pub fn get_stream_by_id(&self, id: usize) -> CudaStreamView<'_> {
        self.streams[id % self.streams.len()].view()
    }

    /// Number of streams in the pool.
    pub fn pool_size(&self) -> usize {
        self.streams.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn handles_are_thread_safe_and_compare_by_handle() {
        send_sync::<CudaStream>();
        send_sync::<CudaStreamView<'static>>();
        send_sync::<StreamRef>();
        send_sync::<crate::DeviceSpan<'static, u32>>();
        send_sync::<crate::DeviceBuffer>();
        let r = StreamRef::from(CudaStreamView::PER_THREAD);
        assert_eq!(r.view(), CudaStreamView::PER_THREAD);
        assert_eq!(r.as_raw(), 2);
        assert_eq!(StreamRef::default().view(), CudaStreamView::default());
        assert!(StreamRef::default().view().is_default());
        // SAFETY: compared only, never given to the driver.
        let fake = unsafe { CudaStreamView::from_raw(0x1230) };
        assert_eq!(StreamRef::from(fake).view(), fake);
        assert_eq!(format!("{:?}", StreamRef::from(fake)), "CudaStreamView(0x1230)");
    }

    #[test]
    fn run_ordered_joins_only_other_streams_and_passes_errors_on() {
        // SAFETY: compared only: with no other stream no event is made.
        let s = unsafe { CudaStreamView::from_raw(0x4560) };
        let mut ran = false;
        let seen = run_ordered("t", s, [s, s], |w| {
            ran = true;
            Ok(w.as_raw())
        })
        .unwrap();
        assert!(ran);
        assert_eq!(seen, 0x4560);
        let e = run_ordered("t", s, std::iter::empty(), |_| {
            Err::<(), _>(Error::Logic("boom".into()))
        })
        .unwrap_err();
        assert!(matches!(&e, Error::Logic(m) if m == "boom"), "{e:?}");
        if !crate::device::is_available() {
            // Without a usable driver the join to another stream fails, and
            // the work never runs.
            // SAFETY: the driver refuses before using the handle.
            let other = unsafe { CudaStreamView::from_raw(0x4570) };
            let mut ran = false;
            let e = run_ordered("t", s, [other], |_| {
                ran = true;
                Ok(())
            })
            .unwrap_err();
            assert!(!ran, "{e}");
        }
    }
}
