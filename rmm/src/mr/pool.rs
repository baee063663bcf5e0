//! [`PoolMemoryResource`]: a coalescing best-fit sub-allocator.

use std::collections::BTreeMap;
use std::fmt;

use super::detail::free_list::CoalescingFreeList;
use super::detail::shell::{
    chunk_containing, release_chunks, stream_ordered_memory_resource, Props, StreamOrderedResource,
};
use super::detail::stream_ordered::{Backing, Heads, Sizing};
use super::{FreeBlockStats, MemoryResource, SharedResource};
use crate::align::{align_up, is_aligned, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};
use crate::stream::CudaStreamView;

/// Options of [`PoolMemoryResource`].
///
/// ```
/// use rmm::mr::PoolOptions;
/// let o = PoolOptions::default().initial_pool_size(1 << 30).maximum_pool_size(1 << 32);
/// assert_eq!((o.initial_pool_size, o.maximum_pool_size), (1 << 30, Some(1 << 32)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolOptions {
    /// Bytes taken from the upstream at construction (a multiple of 256; default 0).
    pub initial_pool_size: usize,
    /// The most bytes the pool takes from its upstream (a multiple of 256,
    /// at least the initial size); `None`: no limit.
    pub maximum_pool_size: Option<usize>,
    /// Trust frees instead of checking them against the live allocations
    /// (default `false`: checked). Unchecked, a double free inside a
    /// coalesced free range, an interior pointer or a wrong size corrupts
    /// the pool; only for measured hot paths with trusted callers.
    pub unchecked_frees: bool,
}

impl PoolOptions {
    /// Sets [`initial_pool_size`](Self::initial_pool_size).
    pub fn initial_pool_size(mut self, bytes: usize) -> Self {
        self.initial_pool_size = bytes;
        self
    }
    /// Sets [`maximum_pool_size`](Self::maximum_pool_size).
    pub fn maximum_pool_size(mut self, bytes: usize) -> Self {
        self.maximum_pool_size = Some(bytes);
        self
    }
    /// Sets [`unchecked_frees`](Self::unchecked_frees).
    pub fn unchecked_frees(mut self, unchecked: bool) -> Self {
        self.unchecked_frees = unchecked;
        self
    }
}

/// The pool's upstream chunks and growth policy.
pub(crate) struct PoolBacking<U> {
    upstream: U,
    /// Upstream allocations, by address: their first bytes are heads.
    chunks: BTreeMap<u64, usize>,
    pool_size: usize,
    maximum: Option<usize>,
}

impl<U: MemoryResource> PoolBacking<U> {
    /// RMM's `size_to_grow`: 0 when the maximum leaves no room.
    fn size_to_grow(&self, size: usize) -> usize {
        match self.maximum {
            None => size.max(self.pool_size),
            Some(max) => {
                let remaining = align_up(max.saturating_sub(self.pool_size), CUDA_ALLOCATION_ALIGNMENT)
                    .unwrap_or(usize::MAX);
                if size <= remaining {
                    size.max(align_up(remaining / 2, CUDA_ALLOCATION_ALIGNMENT).unwrap_or(remaining))
                        .min(remaining)
                } else {
                    0
                }
            }
        }
    }
}

impl<U: MemoryResource> Backing for PoolBacking<U> {
    type List = CoalescingFreeList;

    fn release(&mut self) {
        // SAFETY: every chunk came from `upstream.allocate(size, 256, _)`
        // and no block of it is in use any more (the pool is dropped).
        unsafe { release_chunks(&self.upstream, &mut self.chunks) };
        self.pool_size = 0;
    }

    fn max_allocation(&self) -> usize {
        self.maximum.unwrap_or(usize::MAX)
    }

    fn block_size(&self, bytes: usize) -> Option<usize> {
        align_up(bytes, CUDA_ALLOCATION_ALIGNMENT)
    }

    fn heads(&self) -> Heads {
        Heads::at(self.chunks.keys().copied())
    }

    fn sizing(&self) -> Option<Sizing> {
        Some(Sizing::Rounded {
            max: self.max_allocation(),
        })
    }

    fn chunk_of(&self, addr: u64) -> Option<(u64, usize)> {
        chunk_containing(&self.chunks, addr)
    }

    fn contains(&self, addr: u64, size: usize) -> bool {
        self.chunk_of(addr)
            .is_some_and(|(s, n)| addr.checked_add(size as u64).is_some_and(|e| e <= s + n as u64))
    }

