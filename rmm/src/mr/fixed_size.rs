//! [`FixedSizeMemoryResource`]: equal blocks from upstream chunks.

use std::collections::BTreeMap;
use std::fmt;

use super::detail::free_list::{FixedSizeFreeList, FreeBlocks};
use super::detail::shell::{
    chunk_containing, release_chunks, stream_ordered_memory_resource, Props, StreamOrderedResource,
};
use super::detail::stream_ordered::{Backing, Heads, Sizing};
use super::{MemoryResource, SharedResource};
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};
use crate::stream::CudaStreamView;

/// Options of [`FixedSizeMemoryResource`].
///
/// ```
/// use rmm::mr::FixedSizeOptions;
/// let o = FixedSizeOptions::default().block_size(4096).blocks_to_preallocate(16);
/// assert_eq!((o.block_size, o.blocks_to_preallocate), (4096, 16));
/// assert_eq!(FixedSizeOptions::default().block_size, 1 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct FixedSizeOptions {
    /// Size of every block, rounded up to 256 (default 1 MiB).
    pub block_size: usize,
    /// Blocks per upstream chunk (default 128).
    pub blocks_to_preallocate: usize,
    /// Trust frees instead of checking them against the live allocations
    /// (default `false`: checked). Unchecked, a double free or a
    /// never-allocated block-aligned address hands a block out twice; only
    /// for measured hot paths with trusted callers.
    pub unchecked_frees: bool,
}

impl Default for FixedSizeOptions {
    fn default() -> Self {
        FixedSizeOptions {
            block_size: 1 << 20,
            blocks_to_preallocate: 128,
            unchecked_frees: false,
        }
    }
}

impl FixedSizeOptions {
    /// Sets [`block_size`](Self::block_size).
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }
    /// Sets [`blocks_to_preallocate`](Self::blocks_to_preallocate).
    pub fn blocks_to_preallocate(mut self, n: usize) -> Self {
        self.blocks_to_preallocate = n;
        self
    }
    /// Sets [`unchecked_frees`](Self::unchecked_frees).
    pub fn unchecked_frees(mut self, unchecked: bool) -> Self {
        self.unchecked_frees = unchecked;
        self
    }
}

pub(crate) struct FixedBacking<U> {
    upstream: U,
    block_size: usize,
    chunk_size: usize,
    chunks: BTreeMap<u64, usize>,
}

impl<U: MemoryResource> FixedBacking<U> {
    fn new_chunk(&mut self, stream: CudaStreamView) -> Result<u64> {
        let p = self
            .upstream
            .allocate(self.chunk_size, CUDA_ALLOCATION_ALIGNMENT, stream)
            .map_err(|e| match e {
                Error::OutOfMemory {
                    requested,
                    reason,
                    report,
                } => Error::OutOfMemory {
                    report,
                    requested,
                    reason: format!(
                        "FixedSizeMemoryResource: upstream chunk of {} bytes failed: {reason}",
                        self.chunk_size
                    ),
                },
                other => other,
            })?;
        if !p.is_aligned(CUDA_ALLOCATION_ALIGNMENT) {
            // SAFETY: `p` was just allocated with these arguments and is unused.
            unsafe {
                self.upstream
                    .deallocate(p, self.chunk_size, CUDA_ALLOCATION_ALIGNMENT, stream)
            };
            return Err(Error::BadAlloc(format!(
                "FixedSizeMemoryResource: upstream returned {p}, not 256-byte aligned"
            )));
        }
        self.chunks.insert(p.addr(), self.chunk_size);
        Ok(p.addr())
    }

    /// Puts a new chunk's blocks on `list`. Through `put`, which gives a
    /// stream's list that never held a block its block size: with `push`,
    /// a list that first got blocks here counted them as 0 free bytes.
    fn carve(&self, base: u64, list: &mut FixedSizeFreeList) {
        let n = self.chunk_size / self.block_size;
        for i in 0..n {
            list.put(base + (i * self.block_size) as u64, self.block_size, |_| false);
        }
    }
}

