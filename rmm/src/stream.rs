//! Streams: an owning [`CudaStream`], a copyable [`CudaStreamView`] and a
//! round-robin [`CudaStreamPool`] (`rmm/cuda_stream*.hpp`).

use std::sync::atomic::{AtomicUsize, Ordering};

use cust::stream::{Stream, StreamFlags};

use crate::driver;
use crate::error::{Error, Result};

/// A non-owning, copyable handle to a CUDA stream.
///
/// Memory allocated on a stream view is valid in that stream's order. The
/// constants name the legacy default stream ([`CudaStreamView::DEFAULT`], the
/// null handle), the explicit legacy handle and the per-thread default stream.
/// A view never destroys its stream; destroying a stream while a view of it is
/// still used with a resource is a logic error (as in RMM).
///
/// ```
/// use rmm::CudaStreamView;
/// assert!(CudaStreamView::DEFAULT.is_default());
/// assert!(CudaStreamView::PER_THREAD.is_per_thread_default());
/// assert_ne!(CudaStreamView::DEFAULT, CudaStreamView::PER_THREAD);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CudaStreamView(usize);

impl CudaStreamView {
    /// The default stream (null handle, legacy semantics).
    pub const DEFAULT: CudaStreamView = CudaStreamView(0);
    /// The legacy default stream named explicitly (`CU_STREAM_LEGACY`).
    pub const LEGACY: CudaStreamView = CudaStreamView(0x1);
    /// The per-thread default stream (`CU_STREAM_PER_THREAD`).
    pub const PER_THREAD: CudaStreamView = CudaStreamView(0x2);

    /// Wraps a raw `CUstream` handle given as an integer.
    ///
    /// # Safety
    /// `raw` is a live stream of the current context, or one of the special
    /// handles 0, 1, 2, for as long as the view is used.
    pub const unsafe fn from_raw(raw: usize) -> Self {
        CudaStreamView(raw)
    }

    /// The raw handle as an integer.
    pub const fn as_raw(self) -> usize {
        self.0
    }

    /// True for the default stream, null or legacy handle.
    pub const fn is_default(self) -> bool {
        self.0 == 0 || self.0 == 1
    }

    /// True for the per-thread default stream.
    pub const fn is_per_thread_default(self) -> bool {
        self.0 == 2
    }

    /// Blocks until all work on the stream has finished.
    ///
    /// # Errors
    /// The driver's error (e.g. an earlier kernel fault).
    pub fn synchronize(self) -> Result<()> {
        driver::stream_synchronize(self.0)
    }

    /// Like [`synchronize`](Self::synchronize) but logs instead of returning
    /// an error; for drop paths.
    pub fn synchronize_no_throw(self) {
        if let Err(e) = self.synchronize() {
            log::error!("stream {self:?} synchronize failed: {e}");
        }
    }

    /// True when all work on the stream has finished.
    pub fn is_idle(self) -> Result<bool> {
        driver::stream_query(self.0)
    }
}

impl std::fmt::Debug for CudaStreamView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            0 => write!(f, "CudaStreamView(default)"),
            1 => write!(f, "CudaStreamView(legacy)"),
            2 => write!(f, "CudaStreamView(per-thread)"),
            h => write!(f, "CudaStreamView({h:#x})"),
        }
    }
}

impl std::fmt::LowerHex for CudaStreamView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

impl From<&Stream> for CudaStreamView {
    fn from(s: &Stream) -> Self {
        CudaStreamView(s.as_inner() as usize)
    }
}

impl From<&CudaStream> for CudaStreamView {
    fn from(s: &CudaStream) -> Self {
        s.view()
    }
}

/// An owning CUDA stream; never the default stream. Destroyed on drop.
/// Movable, not copyable; `Send + Sync` (CUDA streams are thread safe).
///
/// ```no_run
/// let s = rmm::CudaStream::new()?;
/// let v = s.view();
/// v.synchronize()?;
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct CudaStream {
    inner: Stream,
}

impl CudaStream {
    /// A new stream that synchronises with the legacy default stream.
    pub fn new() -> Result<Self> {
        Self::with_flags(StreamFlags::DEFAULT)
    }

    /// A new stream that does not synchronise with the legacy default stream.
    pub fn non_blocking() -> Result<Self> {
        Self::with_flags(StreamFlags::NON_BLOCKING)
    }

    /// A new stream with cust's flags.
    pub fn with_flags(flags: StreamFlags) -> Result<Self> {
        driver::ensure_context()?;
        let inner = Stream::new(flags, None).map_err(|e| Error::Cuda {
            code: e as u32,
            name: "cuStreamCreate failed",
            call: "cuStreamCreate",
        })?;
        Ok(CudaStream { inner })
    }

    /// A view of this stream.
    pub fn view(&self) -> CudaStreamView {
        CudaStreamView::from(&self.inner)
    }

    /// Blocks until all work on the stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.view().synchronize()
    }

    /// The cust stream inside, for `launch!`.
    pub fn as_cust(&self) -> &Stream {
        &self.inner
    }

    /// The cust stream inside, by value.
    pub fn into_cust(self) -> Stream {
        self.inner
    }
}

impl From<Stream> for CudaStream {
    fn from(inner: Stream) -> Self {
        CudaStream { inner }
    }
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
    pub fn get_stream(&self) -> CudaStreamView {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.streams.len();
        self.streams[i].view()
    }

    /// Stream number `id % pool_size()`.
    pub fn get_stream_by_id(&self, id: usize) -> CudaStreamView {
        self.streams[id % self.streams.len()].view()
    }

    /// Number of streams in the pool.
    pub fn pool_size(&self) -> usize {
        self.streams.len()
    }
}
