//! [`BinningMemoryResource`]: requests routed by size to bins.

use crate::mr::forensics::{reported, LayerState};
use std::fmt;
use std::sync::Arc;

use super::detail::graph_memory::{GraphMemory, OwnSharedPath};
use super::detail::live_set::{BadFree, LiveSet};
use super::detail::quiesce_device;
use super::detail::stream_cache::{CacheFree, StreamCache};
use super::{
    check_base_alignment, FixedSizeMemoryResource, FixedSizeOptions, GraphMemoryStats, MemoryResource,
    SharedResource,
};
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::nvtx;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// One bin: requests up to `size` bytes.
struct Bin {
    size: usize,
    resource: SharedResource,
    /// A fixed-size resource made here, which trusts its frees (this
    /// resource checks them all) and whose blocks go through the caches.
    made_here: bool,
}

struct BinningInner<U> {
    upstream: U,
    /// Bins by increasing size.
    bins: Vec<Bin>,
    /// Every live allocation, whoever served it.
    live: LiveSet,
    /// Freed blocks of the bins made here, per stream.
    cache: StreamCache,
    /// Blocks of the bins made here are NVTX regions (registered by their
    /// bin at the bin's size) that are sized to each request ([`crate::nvtx`]).
    annotate: bool,
}

/// Routes each request to the smallest bin that holds it, and larger ones
/// to the upstream (RMM's `binning_memory_resource`).
///
/// Bins are any resources; [`add_bin`](Self::add_bin) with `None` makes a
/// [`FixedSizeMemoryResource`] of that block size over the upstream, and
/// [`with_fixed_bins`](Self::with_fixed_bins) makes one per power of two.
/// A free must name the size it was allocated with (to find the bin).
/// Misuse is detected, never trusted: every allocation is recorded here
/// (in a record sharded by address, so threads do not share its lock); a
/// double free, a foreign, never-allocated or interior pointer, or a wrong
/// size (which would pick another bin) is logged at error level and ignored.
///
/// Threads scale: a block of a bin made here that is freed on stream S
/// waits in S's cache for that bin and serves the next request of that
/// size class on S without touching the bin (stream order makes the reuse
/// safe, as in the bins' own per-stream free lists), so threads on their
/// own streams share no lock and make no driver call on that path. Each
/// (stream, bin) cache holds at most 16 MiB of blocks (at least 4, at most
/// 64 blocks) and all of them together [`DEFAULT_CACHE_BUDGET`](Self::DEFAULT_CACHE_BUDGET) (see
/// [`with_cache_budget`](Self::with_cache_budget)); beyond that, and for
/// bins handed to [`add_bin`](Self::add_bin), blocks go back to their bin.
/// When a bin runs out of memory, every cached block returns to its bin
/// (after a device synchronisation, since the streams that freed them may
/// be gone) and the request is retried once.
/// Zero-byte requests return null. Bins are added before the resource is
/// shared: `add_bin` takes `&mut self` and fails on a resource that has
/// been cloned, so the allocation path needs no lock.
///
/// ```
/// use rmm::mr::{BinningMemoryResource, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SimulatedMemoryResource::new(1 << 34);
/// let mr = BinningMemoryResource::with_fixed_bins(sim.clone(), 10, 12)?; // 1, 2 and 4 KiB
/// let small = mr.allocate(1500, 256, CudaStreamView::DEFAULT)?; // from the 2 KiB bin
/// let big = mr.allocate(1 << 20, 256, CudaStreamView::DEFAULT)?; // from the upstream
/// unsafe {
///     mr.deallocate(small, 1500, 256, CudaStreamView::DEFAULT);
///     mr.deallocate(big, 1 << 20, 256, CudaStreamView::DEFAULT);
/// }
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct BinningMemoryResource<U: MemoryResource = SharedResource> {
    inner: Arc<BinningInner<U>>,
    /// The graph-private pools, in front of the caches, bins and upstream.
    graph: Arc<GraphMemory>,
}

impl<U: MemoryResource> Clone for BinningMemoryResource<U> {
    fn clone(&self) -> Self {
        BinningMemoryResource {
            inner: self.inner.clone(),
            graph: self.graph.clone(),
        }
    }
}

impl<U: MemoryResource> fmt::Debug for BinningMemoryResource<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinningMemoryResource")
            .field("bins", &self.bin_sizes())
            .field("upstream", &self.inner.upstream)
            .finish()
    }
}