impl<U: MemoryResource> Backing for FixedBacking<U> {
    type List = FixedSizeFreeList;

    fn release(&mut self) {
        // SAFETY: every chunk came from `upstream.allocate(size, 256, _)`
        // and no block of it is in use any more (the resource is dropped).
        unsafe { release_chunks(&self.upstream, &mut self.chunks) };
    }

    fn max_allocation(&self) -> usize {
        self.block_size
    }

    fn block_size(&self, bytes: usize) -> Option<usize> {
        (bytes <= self.block_size).then_some(self.block_size)
    }

    fn graph_chunk_bytes(&self, bytes: usize) -> Option<usize> {
        self.block_size(bytes)
    }

    fn heads(&self) -> Heads {
        Heads::Everywhere
    }

    fn sizing(&self) -> Option<Sizing> {
        Some(Sizing::Fixed(self.block_size))
    }

    fn chunk_of(&self, addr: u64) -> Option<(u64, usize)> {
        chunk_containing(&self.chunks, addr)
    }

    fn contains(&self, addr: u64, _size: usize) -> bool {
        self.chunk_of(addr)
            .is_some_and(|(s, _)| (addr - s).is_multiple_of(self.block_size as u64))
    }

    fn grow(&mut self, _size: usize, stream: CudaStreamView, list: &mut FixedSizeFreeList) -> Result<()> {
        let base = self.new_chunk(stream)?;
        self.carve(base, list);
        Ok(())
    }

    fn chunks(&self) -> Vec<(u64, usize)> {
        self.chunks.iter().map(|(&a, &n)| (a, n)).collect()
    }

    fn upstream(&self) -> Option<&dyn MemoryResource> {
        Some(&self.upstream)
    }

    fn name(&self) -> &'static str {
        "FixedSizeMemoryResource"
    }

    fn refuse(&self, bytes: usize) -> Option<Error> {
        (bytes > self.block_size).then(|| Error::OutOfMemory {
            requested: bytes,
            reason: format!(
                "FixedSizeMemoryResource: maximum allocation size exceeded (block size {})",
                self.block_size
            ),
            report: None,
        })
    }
}

/// Blocks of one size carved from upstream chunks (RMM's
/// `fixed_size_memory_resource`): O(1) allocate and free from a FIFO per
/// stream, with the same cross-stream rules as [`PoolMemoryResource`](super::PoolMemoryResource).
///
/// A chunk of `block_size * blocks_to_preallocate` bytes is taken at
/// construction and another whenever the blocks run out. Requests larger
/// than the block size fail with [`Error::OutOfMemory`] ("maximum allocation
/// size exceeded"). Memory goes back to the upstream when the last clone is
/// dropped. Thread safety: one mutex; clones share it.
///
/// ```
/// use rmm::mr::{FixedSizeMemoryResource, FixedSizeOptions, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SimulatedMemoryResource::new(1 << 30);
/// let opts = FixedSizeOptions::default().block_size(4096).blocks_to_preallocate(8);
/// let mr = FixedSizeMemoryResource::new(sim.clone(), opts)?;
/// assert_eq!(sim.allocated_bytes(), 8 * 4096);
/// let p = mr.allocate(100, 256, CudaStreamView::DEFAULT)?;
/// assert!(mr.allocate(4097, 256, CudaStreamView::DEFAULT).unwrap_err().is_out_of_memory());
/// unsafe { mr.deallocate(p, 100, 256, CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct FixedSizeMemoryResource<U: MemoryResource = SharedResource> {
    shell: StreamOrderedResource<FixedBacking<U>>,
}

stream_ordered_memory_resource!(FixedSizeMemoryResource<U>, U);

impl<U: MemoryResource> fmt::Debug for FixedSizeMemoryResource<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedSizeMemoryResource")
            .field("block_size", &self.block_size())
            .finish()
    }
}

