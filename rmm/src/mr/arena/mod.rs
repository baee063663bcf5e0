//! [`ArenaMemoryResource`]: a global arena split into per-thread and
//! per-stream arenas of superblocks.

use crate::mr::forensics::{reported, Chunk, LayerState};
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::detail::arena_book::{ArenaBook, Freed, GlobalBook};
use super::detail::graph_memory::{GraphMemory, OwnSharedPath};
use super::detail::live_set::{log_bad_free, BadFree, LiveMap};
use super::detail::spin_lock::{SpinGuard, SpinLock};
use super::detail::stream_ordered::StreamKey;
use super::{check_base_alignment, GraphMemoryStats, MemoryResource, SharedResource};
use crate::align::{align_down, align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::{ensure_current, DeviceId};
use crate::error::{Error, Result};
use crate::nvtx;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

// The `MemoryResource` face of the arena (allocate, free, reports).
mod resource;

const MIB: usize = 1 << 20;
/// Requests above this go to the global arena directly.
const LARGE: usize = MIB;
/// The smallest superblock.
const MIN_SUPERBLOCK: usize = MIB;

/// Options of [`ArenaMemoryResource`].
///
/// ```
/// use rmm::mr::ArenaOptions;
/// let o = ArenaOptions::default().arena_size(1 << 30).superblock_size(8 << 20);
/// assert_eq!((o.arena_size, o.superblock_size), (Some(1 << 30), 8 << 20));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArenaOptions {
    /// Size of the one upstream allocation (rounded down to 256, at least
    /// 1 MiB); `None`: half of the device's free memory (required over a
    /// simulated upstream).
    pub arena_size: Option<usize>,
    /// Superblock size for small requests (at least 1 MiB, a multiple of
    /// 256; default 4 MiB).
    pub superblock_size: usize,
    /// Trust frees instead of checking them against the live allocations
    /// (default `false`: checked). Unchecked, a double free, a fake pointer
    /// or a wrong size can hand memory out twice; only for measured hot
    /// paths with trusted callers.
    pub unchecked_frees: bool,
}

impl Default for ArenaOptions {
    fn default() -> Self {
        ArenaOptions {
            arena_size: None,
            superblock_size: 4 * MIB,
            unchecked_frees: false,
        }
    }
}

impl ArenaOptions {
    /// Sets [`arena_size`](Self::arena_size).
    pub fn arena_size(mut self, bytes: usize) -> Self {
        self.arena_size = Some(bytes);
        self
    }
    /// Sets [`superblock_size`](Self::superblock_size).
    pub fn superblock_size(mut self, bytes: usize) -> Self {
        self.superblock_size = bytes;
        self
    }
    /// Sets [`unchecked_frees`](Self::unchecked_frees).
    pub fn unchecked_frees(mut self, unchecked: bool) -> Self {
        self.unchecked_frees = unchecked;
        self
    }
}

#[derive(Debug)]
struct Arena {
    id: usize,
    book: SpinLock<ArenaBooks>,
}

/// What an arena's lock guards: its superblocks and free blocks, and the
/// live allocations made on its stream (address to requested bytes, when
/// frees are checked), so that an allocation or a free on the arena's own
/// stream, checked, takes one lock.
#[derive(Debug)]
struct ArenaBooks {
    book: ArenaBook,
    live: LiveMap,
}

impl std::ops::Deref for ArenaBooks {
    type Target = ArenaBook;
    fn deref(&self) -> &ArenaBook {
        &self.book
    }
}

impl std::ops::DerefMut for ArenaBooks {
    fn deref_mut(&mut self) -> &mut ArenaBook {
        &mut self.book
    }
}

#[derive(Debug, Default)]
struct Arenas {
    by_key: HashMap<StreamKey, Arc<Arena>>,
    all: Vec<Arc<Arena>>,
}

/// Source of [`ArenaInner::uid`]: never reused, so stale cache entries never match.
static NEXT_UID: AtomicUsize = AtomicUsize::new(1);
const ARENA_CACHE_ENTRIES: usize = 8;