impl<U: MemoryResource + Clone> BinningMemoryResource<U> {
    /// Bytes the per-stream caches hold at most, all bins and streams
    /// together, unless [`with_cache_budget`](Self::with_cache_budget) says
    /// otherwise: 1 GiB.
    pub const DEFAULT_CACHE_BUDGET: usize = 1 << 30;

    /// A resource without bins: everything goes to the upstream until
    /// [`add_bin`](Self::add_bin) is called.
    pub fn new(upstream: U) -> Self {
        let annotate = nvtx::annotates(upstream.is_simulated());
        BinningMemoryResource {
            inner: Arc::new(BinningInner {
                upstream,
                bins: Vec::new(),
                live: LiveSet::default(),
                cache: StreamCache::new(Self::DEFAULT_CACHE_BUDGET),
                annotate,
            }),
            graph: GraphMemory::new(),
        }
    }

    /// A resource with fixed-size bins of `2^min_exp ..= 2^max_exp` bytes
    /// over `upstream` (RMM's conventional 18..=22 gives 256 KiB .. 4 MiB).
    ///
    /// # Errors
    /// [`Error::Logic`] when `min_exp > max_exp` or `max_exp >= 48`; the
    /// upstream's error when a bin's first chunk cannot be allocated.
    pub fn with_fixed_bins(upstream: U, min_exp: u32, max_exp: u32) -> Result<Self> {
        if min_exp > max_exp || max_exp >= 48 {
            return Err(Error::Logic(format!(
                "BinningMemoryResource: bad bin exponent range {min_exp}..={max_exp}"
            )));
        }
        let mut mr = Self::new(upstream);
        for e in min_exp..=max_exp {
            mr.add_bin(1usize << e, None)?;
        }
        Ok(mr)
    }

    /// Adds a bin for requests up to `size` bytes (rounded up to 256),
    /// served by `resource`, or by a new [`FixedSizeMemoryResource`] of that
    /// block size over the upstream when `None`. A bin of an existing size
    /// is left as it is.
    ///
    /// # Errors
    /// [`Error::Logic`] when the resource has been cloned already or `size`
    /// is 0; the fixed-size resource's error.
    pub fn add_bin(&mut self, size: usize, resource: Option<SharedResource>) -> Result<()> {
        let size = align_up(size, CUDA_ALLOCATION_ALIGNMENT)
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::Logic(format!("BinningMemoryResource: invalid bin size {size}")))?;
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            return Err(Error::Logic(
                "BinningMemoryResource::add_bin on a shared resource: add bins before cloning it".into(),
            ));
        };
        let at = match inner.bins.binary_search_by_key(&size, |b| b.size) {
            Ok(_) => return Ok(()),
            Err(at) => at,
        };
        let (resource, made_here) = match resource {
            Some(r) => (r, false),
            None => (
                SharedResource::new(
                    FixedSizeMemoryResource::new(
                        inner.upstream.clone(),
                        // Trusted: every free is checked here first.
                        FixedSizeOptions::default().block_size(size).unchecked_frees(true),
                    )?
                    .behind_graph_memory(),
                ),
                true,
            ),
        };
        inner.bins.insert(
            at,
            Bin {
                size,
                resource,
                made_here,
            },
        );
        Ok(())
    }

    /// Sets the most bytes the per-stream caches hold together (0: no
    /// caching, every free goes to its bin as in RMM).
    ///
    /// # Errors
    /// [`Error::Logic`] when the resource has been cloned already.
    ///
    /// ```
    /// use rmm::mr::{BinningMemoryResource, SimulatedMemoryResource};
    /// let sim = SimulatedMemoryResource::new(1 << 30);
    /// let mr = BinningMemoryResource::with_fixed_bins(sim, 10, 12)?.with_cache_budget(0)?;
    /// assert_eq!(mr.cached_bytes(), 0);
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn with_cache_budget(mut self, bytes: usize) -> Result<Self> {
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            return Err(Error::Logic(
                "BinningMemoryResource::with_cache_budget on a shared resource: set it before cloning".into(),
            ));
        };
        inner.cache = StreamCache::new(bytes);
        Ok(self)
    }
}

