//! Graph memory of the resources that keep their own free memory: the
//! graph-private pools ([`PrivatePool`]) a resource keeps per
//! [`GraphPool`](crate::graph::GraphPool) while streams capture, in front
//! of its ordinary ("shared") path.
//!
//! * An allocation on a capturing stream is served from that capture's
//!   private pool. Its chunks come from the resource's own shared path
//!   ([`ChunkSource`]) on rmm's side stream (never captured), inside
//!   [`RelaxedCaptureMode`], and the side stream is synchronised before the
//!   chunk is used: a pool growing with `cuMemAlloc`, a `cuMemAlloc` of the
//!   cuda resource and a `cuMemHostAlloc` are legal there and leave the
//!   capture intact. So the shared free lists, caches and their events
//!   never see a capturing stream.
//! * A free of private memory goes back to its private pool, never to the
//!   shared path. A free of shared memory on a stream that captures (as the
//!   capture registry knows it) is deferred into the capture's pool: the
//!   graph may still use it at every replay.
//! * A pool is tied to every graph captured into it
//!   ([`attach_lifetime`]); once no graph and no executable of it exists
//!   and no block of it is live, its chunks go back through the shared
//!   path and its deferred frees are done (waiting up to [`RELEASE_WAIT`]
//!   while any capture is registered: those frees may synchronise). That is
//!   checked lazily, in the user's thread (the next capturing allocation,
//!   free of private memory, report or drop of the resource); a background
//!   thread (every [`REAP_INTERVAL`]) only releases the pools of resources
//!   no user handle holds any more, because a release may synchronise the
//!   device and so fail a capture under way in another thread.
//! * While it holds pools, the graph memory keeps a handle to its resource
//!   (the chunk source). A resource whose last user handle is dropped while
//!   a graph still uses its memory is thereby kept: an error is logged, and
//!   the memory stays reserved until the graph is gone, then it is freed
//!   and the resource with it.
//! * Misuse: freeing one graph pool's memory on a stream that captures into
//!   another pool is logged and counted as a bad free, and the block stays.
//!
//! The no-capture cost: an allocation pays [`capture_of`]; a free pays the
//! registry's one atomic load and one more of the pool count. While pools
//! exist, a free outside the address range of their chunks pays two more
//! atomic loads; only a free inside it takes the graph memory's lock.
//!
//! # Locks
//! One mutex per graph memory (`state`), taken before the resource's own
//! locks (a chunk source's calls run under it) and before the capture
//! registry's (attaching a lifetime); never taken under a resource lock.
//! A resource's own `deallocate`, called back from a chunk source on the
//! same thread, takes its shared path without this lock (`IN_SOURCE`).
//! The reaper's list lock is a leaf.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