    fn grow(&mut self, size: usize, stream: CudaStreamView, list: &mut CoalescingFreeList) -> Result<()> {
        let mut try_size = self.size_to_grow(size);
        if try_size == 0 {
            let e = Error::OutOfMemory {
                requested: size,
                reason: format!(
                    "PoolMemoryResource: maximum pool size exceeded: not enough room to grow \
                     (current pool size {}, maximum {}, request {size})",
                    self.pool_size,
                    self.maximum.unwrap_or(usize::MAX)
                ),
                report: None,
            };
            log::error!("{e}");
            return Err(e);
        }
        loop {
            // Nested: an upstream failure the halving absorbs is no
            // out-of-memory of the caller's.
            let upstream = &self.upstream;
            match crate::mr::forensics::nested(|| {
                upstream.allocate(try_size, CUDA_ALLOCATION_ALIGNMENT, stream)
            }) {
                Ok(p) if is_aligned(p.addr() as usize, CUDA_ALLOCATION_ALIGNMENT) && !p.is_null() => {
                    self.chunks.insert(p.addr(), try_size);
                    self.pool_size += try_size;
                    log::debug!(
                        "PoolMemoryResource: grew by {try_size} bytes at {p} for a {size}-byte request \
                         (pool size now {})",
                        self.pool_size
                    );
                    let chunks = &self.chunks;
                    list.insert(p.addr(), try_size, |a| chunks.contains_key(&a));
                    return Ok(());
                }
                Ok(p) => {
                    // SAFETY: `p` was just allocated with these arguments and is unused.
                    unsafe {
                        self.upstream
                            .deallocate(p, try_size, CUDA_ALLOCATION_ALIGNMENT, stream)
                    };
                    return Err(Error::BadAlloc(format!(
                        "PoolMemoryResource: upstream returned {p}, not 256-byte aligned"
                    )));
                }
                Err(e) if e.is_out_of_memory() && try_size > size => {
                    log::debug!("PoolMemoryResource: upstream could not give {try_size} bytes; halving");
                    try_size = (try_size / 2).max(size);
                }
                Err(e) if e.is_out_of_memory() => {
                    let e = Error::OutOfMemory {
                        requested: size,
                        reason: format!(
                            "PoolMemoryResource: maximum pool size exceeded (failed to allocate {try_size} \
                             bytes from upstream; pool size {}, maximum {}): {}",
                            self.pool_size,
                            self.maximum.map_or("none".to_string(), |m| m.to_string()),
                            e.headline()
                        ),
                        report: None,
                    };
                    log::error!("{e}");
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn name(&self) -> &'static str {
        "PoolMemoryResource"
    }

    fn chunks(&self) -> Vec<(u64, usize)> {
        self.chunks.iter().map(|(&a, &n)| (a, n)).collect()
    }

    fn upstream(&self) -> Option<&dyn MemoryResource> {
        Some(&self.upstream)
    }

    fn free_block_stats<'a>(lists: impl Iterator<Item = &'a CoalescingFreeList>) -> Option<FreeBlockStats> {
        let mut stats = FreeBlockStats::default();
        for list in lists {
            stats.free_bytes += list.free_bytes();
            stats.free_blocks += list.block_count();
            stats.largest_free_block = stats.largest_free_block.max(list.largest());
        }
        Some(stats)
    }
}

/// A coalescing best-fit sub-allocator over any upstream resource (RMM's
/// `pool_memory_resource`), with one free list per stream.
///
/// * Sizes are rounded up to 256 bytes; every block is 256-byte aligned.
///   Alignments up to 256 are served; larger ones are [`Error::BadAlloc`].
/// * Free blocks are indexed by address and by size, so allocate and free
///   cost O(log n) in the number of free blocks (RMM scans a list).
///   Blocks from different upstream chunks never merge.
/// * A block freed on stream A is reused on A at once and on stream B after
///   B waits on an event of A on the GPU. Events cost nothing until blocks
///   first move between streams: that first time the device is synchronised
///   once, and from then on every free records its stream's event (as RMM
///   does on every free).
/// * Growth: without a maximum by `max(request, pool size)`; with one by
///   `max(request, remaining / 2)`; a failing upstream allocation is retried
///   with half the size down to the request, then [`Error::OutOfMemory`]
///   with the sizes in its message. Memory goes back to the upstream when
///   the last clone is dropped.
///
/// * Device: the upstream's, or for a stateless upstream such as
///   [`CudaMemoryResource`](super::CudaMemoryResource) the device current
///   at construction. Slow paths (growth, blocks taken from another stream)
///   under another current device fail with [`Error::Logic`]; the memory
///   goes back with its own device current, whichever is current at drop.
///
/// Thread safety: clones share one pool. Each stream's free list and
/// live allocations have a lock of their own: an allocation its stream's
/// list serves and a free on the allocation's stream take only that lock,
/// so threads on different streams do not contend. Other paths (blocks
/// from another stream, growth, a free on another stream, statistics)
/// take the pool's lock as well.
///
/// ```
/// use rmm::mr::{MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SimulatedMemoryResource::new(1 << 30);
/// let pool = PoolMemoryResource::new(sim.clone(), PoolOptions::default().initial_pool_size(1 << 20))?;
/// let p = pool.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// assert_eq!(pool.pool_size(), 1 << 20);
/// unsafe { pool.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
/// drop(pool);
/// assert_eq!(sim.allocated_bytes(), 0);
/// # Ok::<(), rmm::Error>(())
/// ```
///
/// Over the GPU:
/// ```no_run
/// use rmm::mr::{CudaMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions};
/// let initial = rmm::device::percent_of_free_device_memory(50)?;
/// let pool = PoolMemoryResource::new(CudaMemoryResource::new(), PoolOptions::default().initial_pool_size(initial))?;
/// let s = rmm::CudaStream::new()?;
/// let p = pool.allocate(1 << 20, 256, s.view())?;
/// unsafe { pool.deallocate(p, 1 << 20, 256, s.view()) };
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct PoolMemoryResource<U: MemoryResource = SharedResource> {
    shell: StreamOrderedResource<PoolBacking<U>>,
}

stream_ordered_memory_resource!(PoolMemoryResource<U>, U);

impl<U: MemoryResource> fmt::Debug for PoolMemoryResource<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shell.state();
        f.debug_struct("PoolMemoryResource")
            .field("pool_size", &s.backing.pool_size)
            .field("maximum_pool_size", &s.backing.maximum)
            .field("upstream", &s.backing.upstream)
            .finish()
    }
}