thread_local! {
    /// Recently used arenas of this thread: (resource uid, stream, arena).
    static ARENA_CACHE: RefCell<Vec<(usize, StreamKey, Arc<Arena>)>> = const { RefCell::new(Vec::new()) };
}

struct ArenaInner<U: MemoryResource> {
    uid: usize,
    upstream: U,
    base: DevicePtr,
    size: usize,
    superblock: usize,
    global: Mutex<GlobalBook>,
    /// One defragmentation at a time, held across its device
    /// synchronisation (and so outermost of the arena's locks): a second
    /// out-of-memory retry waits for the first to return the drained blocks
    /// instead of failing while they are in flight. Allocations and frees
    /// never take it.
    defragmenting: Mutex<()>,
    arenas: RwLock<Arenas>,
    /// Frees are checked against the arenas' live records.
    checked: bool,
    /// Frees refused so far.
    bad_frees: AtomicUsize,
    simulated: bool,
    device: Option<DeviceId>,
    device_accessible: bool,
    host_accessible: bool,
    /// The global arena as an NVTX heap, while a tool takes annotations
    /// ([`crate::nvtx`]): each allocation is a region of its requested size.
    heap: Option<nvtx::Chunk>,
}

impl<U: MemoryResource> Drop for ArenaInner<U> {
    fn drop(&mut self) {
        // The heap goes before its memory does.
        drop(self.heap.take());
        let _device = super::detail::quiesce_device(
            "ArenaMemoryResource",
            "before release",
            self.device,
            self.simulated,
        );
        // SAFETY: the arena came from `upstream.allocate(size, 256, _)`; the
        // resource is gone, so no block of it is in use.
        unsafe {
            self.upstream.deallocate(
                self.base,
                self.size,
                CUDA_ALLOCATION_ALIGNMENT,
                CudaStreamView::DEFAULT,
            )
        };
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// RMM's `arena_memory_resource`: one upstream allocation (the global
/// arena) from which each stream, and each thread on the per-thread default
/// stream, takes superblocks for its own arena.
///
/// * Requests up to 1 MiB are served from the caller's arena (best fit over
///   its superblocks, one lock per arena, so threads on different streams do
///   not contend); requests above 1 MiB come from large blocks freed earlier
///   on the same stream, else from the global arena.
/// * Frees of small blocks go back to their arena without synchronisation;
///   a free into another stream's arena first synchronises the freeing
///   stream. Large blocks are kept by the freeing stream's arena (RMM
///   instead synchronises the stream and returns them to the global arena).
/// * An arena keeps one empty superblock and returns further empty ones.
/// * When memory runs out, the device is synchronised, every arena returns
///   all its superblocks and large blocks to the global arena and the
///   request is tried once more; then [`Error::OutOfMemory`] with the
///   arena's sizes.
///
/// Sizes are rounded up to 256; alignments up to 256 are served. Thread
/// safety: every method may be called from any thread; clones share state.
///
/// ```
/// use rmm::mr::{ArenaMemoryResource, ArenaOptions, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SimulatedMemoryResource::new(1 << 30);
/// let arena = ArenaMemoryResource::new(sim.clone(), ArenaOptions::default().arena_size(64 << 20))?;
/// let p = arena.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// unsafe { arena.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
/// assert_eq!(sim.allocated_bytes(), 64 << 20);
/// # Ok::<(), rmm::Error>(())
/// ```
///
/// ```no_run
/// use rmm::mr::{ArenaMemoryResource, ArenaOptions, CudaMemoryResource, MemoryResource};
/// let arena = ArenaMemoryResource::new(CudaMemoryResource::new(), ArenaOptions::default())?;
/// let p = arena.allocate(4096, 256, rmm::CudaStreamView::PER_THREAD)?;
/// unsafe { arena.deallocate(p, 4096, 256, rmm::CudaStreamView::PER_THREAD) };
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct ArenaMemoryResource<U: MemoryResource = SharedResource> {
    inner: Arc<ArenaInner<U>>,
    /// The graph-private pools, in front of the arenas.
    graph: Arc<GraphMemory>,
}

impl<U: MemoryResource> Clone for ArenaMemoryResource<U> {
    fn clone(&self) -> Self {
        ArenaMemoryResource {
            inner: self.inner.clone(),
            graph: self.graph.clone(),
        }
    }
}

impl<U: MemoryResource> fmt::Debug for ArenaMemoryResource<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArenaMemoryResource")
            .field("base", &self.inner.base)
            .field("size", &self.inner.size)
            .field("upstream", &self.inner.upstream)
            .finish()
    }
}

