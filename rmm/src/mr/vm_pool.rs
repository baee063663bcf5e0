//! [`VirtualPoolMemoryResource`]: a pool that grows in place inside one
//! reserved virtual address range.

use std::fmt;

use super::detail::failed_frees::failed_free;
use super::detail::free_list::CoalescingFreeList;
use super::detail::shell::{stream_ordered_memory_resource, Props, StreamOrderedResource};
use super::detail::stream_ordered::{Backing, Heads};
use super::pool::check_sizes;
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::{current_device, DeviceGuard};
use crate::driver;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Options of [`VirtualPoolMemoryResource`].
///
/// ```
/// use rmm::mr::VirtualPoolOptions;
/// let o = VirtualPoolOptions::default().initial_pool_size(1 << 30).maximum_pool_size(1 << 34);
/// assert_eq!((o.initial_pool_size, o.maximum_pool_size), (1 << 30, Some(1 << 34)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VirtualPoolOptions {
    /// Bytes mapped at construction (a multiple of 256, rounded up to the
    /// allocation granularity; default 0).
    pub initial_pool_size: usize,
    /// Size of the reserved address range, the most the pool can map (a
    /// multiple of 256, rounded up to the granularity); `None`: the device's
    /// total memory.
    pub maximum_pool_size: Option<usize>,
    /// Trust frees instead of checking them against the live allocations
    /// (default `false`: checked), as [`PoolOptions::unchecked_frees`](super::PoolOptions::unchecked_frees).
    pub unchecked_frees: bool,
}

impl VirtualPoolOptions {
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

pub(crate) struct VmBacking {
    device: i32,
    base: u64,
    reserved: usize,
    granularity: usize,
    /// Bytes mapped from `base` on.
    mapped: usize,
    /// Mapped pieces `(start, size)`, in address order (each one growth step).
    pieces: Vec<(u64, usize)>,
}

impl VmBacking {
    fn round(&self, n: usize) -> usize {
        align_up(n, self.granularity).unwrap_or(usize::MAX)
    }

    /// Maps `bytes` more at the end of the mapped range.
    fn map_more(&mut self, bytes: usize) -> Result<u64> {
        let at = self.base + self.mapped as u64;
        let handle = driver::vmm_create(self.device, bytes)?;
        // SAFETY: `handle` was just created; `[at, at + bytes)` follows the
        // mapped part of our reservation, and the callers keep `bytes` within
        // what is left of it, so nothing is mapped there.
        let mapped = unsafe { driver::vmm_map(DevicePtr::new(at), bytes, handle, self.device) };
        // SAFETY: the handle came from vmm_create; a successful mapping keeps
        // the memory alive until it is unmapped, so the handle is not needed.
        if let Err(e) = unsafe { driver::vmm_release(handle) } {
            failed_free("VirtualPoolMemoryResource", "cuMemRelease", &e);
        }
        mapped?;
        self.pieces.push((at, bytes));
        self.mapped += bytes;
        Ok(at)
    }

    fn unmap_all(&mut self) {
        while let Some((at, n)) = self.pieces.pop() {
            // SAFETY: the piece was mapped by `map_more` and the pool is gone.
            if let Err(e) = unsafe { driver::vmm_unmap(DevicePtr::new(at), n) } {
                failed_free("VirtualPoolMemoryResource", "cuMemUnmap", &e);
            }
        }
        self.mapped = 0;
    }
}

impl Backing for VmBacking {
    type List = CoalescingFreeList;

    fn release(&mut self) {
        if self.reserved == 0 {
            return;
        }
        self.unmap_all();
        // SAFETY: the reservation came from vmm_reserve and nothing is mapped in it.
        if let Err(e) = unsafe { driver::vmm_free_reservation(DevicePtr::new(self.base), self.reserved) } {
            failed_free("VirtualPoolMemoryResource", "cuMemAddressFree", &e);
        }
        self.reserved = 0;
    }

    fn max_allocation(&self) -> usize {
        self.reserved
    }

    fn block_size(&self, bytes: usize) -> Option<usize> {
        crate::align::align_up(bytes, crate::align::CUDA_ALLOCATION_ALIGNMENT)
    }

