//! What one layer of a resource stack says about itself
//! ([`MemoryResource::layer_state`](crate::mr::MemoryResource::layer_state)):
//! the parts of a [`Snapshot`](super::Snapshot) and an
//! [`OomReport`](super::OomReport). Plain data; no resource is locked here.
#![forbid(unsafe_code)]

use crate::mr::{FreeBlockStats, GraphMemoryStats};

/// Whether a block is handed out or free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BlockState {
    /// Held for reuse by the layer.
    Free,
    /// Handed out and not freed.
    Used,
}

impl BlockState {
    /// `"free"` or `"used"`, as in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockState::Free => "free",
            BlockState::Used => "used",
        }
    }
}

/// One block of a sub-allocator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Start address.
    pub address: u64,
    /// Size in bytes (the block's, rounded as the layer rounds).
    pub size: usize,
    /// Free or used.
    pub state: BlockState,
    /// The raw stream handle of the free list holding a free block; `None`
    /// where not known (used blocks).
    pub stream: Option<usize>,
}

/// One chunk a layer holds from its upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Start address.
    pub address: u64,
    /// Size in bytes.
    pub size: usize,
}

/// A statistics adaptor's counters (bytes and allocations).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    /// Bytes outstanding.
    pub current_bytes: i64,
    /// Highest `current_bytes` seen.
    pub peak_bytes: i64,
    /// Bytes ever allocated.
    pub total_bytes: i64,
    /// Allocations outstanding.
    pub current_count: i64,
    /// Highest `current_count` seen.
    pub peak_count: i64,
    /// Allocations ever made.
    pub total_count: i64,
}

/// One live allocation a tracking adaptor knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveAllocation {
    /// Address.
    pub address: u64,
    /// Requested size in bytes.
    pub size: usize,
    /// The raw stream handle, where known.
    pub stream: Option<usize>,
    /// The allocating thread, where known.
    pub thread: Option<u64>,
    /// UTC time of day of the allocation, where known.
    pub time: Option<String>,
    /// The allocating call stack, one frame a line, when captured.
    pub backtrace: Option<Vec<String>>,
}

/// What one layer of a resource stack reports about itself. Fields the
/// layer does not know are `None`.
///
/// ```
/// use rmm::mr::{FreeBlockStats, LayerState};
/// let mut l = LayerState::new("pool", "PoolMemoryResource");
/// l.set_free_stats(FreeBlockStats { free_bytes: 1000, largest_free_block: 250, free_blocks: 3 });
/// assert_eq!(l.largest_free_block, Some(250));
/// assert!((l.fragmentation().unwrap() - 0.75).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerState {
    /// Short name, e.g. `pool`, `statistics`.
    pub name: String,
    /// The Rust type, e.g. `PoolMemoryResource`.
    pub type_name: String,
    /// Bytes the layer holds from its upstream (or the device).
    pub reserved_bytes: Option<usize>,
    /// Bytes of it handed out.
    pub used_bytes: Option<usize>,
    /// Bytes of it held free for reuse.
    pub free_bytes: Option<usize>,
    /// The largest free block.
    pub largest_free_block: Option<usize>,
    /// Free bytes by raw stream handle (the stream's free list).
    pub free_bytes_by_stream: Option<Vec<(usize, usize)>>,
    /// A cap on the bytes outstanding (the limiting adaptor, the simulated
    /// device's capacity).
    pub limit_bytes: Option<usize>,
    /// Chunks held from the upstream, by address.
    pub chunks: Option<Vec<Chunk>>,
    /// Blocks, by address.
    pub blocks: Option<Vec<Block>>,
    /// Graph-private pools.
    pub graph_memory: Option<GraphMemoryStats>,
    /// A statistics adaptor's counters.
    pub counters: Option<Counters>,
    /// A tracking adaptor's live allocations.
    pub live_allocations: Option<Vec<LiveAllocation>>,
}