impl<U: MemoryResource> ArenaMemoryResource<U> {
    /// An arena over `upstream`; allocates the global arena now.
    ///
    /// # Errors
    /// [`Error::Logic`] when the arena is smaller than 1 MiB, the superblock
    /// size is below 1 MiB or not a multiple of 256, or no size is given over
    /// a simulated upstream; the upstream's error when the allocation fails.
    pub fn new(upstream: U, options: ArenaOptions) -> Result<Self> {
        let simulated = upstream.is_simulated();
        if options.superblock_size < MIN_SUPERBLOCK
            || !options.superblock_size.is_multiple_of(CUDA_ALLOCATION_ALIGNMENT)
        {
            return Err(Error::Logic(format!(
                "ArenaMemoryResource: superblock size {} must be a multiple of 256 of at least 1 MiB",
                options.superblock_size
            )));
        }
        let size = match options.arena_size {
            Some(s) => align_down(s, CUDA_ALLOCATION_ALIGNMENT),
            None if simulated => {
                return Err(Error::Logic(
                    "ArenaMemoryResource: arena_size is required over a simulated upstream".into(),
                ))
            }
            None => crate::device::percent_of_free_device_memory(50)?,
        };
        if size < MIB {
            return Err(Error::Logic(format!(
                "ArenaMemoryResource: arena size {size} is smaller than 1 MiB"
            )));
        }
        let device = super::detail::bound_device(&upstream)?;
        let base = upstream.allocate(size, CUDA_ALLOCATION_ALIGNMENT, CudaStreamView::DEFAULT)?;
        let sync = if simulated {
            Ok(())
        } else {
            CudaStreamView::DEFAULT.synchronize()
        };
        if let Err(e) = sync.and_then(|_| {
            if base.is_aligned(CUDA_ALLOCATION_ALIGNMENT) && !base.is_null() {
                Ok(())
            } else {
                Err(Error::BadAlloc(format!(
                    "ArenaMemoryResource: upstream returned {base}, not 256-byte aligned"
                )))
            }
        }) {
            // SAFETY: just allocated with these arguments, never used.
            unsafe { upstream.deallocate(base, size, CUDA_ALLOCATION_ALIGNMENT, CudaStreamView::DEFAULT) };
            return Err(e);
        }
        Ok(ArenaMemoryResource {
            inner: Arc::new(ArenaInner {
                uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
                device,
                device_accessible: upstream.is_device_accessible(),
                host_accessible: upstream.is_host_accessible(),
                upstream,
                base,
                size,
                superblock: options.superblock_size,
                global: Mutex::new(GlobalBook::new(base.addr(), size)),
                defragmenting: Mutex::new(()),
                arenas: RwLock::new(Arenas::default()),
                checked: !options.unchecked_frees,
                bad_frees: AtomicUsize::new(0),
                simulated,
                heap: if nvtx::annotates(simulated) {
                    nvtx::Chunk::claim(base.addr(), size)
                } else {
                    None
                },
            }),
            graph: GraphMemory::new(),
        })
    }

    /// Frees refused so far: double frees, foreign, never-allocated or
    /// interior pointers, wrong sizes (each logged at error level).
    pub fn bad_frees(&self) -> usize {
        self.inner.bad_frees.load(Ordering::Relaxed)
    }

    /// Records an allocation made outside `arena`'s lock (from the global
    /// arena) in `arena`'s live record.
    fn record(&self, arena: &Arena, addr: u64, bytes: usize) {
        if self.inner.checked {
            self.record_in(&mut arena.book.lock(), addr, bytes);
        }
    }

