//! [`SimulatedMemoryResource`]: addresses without memory.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
/// Addresses are handed out in increasing order and never reused, so a
/// use-after-free in a sub-allocator shows up as overlapping live blocks. A
/// free of an unknown pointer or with a wrong size is logged and ignored.
/// Streams are never touched. Any power-of-two alignment is honoured.
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

#[derive(Debug, Default)]
struct State {
    next: u64,
    live: HashMap<u64, usize>,
    allocated: usize,
    peak: usize,
    bad_frees: usize,
}

impl SimulatedMemoryResource {
    /// A simulated device of `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        SimulatedMemoryResource {
            inner: Arc::new(Mutex::new(State {
                next: BASE,
                ..State::default()
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
    fn allocate(&self, bytes: usize, alignment: usize, _stream: CudaStreamView) -> Result<DevicePtr> {
        check_pow2_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        let align = alignment.max(CUDA_ALLOCATION_ALIGNMENT);
        let rounded =
            align_up(bytes, CUDA_ALLOCATION_ALIGNMENT).ok_or_else(|| oom(bytes, "size overflows".into()))?;
        let mut s = self.state();
        if rounded > self.capacity - s.allocated.min(self.capacity) {
            return Err(oom(
                bytes,
                format!(
                    "simulated device of {} bytes has {} bytes in use",
                    self.capacity, s.allocated
                ),
            ));
        }
        let start =
            align_up(s.next as usize, align).ok_or_else(|| oom(bytes, "address overflow".into()))? as u64;
        if start + rounded as u64 > BASE + RANGE {
            return Err(oom(bytes, "simulated address range exhausted".into()));
        }
        s.next = start + rounded as u64;
        s.live.insert(start, bytes);
        s.allocated += rounded;
        s.peak = s.peak.max(s.allocated);
        Ok(DevicePtr::new(start))
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, _alignment: usize, _stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        let mut s = self.state();
        match s.live.get(&ptr.addr()).copied() {
            Some(size) if size == bytes => {
                s.live.remove(&ptr.addr());
                s.allocated -= align_up(size, CUDA_ALLOCATION_ALIGNMENT).unwrap_or(size);
            }
            Some(size) => {
                s.bad_frees += 1;
                log::error!(
                    "SimulatedMemoryResource: free of {ptr} with size {bytes}, allocated with {size}"
                );
            }
            None => {
                s.bad_frees += 1;
                log::error!("SimulatedMemoryResource: free of unknown pointer {ptr} ({bytes} bytes)");
            }
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

    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn oom(requested: usize, reason: String) -> Error {
    Error::OutOfMemory {
        requested,
        reason: format!("SimulatedMemoryResource: {reason}"),
    }
}