/// Checks the pool's size options.
pub(crate) fn check_sizes(what: &str, initial: usize, maximum: Option<usize>) -> Result<()> {
    if !is_aligned(initial, CUDA_ALLOCATION_ALIGNMENT) {
        return Err(Error::Logic(format!(
            "{what}: initial pool size {initial} is not a multiple of 256"
        )));
    }
    if let Some(max) = maximum {
        if !is_aligned(max, CUDA_ALLOCATION_ALIGNMENT) {
            return Err(Error::Logic(format!(
                "{what}: maximum pool size {max} is not a multiple of 256"
            )));
        }
        if initial > max {
            return Err(Error::Logic(format!(
                "{what}: initial pool size {initial} exceeds the maximum pool size {max}"
            )));
        }
    }
    Ok(())
}

impl<U: MemoryResource> PoolMemoryResource<U> {
    /// A pool over `upstream` that takes `options.initial_pool_size` bytes now.
    ///
    /// # Errors
    /// [`Error::Logic`] when a size is not a multiple of 256 or the initial
    /// size exceeds the maximum; the upstream's error when the initial
    /// allocation fails.
    pub fn new(upstream: U, options: PoolOptions) -> Result<Self> {
        check_sizes(
            "PoolMemoryResource",
            options.initial_pool_size,
            options.maximum_pool_size,
        )?;
        let props = Props::of(&upstream)?;
        let backing = PoolBacking {
            upstream,
            chunks: BTreeMap::new(),
            pool_size: 0,
            maximum: options.maximum_pool_size,
        };
        let mut core = props.core(backing, options.unchecked_frees);
        let initial = options.initial_pool_size;
        if initial > 0 {
            let p = core.backing.upstream.allocate(
                initial,
                CUDA_ALLOCATION_ALIGNMENT,
                CudaStreamView::DEFAULT,
            )?;
            core.backing.chunks.insert(p.addr(), initial);
            core.backing.pool_size = initial;
            core.settle_initial()?;
            if !p.is_aligned(CUDA_ALLOCATION_ALIGNMENT) {
                core.backing.release();
                return Err(Error::BadAlloc(format!(
                    "PoolMemoryResource: upstream returned {p}, not 256-byte aligned"
                )));
            }
            core.add_fresh(p.addr(), initial, CudaStreamView::DEFAULT);
        }
        Ok(PoolMemoryResource {
            shell: StreamOrderedResource::new(core, props),
        })
    }

    /// Bytes the pool holds from its upstream.
    pub fn pool_size(&self) -> usize {
        self.shell.state().backing.pool_size
    }

    /// The configured maximum, if any.
    pub fn maximum_pool_size(&self) -> Option<usize> {
        self.shell.state().backing.maximum
    }

    /// Free bytes inside the pool, over all streams.
    pub fn free_bytes(&self) -> usize {
        self.shell.free_bytes()
    }

    /// Frees refused so far: double frees, foreign, never-allocated or
    /// interior pointers, wrong sizes (each logged at error level).
    pub fn bad_frees(&self) -> usize {
        self.shell.bad_frees()
    }

    /// Number of upstream allocations the pool holds.
    pub fn upstream_chunks(&self) -> usize {
        self.shell.state().backing.chunks.len()
    }

    /// Runs `f` with the upstream resource.
    pub fn with_upstream<R>(&self, f: impl FnOnce(&U) -> R) -> R {
        f(&self.shell.state().backing.upstream)
    }
}