    /// Records an allocation in a live record whose lock the caller holds.
    #[inline]
    fn record_in(&self, books: &mut ArenaBooks, addr: u64, bytes: usize) {
        if self.inner.checked && !books.live.insert(addr, bytes) {
            log::error!(
                "ArenaMemoryResource: handed out {addr:#x} ({bytes} bytes) while it is live (internal error)"
            );
        }
    }

    /// Removes a live allocation of an arena other than `own` (a block
    /// allocated on another stream). A free that names no live allocation
    /// or a wrong size is logged, counted and refused (false).
    fn forget_elsewhere(&self, own: &Arena, addr: u64, bytes: usize) -> bool {
        let found = self
            .all_arenas()
            .iter()
            .filter(|a| a.id != own.id)
            .map(|a| a.book.lock().live.remove(addr, bytes))
            .find(|r| *r != Err(BadFree::NotLive))
            .unwrap_or(Err(BadFree::NotLive));
        match found {
            Ok(()) => true,
            Err(bad) => {
                self.refuse(addr, bytes, bad);
                false
            }
        }
    }

    fn refuse(&self, addr: u64, bytes: usize, bad: BadFree) {
        self.inner.bad_frees.fetch_add(1, Ordering::Relaxed);
        log_bad_free("ArenaMemoryResource", addr, bytes, bad);
    }

    /// Size of the global arena (the one upstream allocation).
    pub fn arena_size(&self) -> usize {
        self.inner.size
    }

    /// Free bytes: in the global arena and in every arena's superblocks.
    pub fn free_bytes(&self) -> usize {
        let all = self.all_arenas();
        let arenas: usize = all.iter().map(|a| a.book.lock().free_bytes()).sum();
        lock(&self.inner.global).free_bytes() + arenas
    }

    /// Superblocks held by the per-stream and per-thread arenas.
    pub fn superblocks_held(&self) -> usize {
        self.all_arenas()
            .iter()
            .map(|a| a.book.lock().superblock_count())
            .sum()
    }

    /// Free bytes in the global arena and its largest free range.
    pub fn global_free(&self) -> (usize, usize) {
        let g = lock(&self.inner.global);
        (g.free_bytes(), g.largest_free())
    }

    /// Returns every arena's superblocks to the global arena after
    /// synchronising the device (what an out-of-memory retry does).
    pub fn defragment(&self) {
        let _one_at_a_time = lock(&self.inner.defragmenting);
        // Under the locks: take every arena's free blocks and superblocks
        // (nothing can hand the drained blocks out any more) and disown the
        // superblocks, so later frees of their live blocks go to the global
        // arena.
        let drained: Vec<(u64, usize)> = {
            let all = self.all_arenas();
            let mut g = lock(&self.inner.global);
            let mut drained = Vec::new();
            for a in &all {
                let (free, superblocks) = a.book.lock().drain();
                for (s, _) in superblocks {
                    g.disown(s);
                }
                drained.extend(free);
            }
            drained
        };
        // Without any lock of ours: wait for every use of the drained blocks
        // (they were freed in their own streams' order), so that other
        // threads' allocations and frees go on during the synchronisation.
        let _device = super::detail::quiesce_device(
            "ArenaMemoryResource",
            "for defragmentation",
            self.inner.device,
            self.inner.simulated,
        );
        let mut g = lock(&self.inner.global);
        for (f, n) in drained {
            if !g.free(f, n) {
                log::error!("ArenaMemoryResource: defragmentation found overlapping block {f:#x}+{n}");
            }
        }
    }

    fn all_arenas(&self) -> Vec<Arc<Arena>> {
        self.inner
            .arenas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .all
            .clone()
    }

