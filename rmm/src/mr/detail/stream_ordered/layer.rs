//! What a [`StreamOrdered`] core reports about itself for snapshots and
//! out-of-memory reports: chunks, free blocks by stream, used blocks.
#![forbid(unsafe_code)]

use super::{Backing, StreamOrdered};
use crate::mr::detail::free_list::FreeBlocks;
use crate::mr::forensics::{Block, BlockState, Chunk, LayerState};

impl<B: Backing> StreamOrdered<B> {
    /// The state of this layer: chunks held, free blocks by stream, used
    /// blocks (when frees are checked; they are the live record rounded to
    /// block sizes), reserved, used and free bytes.
    pub(crate) fn layer_state(&self, name: &str, type_name: &str) -> LayerState {
        let mut l = LayerState::new(name, type_name);
        let chunks: Vec<Chunk> = self
            .backing
            .chunks()
            .into_iter()
            .map(|(address, size)| Chunk { address, size })
            .collect();
        let reserved: usize = chunks.iter().map(|c| c.size).sum();
        let unit = self.backing.block_size(1).unwrap_or(0);
        let mut blocks = Vec::new();
        let mut by_stream = std::collections::BTreeMap::new();
        let (mut free, mut largest) = (0usize, 0usize);
        let lists = self.locked();
        for (slot, sl) in self.lists.iter().zip(&lists) {
            let mut on_stream = 0usize;
            for (address, n) in sl.list.blocks() {
                let size = if n == 0 { unit } else { n };
                on_stream += size;
                largest = largest.max(size);
                blocks.push(Block {
                    address,
                    size,
                    state: BlockState::Free,
                    stream: Some(slot.key.raw()),
                });
            }
            free += on_stream;
            // Per-thread default streams of several threads share a handle.
            *by_stream.entry(slot.key.raw()).or_insert(0usize) += on_stream;
        }
        for (address, bytes) in lists
            .iter()
            .flat_map(|l| l.live.iter().flat_map(|live| live.iter()))
        {
            blocks.push(Block {
                address,
                size: self.backing.block_size(bytes).unwrap_or(bytes),
                state: BlockState::Used,
                stream: None,
            });
        }
        drop(lists);
        blocks.sort_by_key(|b| b.address);
        l.blocks = Some(blocks);
        l.reserved_bytes = Some(reserved);
        l.used_bytes = Some(reserved.saturating_sub(free));
        l.free_bytes = Some(free);
        l.largest_free_block = Some(largest);
        l.free_bytes_by_stream = Some(by_stream.into_iter().collect());
        l.chunks = Some(chunks);
        l
    }
}