impl<U: MemoryResource> BinningMemoryResource<U> {
    /// The bin sizes, increasing.
    pub fn bin_sizes(&self) -> Vec<usize> {
        self.inner.bins.iter().map(|b| b.size).collect()
    }

    /// The upstream resource (for requests larger than every bin).
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    /// The bin for `bytes` and its index, or `None` for the upstream.
    #[inline]
    fn route(&self, bytes: usize) -> Option<(usize, &Bin)> {
        let bins = &self.inner.bins;
        let i = bins.partition_point(|b| b.size < bytes);
        bins.get(i).map(|b| (i, b))
    }

    /// Frees refused so far (every refusal, whichever bin or the upstream
    /// the size names).
    pub fn bad_frees(&self) -> usize {
        self.inner.live.bad_frees()
    }

    /// Bytes of freed blocks waiting in the per-stream caches.
    pub fn cached_bytes(&self) -> usize {
        self.inner.cache.cached_bytes()
    }

    /// Checks a free of `addr` (`bytes`) on `stream` against the live
    /// records: true when the rest of the free is the caller's (the record
    /// is gone); false when it was refused (logged, counted) or is done (a
    /// block of a stream's cache, cached again on `stream`).
    #[inline]
    fn forget_live(&self, addr: u64, bytes: usize, stream: CudaStreamView) -> bool {
        const NAME: &str = "BinningMemoryResource";
        if let Some((i, bin)) = self.route(bytes).filter(|(_, bin)| bin.made_here) {
            match self.inner.cache.free(stream, addr, bytes, i, bin.size) {
                CacheFree::Cached => return false,
                CacheFree::Uncached => {
                    // SAFETY: a block of this bin, freed once by its user.
                    unsafe {
                        bin.resource.deallocate(
                            DevicePtr::new(addr),
                            bin.size,
                            CUDA_ALLOCATION_ALIGNMENT,
                            stream,
                        )
                    };
                    return false;
                }
                CacheFree::Refused(bad) => {
                    self.inner.live.refused(NAME, addr, bytes, bad);
                    return false;
                }
                CacheFree::NotHere => {}
            }
        }
        let found = match self.inner.live.take(addr, bytes) {
            Err(BadFree::NotLive) => self.inner.cache.forget(addr, bytes),
            r => r,
        };
        match found {
            Ok(()) => true,
            Err(bad) => {
                self.inner.live.refused(NAME, addr, bytes, bad);
                false
            }
        }
    }

    /// A block from `bin` (made here), retried once after the caches went
    /// back to the bins when the bin is out of memory.
    fn bin_allocate(&self, bin: &Bin, stream: CudaStreamView) -> Result<DevicePtr> {
        let first = crate::mr::forensics::nested(|| {
            bin.resource.allocate(bin.size, CUDA_ALLOCATION_ALIGNMENT, stream)
        });
        match first {
            Err(e) if e.is_bad_alloc() && self.inner.cache.cached_bytes() > 0 => {
                self.return_cached(stream);
                bin.resource.allocate(bin.size, CUDA_ALLOCATION_ALIGNMENT, stream)
            }
            other => other,
        }
    }

    /// Hands every cached block back to its bin. The streams that freed
    /// them may be gone, so the device is synchronised first (every use of
    /// every block is then over) and the blocks are freed on `stream`.
    fn return_cached(&self, stream: CudaStreamView) {
        let bins = &self.inner.bins;
        let blocks = self.inner.cache.drain(|i| bins[i].size);
        if blocks.is_empty() {
            return;
        }
        let _device = quiesce_device(
            "BinningMemoryResource",
            "before returning cached blocks to the bins",
            self.device(),
            self.is_simulated(),
        );
        for (i, addr) in blocks {
            let bin = &bins[i];
            // SAFETY: the block came from this bin, was freed by its user
            // (checked against the live record) and is idle: the device
            // was synchronised above.
            unsafe {
                bin.resource
                    .deallocate(DevicePtr::new(addr), bin.size, CUDA_ALLOCATION_ALIGNMENT, stream)
            };
        }
    }
}