    /// Runs `f` on the arena of `stream` (per thread for the per-thread
    /// default stream). A small per-thread cache finds it without a shared
    /// lock, and `f` borrows the cached arena instead of cloning its `Arc`
    /// (two atomic operations per call saved on the hot path).
    #[inline]
    fn with_arena<R>(&self, stream: CudaStreamView, f: impl FnOnce(&Arena) -> R) -> R {
        let key = StreamKey::of(stream);
        let uid = self.inner.uid;
        let mut f = Some(f);
        // A shared borrow, so a nested call (another arena resource used
        // inside `f`) can read the cache too.
        let hit = ARENA_CACHE
            .try_with(|c| {
                let c = c.try_borrow().ok()?;
                let (_, _, a) = c.iter().find(|(u, k, _)| *u == uid && *k == key)?;
                f.take().map(|f| f(a))
            })
            .ok()
            .flatten();
        if let Some(r) = hit {
            return r;
        }
        let a = self.arena_lookup(key);
        let _ = ARENA_CACHE.try_with(|c| {
            // Busy only when a caller up the stack holds the cache; then
            // this arena is simply not cached.
            if let Ok(mut c) = c.try_borrow_mut() {
                if c.len() >= ARENA_CACHE_ENTRIES {
                    c.remove(0);
                }
                c.push((uid, key, a.clone()));
            }
        });
        let f = f.expect("the arena closure runs once");
        f(&a)
    }