    fn heads(&self) -> Heads {
        Heads::Nowhere
    }

    fn contains(&self, addr: u64, size: usize) -> bool {
        addr >= self.base
            && addr
                .checked_add(size as u64)
                .is_some_and(|e| e <= self.base + self.mapped as u64)
    }

    fn grow(&mut self, size: usize, _stream: CudaStreamView, list: &mut CoalescingFreeList) -> Result<()> {
        let end = self.base + self.mapped as u64;
        let tail = list.block_ending_at(end).map_or(0, |(_, n)| n);
        let room = self.reserved - self.mapped;
        let need = self.round(size.saturating_sub(tail));
        if need > room {
            let e = Error::OutOfMemory {
                requested: size,
                reason: format!(
                    "VirtualPoolMemoryResource: maximum pool size exceeded (mapped {}, reserved {}, free at the end {tail})",
                    self.mapped, self.reserved
                ), report: None,
};
            log::error!("{e}");
            return Err(e);
        }
        let mut try_size = self.round(need.max(self.mapped)).min(room);
        loop {
            match self.map_more(try_size) {
                Ok(at) => {
                    list.insert(at, try_size, |_| false);
                    return Ok(());
                }
                Err(e) if e.is_out_of_memory() && try_size > need => {
                    try_size = self.round((try_size / 2).max(need));
                }
                Err(e) if e.is_out_of_memory() => {
                    let e = Error::OutOfMemory {
                        requested: size,
                        reason: format!(
                            "VirtualPoolMemoryResource: failed to map {try_size} more bytes (mapped {}): {e}",
                            self.mapped
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

    fn chunks(&self) -> Vec<(u64, usize)> {
        if self.mapped == 0 {
            Vec::new()
        } else {
            vec![(self.base, self.mapped)]
        }
    }

    fn name(&self) -> &'static str {
        "VirtualPoolMemoryResource"
    }
}

/// A coalescing best-fit pool that reserves one virtual address range and
/// grows by mapping physical memory (`cuMemCreate`, `cuMemMap`,
/// `cuMemSetAccess`) at its end, so the pool stays one contiguous range:
/// free blocks merge across growth steps, and a pool that grew from 256 B
/// towards 1 KiB can serve 1 KiB (RMM's pool cannot: its issue 1957).
/// [`release_unused`](Self::release_unused) unmaps free memory at the end
/// of the range and gives it back to the driver.
///
/// Same allocation rules as [`PoolMemoryResource`](super::PoolMemoryResource)
/// (256-byte rounding, per-stream free lists with events, growth by the
/// pool size, halving retry, [`Error::OutOfMemory`] with the sizes). Needs a
/// GPU with virtual memory management. Thread safety: one mutex; clones
/// share the pool.
///
/// ```no_run
/// use rmm::mr::{MemoryResource, VirtualPoolMemoryResource, VirtualPoolOptions};
/// let pool = VirtualPoolMemoryResource::new(
///     VirtualPoolOptions::default().initial_pool_size(64 << 20).maximum_pool_size(1 << 30),
/// )?;
/// let p = pool.allocate(256 << 20, 256, rmm::CudaStreamView::DEFAULT)?; // grows in place
/// unsafe { pool.deallocate(p, 256 << 20, 256, rmm::CudaStreamView::DEFAULT) };
/// let released = pool.release_unused()?;
/// assert!(released > 0);
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct VirtualPoolMemoryResource {
    shell: StreamOrderedResource<VmBacking>,
}

stream_ordered_memory_resource!(VirtualPoolMemoryResource);

impl fmt::Debug for VirtualPoolMemoryResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shell.state();
        f.debug_struct("VirtualPoolMemoryResource")
            .field("base", &DevicePtr::new(s.backing.base))
            .field("reserved", &s.backing.reserved)
            .field("mapped", &s.backing.mapped)
            .finish()
    }
}

impl VirtualPoolMemoryResource {
    /// A pool on the current device.
    ///
    /// # Errors
    /// [`Error::Logic`] for sizes that are not multiples of 256, an initial
    /// size above the maximum, or a device without virtual memory
    /// management; the driver's error when reserving or mapping fails.
    pub fn new(options: VirtualPoolOptions) -> Result<Self> {
        check_sizes(
            "VirtualPoolMemoryResource",
            options.initial_pool_size,
            options.maximum_pool_size,
        )?;
        let device = current_device()?;
        if !driver::supports_virtual_memory(device.0)? {
            return Err(Error::Logic(format!(
                "VirtualPoolMemoryResource: {device} has no virtual memory management"
            )));
        }
        let granularity = driver::vmm_granularity(device.0)?.max(CUDA_ALLOCATION_ALIGNMENT);
        let max = match options.maximum_pool_size {
            Some(m) => m,
            None => driver::mem_get_info()?.1,
        };
        let reserved = align_up(max.max(1), granularity)
            .ok_or_else(|| Error::Logic(format!("VirtualPoolMemoryResource: maximum {max} too large")))?;
        let base = driver::vmm_reserve(reserved, granularity)?;
        let backing = VmBacking {
            device: device.0,
            base: base.addr(),
            reserved,
            granularity,
            mapped: 0,
            pieces: Vec::new(),
        };
        let props = Props {
            simulated: false,
            device: Some(device),
            device_accessible: true,
            host_accessible: false,
        };
        let mr = VirtualPoolMemoryResource {
            shell: StreamOrderedResource::new(props.core(backing, options.unchecked_frees), props),
        };
        if options.initial_pool_size > 0 {
            let mut s = mr.shell.state();
            let n = s.backing.round(options.initial_pool_size).min(reserved);
            let at = s.backing.map_more(n)?;
            s.add_fresh(at, n, CudaStreamView::DEFAULT);
        }
        Ok(mr)
    }

    /// Bytes of physical memory mapped.
    pub fn pool_size(&self) -> usize {
        self.shell.state().backing.mapped
    }

    /// Size of the reserved address range.
    pub fn reserved_size(&self) -> usize {
        self.shell.state().backing.reserved
    }

    /// The physical allocation granularity.
    pub fn granularity(&self) -> usize {
        self.shell.state().backing.granularity
    }

    /// Free bytes inside the pool, over all streams.
    pub fn free_bytes(&self) -> usize {
        self.shell.free_bytes()
    }

    /// Synchronises the device, then unmaps every growth step that lies
    /// entirely in the free block at the end of the mapped range and returns
    /// its memory to the driver. Returns the bytes released.
    ///
    /// # Errors
    /// The driver's error from synchronising; unmapping errors are logged
    /// and stop the trim.
    pub fn release_unused(&self) -> Result<usize> {
        // The device is always set (`new` binds the current one).
        let _guard = self.shell.props().device.map(DeviceGuard::new).transpose()?;
        let mut s = self.shell.state();
        crate::graph::wait_for_other_captures();
        driver::device_synchronize()?;
        let end = s.backing.base + s.backing.mapped as u64;
        let mut found: Option<(usize, u64, usize)> = None;
        let mut i = 0usize;
        s.for_each_list(|list, _| {
            if found.is_none() {
                if let Some((a, n)) = list.block_ending_at(end) {
                    list.remove(a);
                    found = Some((i, a, n));
                }
            }
            i += 1;
        });
        let Some((which, start, _)) = found else {
            return Ok(0);
        };
        let mut released = 0usize;
        while let Some(&(at, n)) = s.backing.pieces.last() {
            if at < start {
                break;
            }
            // SAFETY: the piece lies in a free block and the device is idle.
            if let Err(e) = unsafe { driver::vmm_unmap(DevicePtr::new(at), n) } {
                failed_free("VirtualPoolMemoryResource", "cuMemUnmap", &e);
                break;
            }
            s.backing.pieces.pop();
            s.backing.mapped -= n;
            released += n;
        }
        let new_end = s.backing.base + s.backing.mapped as u64;
        if new_end > start {
            let mut j = 0usize;
            s.for_each_list(|list, _| {
                if j == which {
                    list.insert(start, (new_end - start) as usize, |_| false);
                }
                j += 1;
            });
        }
        Ok(released)
    }
}