impl<U: MemoryResource> MemoryResource for BinningMemoryResource<U> {
    fn layer_state(&self) -> LayerState {
        let mut l = LayerState::new("binning", "BinningMemoryResource");
        let bins: Vec<LayerState> = self.inner.bins.iter().map(|b| b.resource.layer_state()).collect();
        let sum = |f: fn(&LayerState) -> Option<usize>| bins.iter().filter_map(f).sum::<usize>();
        let cached = self.cached_bytes();
        l.reserved_bytes = Some(sum(|b| b.reserved_bytes));
        l.used_bytes = Some(sum(|b| b.used_bytes).saturating_sub(cached));
        l.free_bytes = Some(sum(|b| b.free_bytes) + cached);
        l.largest_free_block = bins.iter().filter_map(|b| b.largest_free_block).max().or(Some(0));
        let mut by_stream = std::collections::BTreeMap::new();
        for (s, n) in bins.iter().flat_map(|b| b.free_bytes_by_stream.iter().flatten()) {
            *by_stream.entry(*s).or_insert(0usize) += n;
        }
        l.free_bytes_by_stream = Some(by_stream.into_iter().collect());
        l.chunks = Some(
            bins.iter()
                .flat_map(|b| b.chunks.iter().flatten().copied())
                .collect(),
        );
        let mut blocks: Vec<_> = bins
            .iter()
            .flat_map(|b| b.blocks.iter().flatten().cloned())
            .collect();
        blocks.sort_by_key(|b| b.address);
        l.blocks = Some(blocks);
        l.graph_memory = Some(self.graph.stats());
        l
    }

    fn visit_upstream(&self, visit: &mut dyn FnMut(&dyn MemoryResource)) {
        visit(&self.inner.upstream)
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            check_base_alignment(alignment)?;
            if bytes == 0 {
                return Ok(DevicePtr::NULL);
            }
            if let Some(p) = self.graph.allocate_own(self, bytes, alignment, stream)? {
                return Ok(p);
            }
            // A block from a stream's cache is recorded live by the cache
            // (under the one lock it takes); every other by `live`.
            let (p, recorded) = match self.route(bytes) {
                Some((i, bin)) if bin.made_here => {
                    let (p, recorded) = match self.inner.cache.take(stream, i, bin.size, bytes) {
                        Some(addr) => (DevicePtr::new(addr), true),
                        None => (self.bin_allocate(bin, stream)?, false),
                    };
                    if self.inner.annotate {
                        nvtx::resize_region(p.addr(), bytes);
                    }
                    (p, recorded)
                }
                Some((_, bin)) => (bin.resource.allocate(bytes, alignment, stream)?, false),
                None => (self.inner.upstream.allocate(bytes, alignment, stream)?, false),
            };
            if !p.is_null() && !recorded {
                self.inner.live.insert("BinningMemoryResource", p.addr(), bytes);
            }
            Ok(p)
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if self.graph.deallocate_own(self, ptr, bytes, alignment, stream) {
            return;
        }
        if ptr.is_null() || !self.forget_live(ptr.addr(), bytes, stream) {
            return;
        }
        // The record showed the same size, hence the same bin (or the
        // upstream), served the allocation.
        match self.route(bytes) {
            Some((i, bin)) if bin.made_here => {
                if !self.inner.cache.put(stream, i, bin.size, ptr.addr()) {
                    // SAFETY: a block of this bin, freed once by its user.
                    unsafe {
                        bin.resource
                            .deallocate(ptr, bin.size, CUDA_ALLOCATION_ALIGNMENT, stream)
                    }
                }
            }
            // SAFETY: served by this bin with these arguments.
            Some((_, bin)) => unsafe { bin.resource.deallocate(ptr, bytes, alignment, stream) },
            // SAFETY: served by the upstream with these arguments.
            None => unsafe { self.inner.upstream.deallocate(ptr, bytes, alignment, stream) },
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<BinningMemoryResource<U>>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }

    fn device(&self) -> Option<DeviceId> {
        // A stateless upstream (cuda) names no device; its fixed-size bins
        // record the one current when they were made.
        self.inner
            .upstream
            .device()
            .or_else(|| self.inner.bins.iter().find_map(|b| b.resource.device()))
    }

    fn is_simulated(&self) -> bool {
        self.inner.upstream.is_simulated()
    }

    fn is_device_accessible(&self) -> bool {
        self.inner.upstream.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.inner.upstream.is_host_accessible()
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(self.graph.stats())
    }
}

impl<U: MemoryResource> OwnSharedPath for BinningMemoryResource<U> {
    const NAME: &'static str = "BinningMemoryResource";
    fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}
