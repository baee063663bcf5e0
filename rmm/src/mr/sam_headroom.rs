//! [`SamHeadroomMemoryResource`]: system memory that keeps a headroom of
//! device memory free.

use crate::mr::forensics::reported;
use std::sync::{Arc, Mutex, MutexGuard};

use super::detail::free_list::AddrMap;
use super::detail::graph_memory::{GraphMemory, OwnSharedPath};
use super::detail::headroom::{split, Split};
use super::system::{pageable_access_device, HostAllocations};
use super::{GraphMemoryStats, MemoryResource, SimulatedMemoryResource};
use crate::align::CUDA_ALLOCATION_ALIGNMENT;
use crate::device::{DeviceGuard, DeviceId};
use crate::driver;
use crate::error::Result;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// System memory (as [`SystemMemoryResource`]) that keeps `headroom` bytes
/// of device memory free (RMM's `sam_headroom_memory_resource`).
///
/// System memory that the GPU touches migrates to the GPU and stays there,
/// so an oversubscribed GPU makes other CUDA calls fail with out-of-memory.
/// At every allocation this resource reads the device's free memory and
/// advises (`cuMemAdvise`, preferred location) the first
/// `min(free - headroom, bytes)` bytes, rounded down to 256, to the device
/// and the rest to the host. The check costs a driver call per allocation:
/// use it for large allocations (e.g. behind a
/// [`BinningMemoryResource`](crate::mr::BinningMemoryResource) whose bins
/// take the small ones).
///
/// Systems that run it for real are those of [`SystemMemoryResource`]:
/// GPUs with pageable memory access (ATS on Grace Hopper / Grace
/// Blackwell, Linux HMM). Elsewhere [`new`](Self::new) returns
/// [`Error::Logic`](crate::Error::Logic) naming the device and
/// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`.
///
/// [`simulated`](Self::simulated) runs the same decisions without a GPU:
/// the memory is real host memory, the free device memory is that of a
/// [`SimulatedMemoryResource`], and the device part of each allocation is
/// allocated on it (as if migrated) until the allocation is freed.
///
/// Frees are checked as the system resource checks them (logged, counted
/// in [`bad_frees`](Self::bad_frees), ignored); `deallocate` synchronises
/// the stream before freeing. Clones share state and compare equal.
///
/// ```
/// use rmm::mr::{MemoryResource, SamHeadroomMemoryResource, SimulatedMemoryResource};
/// let device = SimulatedMemoryResource::new(10 << 20); // 10 MiB free
/// let mr = SamHeadroomMemoryResource::simulated(4 << 20, device.clone());
/// let a = mr.allocate_sync(4 << 20, 256)?; // fits above the headroom
/// assert_eq!(mr.device_bytes(), 4 << 20);
/// let b = mr.allocate_sync(4 << 20, 256)?; // 2 MiB left above it
/// assert_eq!(mr.device_bytes(), 6 << 20);
/// assert_eq!(device.allocated_bytes(), 6 << 20);
/// // SAFETY: both came from `mr` with these arguments.
/// unsafe {
///     mr.deallocate_sync(a, 4 << 20, 256);
///     mr.deallocate_sync(b, 4 << 20, 256);
/// }
/// assert_eq!((mr.device_bytes(), device.allocated_bytes()), (0, 0));
/// # Ok::<(), rmm::Error>(())
/// ```
///
/// [`SystemMemoryResource`]: crate::mr::SystemMemoryResource
#[derive(Debug, Clone)]
pub struct SamHeadroomMemoryResource {
    inner: Arc<Inner>,
    /// The graph-private pools.
    graph: Arc<GraphMemory>,
}

#[derive(Debug)]
struct Inner {
    host: HostAllocations,
    headroom: usize,
    device: Device,
    /// The device part of each live allocation, by address. Lock order: a
    /// leaf, held for one hash operation; never across a driver call or
    /// another lock.
    parts: Mutex<AddrMap<Part>>,
}

/// Where the free device memory is read from and the advice goes.
#[derive(Debug)]
enum Device {
    /// A real device: `cuMemGetInfo` and `cuMemAdvise`.
    Gpu(DeviceId),
    /// A simulated device: its free bytes; device parts are allocated on it.
    Simulated(SimulatedMemoryResource),
}

/// The device part of one allocation.
#[derive(Debug, Clone, Copy)]
struct Part {
    /// Bytes at the start advised to the device.
    device: usize,
    /// On a simulated device, the block that stands for them (else null).
    simulated: DevicePtr,
}