impl<U: MemoryResource> FixedSizeMemoryResource<U> {
    /// A resource over `upstream`; takes the first chunk now.
    ///
    /// # Errors
    /// [`Error::Logic`] for a zero block size or block count (or a chunk
    /// size that overflows); the upstream's error when the first chunk fails.
    pub fn new(upstream: U, options: FixedSizeOptions) -> Result<Self> {
        let block_size = align_up(options.block_size, CUDA_ALLOCATION_ALIGNMENT)
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                Error::Logic(format!(
                    "FixedSizeMemoryResource: invalid block size {}",
                    options.block_size
                ))
            })?;
        let chunk_size = block_size
            .checked_mul(options.blocks_to_preallocate)
            .filter(|&c| c > 0)
            .ok_or_else(|| {
                Error::Logic(format!(
                    "FixedSizeMemoryResource: invalid blocks_to_preallocate {}",
                    options.blocks_to_preallocate
                ))
            })?;
        let props = Props::of(&upstream)?;
        let backing = FixedBacking {
            upstream,
            block_size,
            chunk_size,
            chunks: BTreeMap::new(),
        };
        let mut core = props.core(backing, options.unchecked_frees);
        let base = core.backing.new_chunk(CudaStreamView::DEFAULT)?;
        core.settle_initial()?;
        for i in 0..options.blocks_to_preallocate {
            core.add_fresh(
                base + (i * block_size) as u64,
                block_size,
                CudaStreamView::DEFAULT,
            );
        }
        Ok(FixedSizeMemoryResource {
            shell: StreamOrderedResource::new(core, props),
        })
    }

    /// The block size (rounded to 256).
    pub fn block_size(&self) -> usize {
        self.shell.state().backing.block_size
    }

    /// This resource as a bin of a binning resource, which keeps the graph
    /// memory in front of it (see `StreamOrderedResource::set_behind_graph_memory`).
    pub(crate) fn behind_graph_memory(mut self) -> Self {
        self.shell.set_behind_graph_memory();
        self
    }

    /// Bytes held from the upstream.
    pub fn pool_size(&self) -> usize {
        let s = self.shell.state();
        s.backing.chunks.len() * s.backing.chunk_size
    }

    /// Free bytes over all streams.
    pub fn free_bytes(&self) -> usize {
        self.shell.free_bytes()
    }

    /// Frees refused so far: double frees, foreign or never-allocated
    /// pointers, wrong sizes (each logged at error level).
    pub fn bad_frees(&self) -> usize {
        self.shell.bad_frees()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::SimulatedMemoryResource;

    fn stream(i: usize) -> CudaStreamView<'static> {
        // SAFETY: a simulated resource never passes stream handles to the driver.
        unsafe { CudaStreamView::from_raw(0x1000 + 16 * i) }
    }

    /// Found by the `ops` fuzz target (fuzz/): a stream whose list first
    /// got blocks from a new chunk counted them as 0 free bytes, so
    /// `free_bytes` + live blocks fell short of `pool_size`.
    #[test]
    fn blocks_of_a_chunk_grown_for_a_new_stream_count_as_free() {
        let sim = SimulatedMemoryResource::new(1 << 30);
        let opts = FixedSizeOptions::default()
            .block_size(4096)
            .blocks_to_preallocate(2);
        let mr = FixedSizeMemoryResource::new(sim, opts).unwrap();
        // The first chunk's two blocks go to streams 1 and 2 (taken from
        // the default stream's list); stream 2's second request grows.
        let a = mr.allocate(100, 256, stream(1)).unwrap();
        let b = mr.allocate(100, 256, stream(2)).unwrap();
        let c = mr.allocate(100, 256, stream(2)).unwrap();
        assert_eq!(mr.pool_size(), 4 * 4096);
        assert_eq!(mr.free_bytes(), 4096, "one block of the grown chunk is free");
        for (p, s) in [(a, 1), (b, 2), (c, 2)] {
            // SAFETY: allocated above with these arguments.
            unsafe { mr.deallocate(p, 100, 256, stream(s)) };
        }
        assert_eq!(mr.free_bytes(), mr.pool_size());
    }
}