    fn arena_lookup(&self, key: StreamKey) -> Arc<Arena> {
        if let Some(a) = self
            .inner
            .arenas
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .by_key
            .get(&key)
        {
            return a.clone();
        }
        let mut w = self.inner.arenas.write().unwrap_or_else(|e| e.into_inner());
        let id = w.all.len();
        let a = w
            .by_key
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Arena {
                    id,
                    book: SpinLock::new(ArenaBooks {
                        book: ArenaBook::new(1, self.inner.superblock),
                        live: LiveMap::default(),
                    }),
                })
            })
            .clone();
        if a.id == id {
            w.all.push(a.clone());
        }
        a
    }

    /// Allocates `size` bytes (a request of `bytes`) for `stream` and
    /// records it as live.
    #[inline]
    fn try_allocate(&self, size: usize, bytes: usize, stream: CudaStreamView) -> Option<u64> {
        self.with_arena(stream, |arena| {
            if size > LARGE {
                {
                    let mut b = arena.book.lock();
                    if let Some(a) = b.take_large(size) {
                        self.record_in(&mut b, a, bytes);
                        return Some(a);
                    }
                }
                let a = lock(&self.inner.global).allocate(size)?;
                self.record(arena, a, bytes);
                return Some(a);
            }
            {
                let mut b = arena.book.lock();
                // The block this stream freed last, when it has this size.
                // It is not live anywhere (`take_stash` says why), so its
                // record, when frees are checked, skips the duplicate check
                // and the hash table, and so does its free if it comes
                // before the next such record.
                if let Some(a) = b.take_stash(size) {
                    if self.inner.checked {
                        b.live.insert_unique(a, bytes);
                    }
                    return Some(a);
                }
                if let Some(a) = b.allocate(size) {
                    self.record_in(&mut b, a, bytes);
                    return Some(a);
                }
            }
            let mut g = lock(&self.inner.global);
            let want = self.inner.superblock.max(size);
            let fallback = MIN_SUPERBLOCK.max(size);
            let got = g
                .acquire(want, arena.id)
                .map(|s| (s, want))
                .or_else(|| g.acquire(fallback, arena.id).map(|s| (s, fallback)));
            match got {
                Some((s, n)) => {
                    // Lock order: global, then an arena.
                    let mut b = arena.book.lock();
                    b.add_superblock(s, n);
                    let a = b.allocate(size)?;
                    self.record_in(&mut b, a, bytes);
                    Some(a)
                }
                None => {
                    let a = g.allocate(size)?;
                    // Lock order: global, then an arena.
                    self.record(arena, a, bytes);
                    Some(a)
                }
            }
        })
    }

    /// `addr` as the pointer handed out, registered as an NVTX region of
    /// `bytes` when the arena annotates.
    #[inline]
    fn annotated(&self, addr: u64, bytes: usize) -> DevicePtr {
        if let Some(heap) = &self.inner.heap {
            heap.register_region(addr, bytes);
        }
        DevicePtr::new(addr)
    }

    fn sync_stream(&self, stream: CudaStreamView) {
        if !self.inner.simulated {
            stream.synchronize_no_throw();
        }
    }

    fn out_of_memory(&self, bytes: usize) -> Error {
        let g = lock(&self.inner.global);
        Error::OutOfMemory {
            requested: bytes,
            reason: format!(
                "ArenaMemoryResource: no room in arena (arena size {}, free {}, largest free block {})",
                g.size(),
                g.free_bytes(),
                g.largest_free()
            ),
            report: None,
        }
    }
    /// The rounded size of a free of `bytes` at `ptr`, or `None` (logged)
    /// when the block does not lie inside the arena.
    #[inline]
    fn size_in_arena(&self, ptr: DevicePtr, bytes: usize) -> Option<usize> {
        let base = self.inner.base.addr();
        let end = base + self.inner.size as u64;
        match align_up(bytes, CUDA_ALLOCATION_ALIGNMENT) {
            Some(s) if ptr.addr() >= base && ptr.addr().checked_add(s as u64).is_some_and(|e| e <= end) => {
                Some(s)
            }
            _ => {
                log::error!("ArenaMemoryResource: free of {ptr} ({bytes} bytes) outside the arena; ignored");
                None
            }
        }
    }

    /// Frees a block of `size` bytes at `ptr` in the freeing stream's own
    /// arena, whose `book` the caller holds (`b`, released here, before any
    /// other lock). True when that arena does not own the block, so that it
    /// goes to [`Self::free_in_other_arena`].
    #[inline]
    fn free_in_own_arena(
        &self,
        mut b: SpinGuard<'_, ArenaBooks>,
        ptr: DevicePtr,
        bytes: usize,
        size: usize,
    ) -> bool {
        let addr = ptr.addr();
        if size > LARGE {
            // Kept for this stream (reuse in its order needs no sync); other
            // streams get it after a defragmentation.
            if !b.put_large(addr, size) {
                log::error!(
                    "ArenaMemoryResource: free of {ptr} ({bytes} bytes) overlaps free memory; ignored"
                );
            }
            return false;
        }
        // Checked, the block is live (its record was just removed);
        // unchecked, the caller vouches for it. Either way the book may
        // stash it for the next allocation of its size.
        let outcome = b.free_live(addr, size);
        drop(b);
        match outcome {
            Freed::Kept => {}
            Freed::Release(s, n) => {
                let mut g = lock(&self.inner.global);
                g.disown(s);
                g.free(s, n);
            }
            Freed::Overlap => {
                log::error!(
                    "ArenaMemoryResource: free of {ptr} ({bytes} bytes) overlaps free memory; ignored"
                );
            }
            Freed::StashedOverlap(a, n) => {
                log::error!(
                    "ArenaMemoryResource: {a:#x} ({n} bytes), freed earlier on this stream, overlaps free memory (double free?); dropped"
                );
            }
            Freed::NotOwned => return true,
        }
        false
    }

    /// The cross-arena free: a block of `size` bytes at `ptr` that the
    /// freeing stream's arena does not own belongs to another arena or to
    /// the global arena. The freeing stream is synchronised first (the
    /// owner may hand the block out on its own stream at once), then
    /// `global` is taken and, under it, the owning arena's `book` (lock
    /// order: global, then an arena); no lock is held on entry.
    fn free_in_other_arena(&self, ptr: DevicePtr, bytes: usize, size: usize, stream: CudaStreamView) {
        let addr = ptr.addr();
        self.sync_stream(stream);
        let mut g = lock(&self.inner.global);
        match g.owner_of(addr) {
            Some(id) => {
                let Some(owner) = self.all_arenas().get(id).cloned() else {
                    log::error!("ArenaMemoryResource: arena {id} of {ptr} is unknown; block leaked");
                    return;
                };
                let outcome = owner.book.lock().free(addr, size);
                match outcome {
                    Freed::Kept => {}
                    Freed::Release(s, n) => {
                        g.disown(s);
                        g.free(s, n);
                    }
                    Freed::Overlap | Freed::StashedOverlap(..) | Freed::NotOwned => {
                        log::error!(
                            "ArenaMemoryResource: free of {ptr} ({bytes} bytes) does not match its arena; ignored"
                        );
                    }
                }
            }
            None => {
                if !g.free(addr, size) {
                    log::error!(
                        "ArenaMemoryResource: free of {ptr} ({bytes} bytes) overlaps free memory; ignored"
                    );
                }
            }
        }
    }
}