impl LayerState {
    /// A layer that knows nothing but its names.
    pub fn new(name: &str, type_name: &str) -> Self {
        LayerState {
            name: name.to_string(),
            type_name: type_name.to_string(),
            reserved_bytes: None,
            used_bytes: None,
            free_bytes: None,
            largest_free_block: None,
            free_bytes_by_stream: None,
            limit_bytes: None,
            chunks: None,
            blocks: None,
            graph_memory: None,
            counters: None,
            live_allocations: None,
        }
    }

    /// Sets the free bytes and largest free block from `stats`.
    pub fn set_free_stats(&mut self, stats: FreeBlockStats) {
        self.free_bytes = Some(stats.free_bytes);
        self.largest_free_block = Some(stats.largest_free_block);
    }

    /// `1 - largest_free_block / free_bytes` (0 without free bytes), where
    /// both are known.
    pub fn fragmentation(&self) -> Option<f64> {
        let free = self.free_bytes?;
        let largest = self.largest_free_block?;
        Some(if free == 0 {
            0.0
        } else {
            1.0 - largest as f64 / free as f64
        })
    }

    /// Keeps the `n` largest free and the `n` largest used blocks (in
    /// address order), as an out-of-memory report does.
    pub fn cut_blocks(&mut self, n: usize) {
        if let Some(blocks) = &mut self.blocks {
            let mut keep = Vec::new();
            for state in [BlockState::Free, BlockState::Used] {
                let mut of: Vec<Block> = blocks.iter().filter(|b| b.state == state).cloned().collect();
                of.sort_by(|a, b| b.size.cmp(&a.size).then(a.address.cmp(&b.address)));
                of.truncate(n);
                keep.extend(of);
            }
            keep.sort_by_key(|b| b.address);
            *blocks = keep;
        }
    }
}

/// The layer state the trait's default gives: the names, free-block
/// statistics and graph memory, where the resource reports them.
pub(crate) fn default_layer_state(
    type_name: &'static str,
    free: Option<FreeBlockStats>,
    graph: Option<GraphMemoryStats>,
) -> LayerState {
    let short = short_type_name(type_name);
    let mut l = LayerState::new(&layer_name(&short), &short);
    if let Some(s) = free {
        l.set_free_stats(s);
    }
    l.graph_memory = graph;
    l
}

/// `rmm::mr::pool::PoolMemoryResource<rmm::mr::SharedResource>` →
/// `PoolMemoryResource`.
pub(crate) fn short_type_name(full: &str) -> String {
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base).to_string()
}

/// `PoolMemoryResource` → `pool`, `StatisticsAdaptor` → `statistics`,
/// `CudaAsyncMemoryResource` → `cuda_async`.
pub(crate) fn layer_name(short: &str) -> String {
    let stem = short
        .strip_suffix("MemoryResource")
        .or_else(|| short.strip_suffix("Adaptor"))
        .unwrap_or(short);
    let mut out = String::new();
    for (i, c) in stem.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_type() {
        let s = short_type_name("rmm::mr::pool::PoolMemoryResource<rmm::mr::resource::SharedResource>");
        assert_eq!(s, "PoolMemoryResource");
        assert_eq!(layer_name(&s), "pool");
        assert_eq!(layer_name("CudaAsyncMemoryResource"), "cuda_async");
        assert_eq!(layer_name("StatisticsAdaptor"), "statistics");
    }

    #[test]
    fn cut_keeps_the_largest_of_each_state() {
        let mut l = LayerState::new("pool", "PoolMemoryResource");
        let blocks = (0..10u64)
            .map(|i| Block {
                address: i * 4096,
                size: (i as usize + 1) * 256,
                state: if i % 2 == 0 {
                    BlockState::Free
                } else {
                    BlockState::Used
                },
                stream: None,
            })
            .collect();
        l.blocks = Some(blocks);
        l.cut_blocks(2);
        let kept: Vec<u64> = l.blocks.unwrap().iter().map(|b| b.address / 4096).collect();
        assert_eq!(kept, vec![6, 7, 8, 9]);
    }
}