use super::live_set::log_bad_free;
use super::private_pool::{DeferredFree, ListKey, PrivatePool};
use super::stream_ordered::StreamKey;
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::{DeviceGuard, DeviceId};
use crate::error::{Error, Result};
use crate::graph::{
    attach_lifetime, capture_of, captures_registered, registered_capture_of, side_stream, ActiveCapture,
    GraphLifetime, GraphPoolId, RelaxedCaptureMode,
};
use crate::mr::{check_base_alignment, GraphMemoryStats, MemoryResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

thread_local! {
    /// Set while this thread calls a chunk source: the resource's own
    /// `deallocate` then takes its shared path (it is called back from
    /// inside the graph memory, whose lock is held).
    static IN_SOURCE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (a call of a chunk source) with [`IN_SOURCE`] set.
fn in_source<R>(f: impl FnOnce() -> R) -> R {
    let was = IN_SOURCE.with(|c| c.replace(true));
    let r = f();
    IN_SOURCE.with(|c| c.set(was));
    r
}

/// How often the background thread looks for pools whose graphs are gone.
pub(crate) const REAP_INTERVAL: Duration = Duration::from_millis(20);

/// How long a release waits while captures are registered: a free that
/// synchronises (`cuMemFree`, a resource's teardown) invalidates a capture
/// under way on the device in any thread (measured on NVIDIA GPUs by
/// ROCm's developers, rocm-systems PR 4508, 2026-04). Registry entries of
/// captures begun outside rmm can outlive them, hence the bound.
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Chunks of at least this many bytes are taken for small requests.
const SMALL_CHUNK: usize = 2 << 20;

/// The chunk a private pool takes for a request of `bytes`: 2 MiB for
/// requests up to 1 MiB, else the request rounded up to 2 MiB.
pub(crate) fn default_chunk_bytes(bytes: usize) -> Option<usize> {
    if bytes <= SMALL_CHUNK / 2 {
        Some(SMALL_CHUNK)
    } else {
        align_up(bytes, SMALL_CHUNK)
    }
}

/// Where a resource's private pools take chunks from and give them back:
/// the resource's own shared path (never its graph path). Implemented by a
/// clone of the resource, which the graph memory keeps while it holds pools.
pub(crate) trait ChunkSource: Send + Sync + 'static {
    /// A short name for messages.
    fn source_name(&self) -> &'static str;
    /// The chunk for a request of `bytes`; `None`: no chunk can serve it.
    fn chunk_bytes(&self, bytes: usize) -> Option<usize> {
        default_chunk_bytes(bytes)
    }
    /// Allocates `bytes`, 256-byte aligned, in `stream` order through the
    /// shared path.
    ///
    /// # Errors
    /// The resource's error.
    fn allocate_chunk(&self, bytes: usize, stream: CudaStreamView<'_>) -> Result<DevicePtr>;
    /// Frees memory of the shared path (a chunk, or a deferred free).
    ///
    /// # Safety
    /// `ptr` came from the shared path with `bytes` and `alignment`, and
    /// nothing uses it any more.
    unsafe fn deallocate_chunk(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
    );
    /// Handles to the resource alive now, the graph memory's own included;
    /// `usize::MAX` for resources that are never dropped (stateless ones).
    fn handles(&self) -> usize;
}

/// A resource whose private pools take chunks through its own
/// `MemoryResource` calls: made from inside the graph memory
/// (`IN_SOURCE`) on the side stream, which never captures, they take its
/// shared path.
pub(crate) trait OwnSharedPath: MemoryResource + Clone {
    /// A short name for messages.
    const NAME: &'static str;
    /// Handles to the resource alive now, the graph memory's own included.
    fn handles(&self) -> usize;
}

/// The [`ChunkSource`] of an [`OwnSharedPath`] resource: a handle to it.
pub(crate) struct OwnChunks<R>(pub(crate) R);

impl<R: OwnSharedPath> ChunkSource for OwnChunks<R> {
    fn source_name(&self) -> &'static str {
        R::NAME
    }
    fn allocate_chunk(&self, bytes: usize, stream: CudaStreamView<'_>) -> Result<DevicePtr> {
        self.0.allocate(bytes, CUDA_ALLOCATION_ALIGNMENT, stream)
    }
    unsafe fn deallocate_chunk(
        &self,
        ptr: DevicePtr,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
    ) {
        // SAFETY: forwarded contract; called from the graph memory, so the
        // free takes the shared path.
        unsafe { self.0.deallocate(ptr, bytes, alignment, stream) }
    }
    fn handles(&self) -> usize {
        self.0.handles()
    }
}

type PoolKey = (GraphPoolId, Option<DeviceId>);

#[derive(Debug)]
struct Entry {
    pool: PrivatePool<StreamKey>,
    lifetime: GraphLifetime,
    /// Capture ids whose graphs hold `lifetime`.
    attached: HashSet<u64>,
}

#[derive(Default)]
struct State {
    pools: HashMap<PoolKey, Entry>,
    /// Chunk start → (pool, size), for frees.
    chunks: BTreeMap<u64, (PoolKey, usize)>,
    /// A handle to the resource, kept while pools exist.
    source: Option<Arc<dyn ChunkSource>>,
    bad_frees: usize,
    /// The dropped-while-in-use error was logged.
    orphan_logged: bool,
    /// Since when releases wait for registered captures to end.
    waiting_since: Option<std::time::Instant>,
}

/// The graph-private pools of one resource (see the module docs).
pub(crate) struct GraphMemory {
    /// Pools held: the free path's fast check.
    pools: AtomicUsize,
    /// The lowest chunk address held since pools were last all gone
    /// (`u64::MAX`: none): frees below it take no lock.
    lowest: AtomicU64,
    /// The end of the highest chunk held since then: frees from it on
    /// take no lock.
    highest: AtomicU64,
    state: Mutex<State>,
}

impl std::fmt::Debug for GraphMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphMemory")
            .field("pools", &self.pools.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for GraphMemory {
    fn default() -> Self {
        GraphMemory {
            pools: AtomicUsize::new(0),
            lowest: AtomicU64::new(u64::MAX),
            highest: AtomicU64::new(0),
            state: Mutex::new(State::default()),
        }
    }
}

impl GraphMemory {
    /// An empty graph memory, shared with the background reaper.
    pub fn new() -> Arc<Self> {
        Arc::new(GraphMemory::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Serves `bytes` from the private pool of the capture `stream`
    /// belongs to; `Ok(None)` when it captures nothing (take the shared
    /// path). `source` makes the resource's chunk source, called once while
    /// pools exist.
    ///
    /// # Errors
    /// [`Error::Capture`] for an invalidated capture; the chunk source's or
    /// the driver's error when no chunk can be had.
    #[inline]
    pub fn allocate(
        self: &Arc<Self>,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
        source: impl FnOnce() -> Arc<dyn ChunkSource>,
    ) -> Result<Option<DevicePtr>> {
        if bytes == 0 {
            return Ok(None);
        }
        let Some(capture) = capture_of(stream)? else {
            return Ok(None);
        };
        self.allocate_captured(bytes, alignment, stream, capture, source)
    }

    /// [`Self::allocate`] on a stream that captures.
    #[cold]
    #[inline(never)]
    fn allocate_captured(
        self: &Arc<Self>,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
        capture: ActiveCapture,
        source: impl FnOnce() -> Arc<dyn ChunkSource>,
    ) -> Result<Option<DevicePtr>> {
        // Private blocks are 256-byte aligned, like every base resource's.
        check_base_alignment(alignment)?;
        let mut st = self.lock();
        let kept = self.release_unused(&mut st);
        let result = self.allocate_in(&mut st, bytes, stream, &capture, source);
        drop(st);
        drop(kept);
        result.map(Some)
    }

    fn allocate_in(
        self: &Arc<Self>,
        st: &mut State,
        bytes: usize,
        stream: CudaStreamView<'_>,
        capture: &ActiveCapture,
        source: impl FnOnce() -> Arc<dyn ChunkSource>,
    ) -> Result<DevicePtr> {
        let source = st.source.get_or_insert_with(source).clone();
        let key = (capture.pool, capture.device);
        let entry = self.entry(st, key, capture)?;
        let sk = StreamKey::of(stream);
        if let Some(a) = entry.pool.allocate(bytes, capture.id, sk) {
            return Ok(DevicePtr::new(a));
        }
        let chunk_bytes = source.chunk_bytes(bytes).ok_or_else(|| Error::OutOfMemory {
            requested: bytes,
            reason: format!(
                "{}: no chunk serves the request in a graph-private pool",
                source.source_name()
            ),
            report: None,
        })?;
        let chunk = acquire_chunk(&*source, chunk_bytes, capture.device)?;
        if !entry.pool.add_chunk(chunk.addr(), chunk_bytes, capture.id, sk) {
            // SAFETY: just allocated through the shared path, never used.
            unsafe {
                give_back(
                    &*source,
                    chunk.addr(),
                    chunk_bytes,
                    CUDA_ALLOCATION_ALIGNMENT,
                    capture.device,
                )
            };
            return Err(Error::BadAlloc(format!(
                "{}: chunk {chunk} overlaps memory a graph-private pool holds (internal error)",
                source.source_name()
            )));
        }
        st.chunks.insert(chunk.addr(), (key, chunk_bytes));
        self.lowest.fetch_min(chunk.addr(), Ordering::AcqRel);
        self.highest
            .fetch_max(chunk.addr() + chunk_bytes as u64, Ordering::AcqRel);
        log::debug!(
            "{}: graph-private pool {:?} took a {chunk_bytes}-byte chunk at {chunk} during capture {}",
            source.source_name(),
            capture.pool,
            capture.id
        );
        let entry = st.pools.get_mut(&key).expect("the entry was made above");
        entry
            .pool
            .allocate(bytes, capture.id, sk)
            .map(DevicePtr::new)
            .ok_or_else(|| Error::OutOfMemory {
                requested: bytes,
                reason: format!(
                    "{}: a fresh chunk does not hold the request",
                    source.source_name()
                ),
                report: None,
            })
    }

    /// The pool of `key`, made (and registered with the reaper) if new, and
    /// tied to `capture`'s graph.
    fn entry<'a>(
        self: &Arc<Self>,
        st: &'a mut State,
        key: PoolKey,
        capture: &ActiveCapture,
    ) -> Result<&'a mut Entry> {
        let fresh = !st.pools.contains_key(&key);
        let entry = st.pools.entry(key).or_insert_with(|| Entry {
            pool: PrivatePool::default(),
            lifetime: GraphLifetime::new(),
            attached: HashSet::new(),
        });
        if fresh && self.pools.fetch_add(1, Ordering::AcqRel) == 0 {
            reaper().watch(Arc::downgrade(self));
        }
        if !entry.attached.contains(&capture.id) {
            attach_lifetime(capture, &entry.lifetime)?;
            entry.attached.insert(capture.id);
        }
        Ok(entry)
    }

    /// [`Self::allocate`] for `owner`, a resource whose private pools take
    /// their chunks through its own shared path ([`OwnChunks`]); `Ok(None)`
    /// for simulated memory, which no capture can use.
    ///
    /// # Errors
    /// As [`Self::allocate`].
    #[inline]
    pub fn allocate_own<R: OwnSharedPath>(
        self: &Arc<Self>,
        owner: &R,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
    ) -> Result<Option<DevicePtr>> {
        if owner.is_simulated() {
            return Ok(None);
        }
        self.allocate(bytes, alignment, stream, || Arc::new(OwnChunks(owner.clone())))
    }

    /// [`Self::deallocate`] for `owner` (see [`Self::allocate_own`]).
    #[inline]
    pub fn deallocate_own<R: OwnSharedPath>(
        self: &Arc<Self>,
        owner: &R,
        ptr: DevicePtr,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
    ) -> bool {
        self.deallocate(ptr, bytes, alignment, stream, || {
            Arc::new(OwnChunks(owner.clone()))
        })
    }

    /// Takes a free that belongs to the graph memory: private memory, or
    /// any free on a registered capturing stream (deferred). False: not
    /// ours, take the shared path.
    #[inline]
    pub fn deallocate(
        self: &Arc<Self>,
        ptr: DevicePtr,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
        source: impl FnOnce() -> Arc<dyn ChunkSource>,
    ) -> bool {
        // The common case in two atomic loads: no capture registered and no
        // private pool, so the free is the shared path's.
        if ptr.is_null() || (!captures_registered() && self.pools.load(Ordering::Acquire) == 0) {
            return false;
        }
        self.deallocate_slow(ptr, bytes, alignment, stream, source)
    }

    /// [`Self::deallocate`] while captures are registered or pools exist.
    #[cold]
    #[inline(never)]
    fn deallocate_slow(
        self: &Arc<Self>,
        ptr: DevicePtr,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
        source: impl FnOnce() -> Arc<dyn ChunkSource>,
    ) -> bool {
        let capture = registered_capture_of(stream);
        if capture.is_none() {
            let addr = ptr.addr();
            if self.pools.load(Ordering::Acquire) == 0
                || addr < self.lowest.load(Ordering::Acquire)
                || addr >= self.highest.load(Ordering::Acquire)
            {
                return false;
            }
        }
        if IN_SOURCE.with(|c| c.get()) {
            return false;
        }
        let mut st = self.lock();
        let handled = self.deallocate_in(&mut st, ptr.addr(), bytes, alignment, stream, capture, source);
        let kept = self.release_unused(&mut st);
        drop(st);
        drop(kept);
        handled
    }

    #[allow(clippy::too_many_arguments)]
    fn deallocate_in(
        self: &Arc<Self>,
        st: &mut State,
        addr: u64,
        bytes: usize,
        alignment: usize,
        stream: CudaStreamView<'_>,
        capture: Option<ActiveCapture>,
        source: impl FnOnce() -> Arc<dyn ChunkSource>,
    ) -> bool {
        let owner = st
            .chunks
            .range(..=addr)
            .next_back()
            .filter(|(&s, &(_, n))| addr < s + n as u64)
            .map(|(_, &(k, _))| k);
        let name = st.source.as_ref().map_or("graph memory", |s| s.source_name());
        if let Some(key) = owner {
            let list = match &capture {
                None => ListKey::Idle,
                Some(c) if (c.pool, c.device) == key => ListKey::Captured {
                    capture: c.id,
                    stream: StreamKey::of(stream),
                },
                Some(c) => {
                    st.bad_frees += 1;
                    log::error!(
                        "{name}: free of {addr:#x} ({bytes} bytes), memory of graph pool {:?}, on stream {:#x} \
                         that captures into graph pool {:?}; ignored (the block stays with its graph)",
                        key.0,
                        stream.as_raw(),
                        c.pool
                    );
                    return true;
                }
            };
            if let Some(entry) = st.pools.get_mut(&key) {
                if let Err(bad) = entry.pool.free(addr, bytes, list) {
                    st.bad_frees += 1;
                    log_bad_free(name, addr, bytes, bad);
                }
            }
            return true;
        }
        let Some(capture) = capture else {
            return false;
        };
        st.source.get_or_insert_with(source);
        match self.entry(st, (capture.pool, capture.device), &capture) {
            Ok(entry) => entry.pool.defer(DeferredFree {
                addr,
                bytes,
                alignment,
            }),
            Err(e) => {
                // Without a tie to the graph the memory could be reused while
                // the graph still uses it: keep it for good.
                log::error!(
                    "{name}: free of {addr:#x} ({bytes} bytes) during capture {} could not be tied to the graph \
                     ({e}); the memory is kept and never reused",
                    capture.id
                );
            }
        }
        true
    }

    /// What the graph memory holds now (after releasing what it can).
    pub fn stats(&self) -> GraphMemoryStats {
        let mut st = self.lock();
        let kept = self.release_unused(&mut st);
        let mut s = GraphMemoryStats {
            bad_frees: st.bad_frees,
            ..GraphMemoryStats::default()
        };
        for e in st.pools.values() {
            s.pools += 1;
            s.reserved_bytes += e.pool.reserved_bytes();
            s.live_bytes += e.pool.live_bytes();
            s.deferred_frees += e.pool.deferred_count();
            s.graphs_alive += usize::from(e.lifetime.alive());
        }
        drop(st);
        drop(kept);
        s
    }

    /// Releases every pool whose graphs are gone and which holds no live
    /// block (any live block, when the resource has no other handle left).
    /// Returns the resource handle once no pool is left, for the caller to
    /// drop after unlocking (dropping it may drop the resource).
    fn release_unused(&self, st: &mut State) -> Option<Arc<dyn ChunkSource>> {
        let source = st.source.clone()?;
        let orphaned = source.handles() <= 1; // the one inside the kept source
        let done: Vec<PoolKey> = st
            .pools
            .iter()
            .filter(|(_, e)| !e.lifetime.alive() && (orphaned || e.pool.is_idle()))
            .map(|(k, _)| *k)
            .collect();
        if !done.is_empty() && captures_registered() {
            let since = *st.waiting_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() < RELEASE_WAIT {
                return None;
            }
        }
        st.waiting_since = None;
        if orphaned && done.len() < st.pools.len() && !st.orphan_logged {
            st.orphan_logged = true;
            log::error!(
                "{}: dropped while a CUDA graph still uses its memory; the memory stays reserved until every \
                 such graph and executable graph is destroyed, then it is freed",
                source.source_name()
            );
        }
        for key in done {
            let Some(mut entry) = st.pools.remove(&key) else {
                continue;
            };
            let released = entry.pool.release();
            if released.leaked_blocks > 0 {
                log::warn!(
                    "{}: {} graph-private block(s) were never freed; their memory is released with the resource",
                    source.source_name(),
                    released.leaked_blocks
                );
            }
            for &(addr, size) in &released.chunks {
                st.chunks.remove(&addr);
                // SAFETY: the chunk came from the shared path with these
                // arguments; its graphs are gone and no block of it is live.
                unsafe { give_back(&*source, addr, size, CUDA_ALLOCATION_ALIGNMENT, key.1) };
            }
            for d in released.deferred {
                // SAFETY: freed by its user on a capturing stream with these
                // arguments; the graphs that used it are gone.
                unsafe { give_back(&*source, d.addr, d.bytes, d.alignment, key.1) };
            }
            self.pools.fetch_sub(1, Ordering::AcqRel);
        }
        if st.pools.is_empty() {
            st.orphan_logged = false;
            self.lowest.store(u64::MAX, Ordering::Release);
            self.highest.store(0, Ordering::Release);
            st.source.take()
        } else {
            None
        }
    }

    /// True while any private pool exists.
    pub fn holds_pools(&self) -> bool {
        self.pools.load(Ordering::Acquire) > 0
    }

    /// One pass of the reaper; false once no pool is left. The reaper only
    /// releases the pools of resources no user handle holds any more: a
    /// release may free with `cuMemFree`, which synchronises the device and
    /// so fails a capture under way in any thread, also one rmm has not seen
    /// yet (a CuPy capture before its first allocation, broken by the
    /// reaper's free of an earlier graph's chunks on the H200, 2026-12-02).
    /// Resources still held release on their own calls, in their users'
    /// threads.
    fn reap(&self) -> bool {
        let mut st = self.lock();
        if st.source.as_ref().is_none_or(|s| s.handles() > 1) {
            return self.holds_pools();
        }
        let kept = self.release_unused(&mut st);
        drop(st);
        drop(kept);
        self.holds_pools()
    }
}

/// A chunk of `bytes` from `source` for a capture on `device`: on the side
/// stream, inside relaxed capture mode, waited for before use.
fn acquire_chunk(source: &dyn ChunkSource, bytes: usize, device: Option<DeviceId>) -> Result<DevicePtr> {
    let _relaxed = RelaxedCaptureMode::enter()?;
    let _device = device.map(DeviceGuard::new).transpose()?;
    let side = side_stream(device)?;
    let p = in_source(|| source.allocate_chunk(bytes, side))?;
    let ready = if p.is_aligned(CUDA_ALLOCATION_ALIGNMENT) && !p.is_null() {
        side.synchronize()
    } else {
        Err(Error::BadAlloc(format!(
            "{}: chunk {p} for a graph-private pool is not 256-byte aligned",
            source.source_name()
        )))
    };
    if let Err(e) = ready {
        // SAFETY: just allocated with these arguments; never used.
        in_source(|| unsafe { source.deallocate_chunk(p, bytes, CUDA_ALLOCATION_ALIGNMENT, side) });
        return Err(e);
    }
    Ok(p)
}

/// Frees shared-path memory on the side stream inside relaxed capture mode
/// (logged, never raised: it runs from frees, reports and the reaper).
///
/// # Safety
/// As [`ChunkSource::deallocate_chunk`].
unsafe fn give_back(
    source: &dyn ChunkSource,
    addr: u64,
    bytes: usize,
    alignment: usize,
    device: Option<DeviceId>,
) {
    let relaxed = RelaxedCaptureMode::enter();
    if let Err(e) = &relaxed {
        log::error!(
            "{}: relaxed capture mode unavailable ({e}); freeing anyway",
            source.source_name()
        );
    }
    let _device = device.and_then(|d| DeviceGuard::new(d).ok());
    let stream = match side_stream(device) {
        Ok(s) => s,
        Err(e) => {
            log::error!(
                "{}: no side stream ({e}); freeing on the default stream",
                source.source_name()
            );
            CudaStreamView::DEFAULT
        }
    };
    // SAFETY: the caller's contract.
    in_source(|| unsafe { source.deallocate_chunk(DevicePtr::new(addr), bytes, alignment, stream) });
}

/// The background thread that releases pools whose graphs are gone, also
/// of resources nobody calls any more.
struct Reaper {
    watched: Mutex<Vec<Weak<GraphMemory>>>,
    wake: Condvar,
}

fn reaper() -> &'static Reaper {
    static REAPER: OnceLock<Reaper> = OnceLock::new();
    REAPER.get_or_init(|| {
        let spawned = std::thread::Builder::new()
            .name("rmm-graph-reaper".into())
            .spawn(|| reaper().run());
        if let Err(e) = spawned {
            log::error!(
                "graph memory: reaper thread not started ({e}); pools are released on later calls only"
            );
        }
        Reaper {
            watched: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        }
    })
}

impl Reaper {
    fn watch(&self, gm: Weak<GraphMemory>) {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).push(gm);
        self.wake.notify_one();
    }

    fn run(&self) {
        loop {
            let list: Vec<Weak<GraphMemory>> = {
                let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
                while w.is_empty() {
                    w = self.wake.wait(w).unwrap_or_else(|e| e.into_inner());
                }
                w.clone()
            };
            std::thread::sleep(REAP_INTERVAL);
            let done: Vec<Weak<GraphMemory>> = list
                .into_iter()
                .filter(|gm| gm.upgrade().is_none_or(|gm| !gm.reap()))
                .collect();
            let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
            w.retain(|gm| {
                !done.iter().any(|d| d.ptr_eq(gm)) || gm.upgrade().is_some_and(|g| g.holds_pools())
            });
        }
    }
}

/// The graph memory shared by every instance of a stateless resource kind
/// (its instances compare equal, so memory from one may be freed through
/// another): made at the first use of `cell`, never dropped.
pub(crate) fn of_kind(cell: &'static OnceLock<Arc<GraphMemory>>) -> &'static Arc<GraphMemory> {
    cell.get_or_init(GraphMemory::new)
}
