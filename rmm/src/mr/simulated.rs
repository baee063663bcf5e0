//! [`SimulatedMemoryResource`]: addresses without memory.

use crate::mr::forensics::{reported, Block, BlockState, LayerState};
use std::sync::{Arc, Mutex};

use super::detail::free_list::CoalescingFreeList;
use super::detail::live_set::{log_bad_free, LiveMap};
use super::{check_pow2_alignment, MemoryResource};
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// First simulated address: far from null, 256-aligned.
const BASE: u64 = 1 << 40;
/// Size of the simulated address range (128 TiB).
const RANGE: u64 = 1 << 47;

/// A resource that hands out addresses from a large simulated range and never
/// touches memory, so sub-allocators, adaptors and log replays run on
/// machines without a GPU (RMM's `simulated_memory_resource`, plus a
/// capacity and checks).
///
/// It simulates a device of `capacity` bytes: an allocation that would take
/// the live bytes over the capacity fails with [`Error::OutOfMemory`].
/// Any capacity is accepted (sizes are checked, never overflow); requests
/// beyond the capacity or the 128 TiB simulated address range are
/// [`Error::OutOfMemory`]. Freed addresses are reused (best fit over a
/// coalescing free list), so allocate/free cycles never run out. A free
/// that names no live allocation (double free, foreign, never-allocated or
/// interior pointer) or a wrong size is logged at error level, counted in
/// [`bad_frees`](Self::bad_frees) and ignored. Streams are never touched.
/// Any power-of-two alignment is honoured; anything else is
/// [`Error::BadAlloc`].
///
/// ```
/// use rmm::mr::{MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SimulatedMemoryResource::new(1 << 20);
/// let p = sim.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// assert_eq!(sim.allocated_bytes(), 1024);
/// assert!(sim.allocate(1 << 20, 256, CudaStreamView::DEFAULT).unwrap_err().is_out_of_memory());
/// unsafe { sim.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
/// assert_eq!(sim.allocated_bytes(), 0);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimulatedMemoryResource {
    inner: Arc<Mutex<State>>,
    capacity: usize,
}

#[derive(Debug)]
struct State {
    /// Free simulated addresses.
    free: CoalescingFreeList,
    /// Live allocations: address to requested bytes.
    live: LiveMap,
    allocated: usize,
    peak: usize,
    bad_frees: usize,
}

impl SimulatedMemoryResource {
    /// A simulated device of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        let mut free = CoalescingFreeList::new();
        free.insert(BASE, RANGE as usize, |_| false);
        SimulatedMemoryResource {
            inner: Arc::new(Mutex::new(State {
                free,
                live: LiveMap::default(),
                allocated: 0,
                peak: 0,
                bad_frees: 0,
            })),
            capacity,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The simulated device size.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes currently allocated (rounded up to 256 per allocation).
    pub fn allocated_bytes(&self) -> usize {
        self.state().allocated
    }

    /// Highest [`allocated_bytes`](Self::allocated_bytes) seen.
    pub fn peak_bytes(&self) -> usize {
        self.state().peak
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.state().live.len()
    }

    /// Frees that named an unknown pointer or a wrong size.
    pub fn bad_frees(&self) -> usize {
        self.state().bad_frees
    }
}

impl MemoryResource for SimulatedMemoryResource {
    fn layer_state(&self) -> LayerState {
        let s = self.state();
        let mut l = LayerState::new("simulated", "SimulatedMemoryResource");
        let left = self.capacity.saturating_sub(s.allocated);
        l.reserved_bytes = Some(s.allocated);
        l.used_bytes = Some(s.allocated);
        l.limit_bytes = Some(self.capacity);
        // The address range is far larger than the capacity: what is left
        // of the capacity is one block.
        l.free_bytes = Some(left);
        l.largest_free_block = Some(left);
        let mut blocks: Vec<Block> = s
            .live
            .iter()
            .map(|(address, bytes)| Block {
                address,
                size: align_up(bytes, CUDA_ALLOCATION_ALIGNMENT).unwrap_or(bytes),
                state: BlockState::Used,
                stream: None,
            })
            .collect();
        blocks.sort_by_key(|b| b.address);
        l.blocks = Some(blocks);
        l
    }

    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            check_pow2_alignment(alignment)?;
            if bytes == 0 {
                return Ok(DevicePtr::NULL);
            }
            let align = alignment.max(CUDA_ALLOCATION_ALIGNMENT);
            let rounded = align_up(bytes, CUDA_ALLOCATION_ALIGNMENT)
                .ok_or_else(|| oom(bytes, "size overflows".into()))?;
            let mut s = self.state();
            let fits = s
                .allocated
                .checked_add(rounded)
                .is_some_and(|n| n <= self.capacity);
            if !fits {
                return Err(oom(
                    bytes,
                    format!(
                        "simulated device of {} bytes has {} bytes in use",
                        self.capacity, s.allocated
                    ),
                ));
            }
            // Room for the alignment padding; the padding goes back at once.
            let exhausted = || oom(bytes, "simulated address range exhausted".into());
            let span = rounded
                .checked_add(align - CUDA_ALLOCATION_ALIGNMENT)
                .ok_or_else(exhausted)?;
            let block = s.free.allocate(span).ok_or_else(exhausted)?;
            let start = align_up(block as usize, align).ok_or_else(exhausted)? as u64;
            let head = (start - block) as usize;
            let tail = span - head - rounded;
            if head > 0 {
                s.free.insert(block, head, |_| false);
            }
            if tail > 0 {
                s.free.insert(start + rounded as u64, tail, |_| false);
            }
            s.live.insert(start, bytes);
            s.allocated += rounded;
            s.peak = s.peak.max(s.allocated);
            Ok(DevicePtr::new(start))
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, _alignment: usize, _stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        let mut s = self.state();
        if let Err(bad) = s.live.remove(ptr.addr(), bytes) {
            s.bad_frees += 1;
            log_bad_free("SimulatedMemoryResource", ptr.addr(), bytes, bad);
            return;
        }
        // `bytes` was rounded without overflow when it was allocated.
        let rounded = align_up(bytes, CUDA_ALLOCATION_ALIGNMENT).unwrap_or(bytes);
        s.allocated -= rounded;
        if !s.free.insert(ptr.addr(), rounded, |_| false) {
            log::error!(
                "SimulatedMemoryResource: {ptr}+{rounded} was live and free at once (internal error)"
            );
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<SimulatedMemoryResource>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }

    fn is_simulated(&self) -> bool {
        true
    }
}

fn oom(requested: usize, reason: String) -> Error {
    Error::OutOfMemory {
        requested,
        reason: format!("SimulatedMemoryResource: {reason}"),
        report: None,
    }
}