impl SamHeadroomMemoryResource {
    /// System memory for the current device, keeping `headroom` bytes of
    /// it free.
    ///
    /// # Errors
    /// [`Error::Logic`](crate::Error::Logic) when the current device cannot
    /// access pageable memory (the message names the device and
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`); the driver's error
    /// when there is no usable GPU.
    pub fn new(headroom: usize) -> Result<Self> {
        let device = pageable_access_device("SamHeadroomMemoryResource")?;
        Ok(Self::with(headroom, Device::Gpu(device)))
    }

    /// The same decisions over a simulated device (see the type's docs):
    /// no driver call is made and the resource reports
    /// [`is_simulated`](MemoryResource::is_simulated).
    pub fn simulated(headroom: usize, device: SimulatedMemoryResource) -> Self {
        Self::with(headroom, Device::Simulated(device))
    }

    fn with(headroom: usize, device: Device) -> Self {
        let gpu = match device {
            Device::Gpu(d) => Some(d),
            Device::Simulated(_) => None,
        };
        SamHeadroomMemoryResource {
            inner: Arc::new(Inner {
                host: HostAllocations::new("SamHeadroomMemoryResource", gpu),
                headroom,
                device,
                parts: Mutex::new(AddrMap::default()),
            }),
            graph: GraphMemory::new(),
        }
    }

    fn parts(&self) -> MutexGuard<'_, AddrMap<Part>> {
        self.inner.parts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The device memory kept free, in bytes.
    pub fn headroom(&self) -> usize {
        self.inner.headroom
    }

    /// Bytes of the live allocations advised to the device.
    pub fn device_bytes(&self) -> usize {
        self.parts().values().map(|p| p.device).sum()
    }

    /// Bytes allocated and not yet freed (as requested).
    pub fn allocated_bytes(&self) -> usize {
        self.inner.host.allocated_bytes()
    }

    /// Number of live allocations.
    pub fn live_allocations(&self) -> usize {
        self.inner.host.live_allocations()
    }

    /// Frees refused so far (unknown pointer or wrong size).
    pub fn bad_frees(&self) -> usize {
        self.inner.host.bad_frees()
    }

    /// Splits the new allocation `[p, p + bytes)` and gives the advice (or,
    /// simulated, takes the device part from the simulated device).
    fn place(&self, p: DevicePtr, bytes: usize) -> Result<Part> {
        let headroom = self.inner.headroom;
        match &self.inner.device {
            Device::Gpu(device) => {
                let _current = DeviceGuard::new(*device)?;
                let (free, _) = driver::mem_get_info()?;
                let Split {
                    device: on_device,
                    host,
                } = split(bytes, free, headroom, CUDA_ALLOCATION_ALIGNMENT);
                if on_device > 0 {
                    driver::mem_advise_preferred_location(p, on_device, Some(device.value()))?;
                }
                if host > 0 {
                    driver::mem_advise_preferred_location(p.offset(on_device), host, None)?;
                }
                Ok(Part {
                    device: on_device,
                    simulated: DevicePtr::NULL,
                })
            }
            Device::Simulated(sim) => {
                let free = sim.capacity().saturating_sub(sim.allocated_bytes());
                let s = split(bytes, free, headroom, CUDA_ALLOCATION_ALIGNMENT);
                if s.device == 0 {
                    return Ok(Part {
                        device: 0,
                        simulated: DevicePtr::NULL,
                    });
                }
                // Another thread may have taken the room meanwhile: advice is
                // only advice, so the part then stays on the host.
                Ok(
                    match sim.allocate(s.device, CUDA_ALLOCATION_ALIGNMENT, CudaStreamView::DEFAULT) {
                        Ok(q) => Part {
                            device: s.device,
                            simulated: q,
                        },
                        Err(_) => Part {
                            device: 0,
                            simulated: DevicePtr::NULL,
                        },
                    },
                )
            }
        }
    }

    /// Gives back the simulated block of a part, if any.
    fn release_part(&self, part: Part) {
        if let (Device::Simulated(sim), false) = (&self.inner.device, part.simulated.is_null()) {
            // SAFETY: `part.simulated` came from `sim` with these arguments
            // and stands for no memory.
            unsafe {
                sim.deallocate(
                    part.simulated,
                    part.device,
                    CUDA_ALLOCATION_ALIGNMENT,
                    CudaStreamView::DEFAULT,
                )
            };
        }
    }
}

impl MemoryResource for SamHeadroomMemoryResource {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            if let Some(p) = self.graph.allocate_own(self, bytes, alignment, stream)? {
                return Ok(p);
            }
            let host = &self.inner.host;
            let p = host.allocate(bytes, alignment)?;
            if p.is_null() {
                return Ok(p);
            }
            match self.place(p, bytes) {
                Ok(part) => {
                    let clash = self.parts().insert(p.addr(), part);
                    if let Some(old) = clash {
                        log::error!(
                            "SamHeadroomMemoryResource: {p} had a device part while free (internal error)"
                        );
                        self.release_part(old);
                    }
                    Ok(p)
                }
                Err(e) => {
                    // Never used: freed without synchronising.
                    if host.take(p, bytes) {
                        host.free_taken(p, bytes, None);
                    }
                    Err(e)
                }
            }
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if self.graph.deallocate_own(self, ptr, bytes, alignment, stream) {
            return;
        }
        let host = &self.inner.host;
        if !host.take(ptr, bytes) {
            return;
        }
        // Before the host memory goes back (and its address can be handed
        // out again).
        let part = self.parts().remove(&ptr.addr());
        if let Some(part) = part {
            self.release_part(part);
        }
        host.free_taken(ptr, bytes, Some(stream));
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<SamHeadroomMemoryResource>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }

    fn is_host_accessible(&self) -> bool {
        true
    }

    fn is_simulated(&self) -> bool {
        matches!(self.inner.device, Device::Simulated(_))
    }

    fn graph_memory(&self) -> Option<GraphMemoryStats> {
        Some(self.graph.stats())
    }
}

impl OwnSharedPath for SamHeadroomMemoryResource {
    const NAME: &'static str = "SamHeadroomMemoryResource";
    fn handles(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_device_part_shrinks_as_the_headroom_nears() {
        let sim = SimulatedMemoryResource::new(100 * MIB);
        let mr = SamHeadroomMemoryResource::simulated(30 * MIB, sim.clone());
        assert!(mr.is_simulated() && mr.is_host_accessible());
        let s = CudaStreamView::DEFAULT;
        let mut live = Vec::new();
        // 70 MiB above the headroom: 3 x 20 MiB fit, the 4th gets 10 MiB,
        // the 5th nothing.
        for expected in [20, 40, 60, 70, 70] {
            live.push(mr.allocate(20 * MIB, 256, s).unwrap());
            assert_eq!(mr.device_bytes(), expected * MIB);
            assert_eq!(sim.allocated_bytes(), expected * MIB);
        }
        assert_eq!(mr.allocated_bytes(), 100 * MIB);
        // Memory used by someone else lowers the free memory too.
        // SAFETY: each came from `mr` with these arguments.
        unsafe { mr.deallocate(live.remove(0), 20 * MIB, 256, s) };
        assert_eq!(mr.device_bytes(), 50 * MIB);
        let other = sim.allocate(15 * MIB, 256, s).unwrap();
        live.push(mr.allocate(20 * MIB + 100, 256, s).unwrap());
        // 100 - 30 - 50 - 15 = 5 MiB above the headroom.
        assert_eq!(mr.device_bytes(), 55 * MIB);
        // SAFETY: `other` came from `sim` with these arguments and holds no memory.
        unsafe { sim.deallocate(other, 15 * MIB, 256, s) };
        let sizes = [20 * MIB, 20 * MIB, 20 * MIB, 20 * MIB, 20 * MIB + 100];
        for (p, b) in live.into_iter().zip(sizes) {
            // SAFETY: `p` came from `mr` with these arguments and is not used again.
            unsafe { mr.deallocate(p, b, 256, s) };
        }
        assert_eq!(
            (mr.device_bytes(), mr.allocated_bytes(), sim.allocated_bytes()),
            (0, 0, 0)
        );
        assert_eq!(mr.bad_frees(), 0);
    }

    #[test]
    fn unaligned_room_rounds_the_device_part_down() {
        let sim = SimulatedMemoryResource::new(10_000);
        let mr = SamHeadroomMemoryResource::simulated(1000, sim.clone());
        let p = mr.allocate_sync(20_000, 256).unwrap();
        // 9000 above the headroom: 35 * 256 = 8960 on the device.
        assert_eq!(mr.device_bytes(), 8960);
        // SAFETY: `p` came from `mr` with these arguments and is not used again.
        unsafe { mr.deallocate_sync(p, 20_000, 256) };
        assert_eq!(sim.allocated_bytes(), 0);
    }

    #[test]
    fn bad_frees_leave_the_device_part_alone() {
        let sim = SimulatedMemoryResource::new(100 * MIB);
        let mr = SamHeadroomMemoryResource::simulated(0, sim.clone());
        let s = CudaStreamView::DEFAULT;
        let p = mr.allocate(MIB, 256, s).unwrap();
        // SAFETY: frees are checked; the bad ones are refused, never passed on.
        unsafe {
            mr.deallocate(p, MIB - 1, 256, s);
            mr.deallocate(p.offset(256), MIB - 256, 256, s);
            SamHeadroomMemoryResource::simulated(0, sim.clone()).deallocate(p, MIB, 256, s);
        }
        assert_eq!(
            (mr.bad_frees(), mr.device_bytes(), sim.allocated_bytes()),
            (2, MIB, MIB)
        );
        // SAFETY: `p` came from `mr` with these arguments and is not used again.
        unsafe { mr.deallocate(p, MIB, 256, s) };
        // SAFETY: a double free, which is refused, never passed on.
        unsafe { mr.deallocate(p, MIB, 256, s) };
        assert_eq!(
            (mr.bad_frees(), mr.device_bytes(), sim.allocated_bytes()),
            (3, 0, 0)
        );
        assert_eq!(mr.allocate(0, 256, s).unwrap(), DevicePtr::NULL);
        assert!(mr.allocate(64, 3, s).is_err());
    }

    #[test]
    fn new_says_why_without_pageable_access() {
        if let Err(e) = SamHeadroomMemoryResource::new(1 << 30) {
            if crate::device::is_available() {
                let text = e.to_string();
                assert!(
                    text.contains("SamHeadroomMemoryResource")
                        && text.contains("CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS"),
                    "{text}"
                );
            }
        }
    }
}
