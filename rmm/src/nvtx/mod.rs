//! Sanitizer-visible sub-allocations: NVTX memory annotations.
//!
//! A pool hands out pieces of large upstream allocations, so to
//! compute-sanitizer's memcheck a kernel that writes one element past the
//! end of a pool allocation writes valid memory and goes unreported (RMM's
//! README warns of this). NVTX's memory API lets a sub-allocator tell the
//! tool which parts of its memory are in use: each upstream chunk is
//! registered as a *heap* of sub-allocator usage (unused until regions are
//! registered) and each allocation as a *region* of exactly the requested
//! size, unregistered when it is freed. Memcheck then reports an access
//! outside every live region as an invalid access.
//!
//! [`PoolMemoryResource`](crate::mr::PoolMemoryResource),
//! [`FixedSizeMemoryResource`](crate::mr::FixedSizeMemoryResource),
//! [`BinningMemoryResource`](crate::mr::BinningMemoryResource) and
//! [`ArenaMemoryResource`](crate::mr::ArenaMemoryResource) annotate their
//! device memory when a tool that takes memory annotations is attached
//! (compute-sanitizer names its NVTX injection library in
//! `NVTX_INJECTION64_PATH`; its `--nvtx` option is on by default since CUDA
//! 12.0). Without such a tool nothing is loaded and a resource pays one
//! branch on a flag fixed at its construction, so annotations are on by
//! default exactly where they can be seen. `RMM_NVTX=0` ([`crate::env`](mod@crate::env)) turns them
//! off, for example to compare a sanitizer run with and without them.
//! Simulated resources are never annotated, nor are sub-allocators over a
//! stream-ordered driver pool (`cuda_async`): compute-sanitizer takes no
//! heap in such memory (memcheck still sees the upstream allocation's own
//! bounds). Blocks held in binning's
//! per-stream caches stay registered (at their last size) until they go
//! back to their bin.
//!
//! ```
//! // Without a tool attached (as here), nothing is annotated.
//! if std::env::var_os("NVTX_INJECTION64_PATH").is_none() {
//!     assert!(!rmm::nvtx::memory_annotations_active());
//! }
//! ```

pub(crate) mod injection;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard, Once};

use injection::{
    HeapDesc, MemoryTool, RegionsRegisterBatch, RegionsResizeBatch, RegionsUnregisterBatch, VirtualRangeDesc,
    EXT_COMPAT_MEM, HEAP_USAGE_SUB_ALLOCATOR, MEM_TYPE_VIRTUAL_ADDRESS, REGION_REF_POINTER,
};

static ATTACH: Once = Once::new();
static TOOL: AtomicPtr<MemoryTool> = AtomicPtr::new(std::ptr::null_mut());

fn disabled_by_environment() -> bool {
    crate::env::nvtx_disabled()
}

/// The attached tool, attaching on first use.
fn tool() -> Option<&'static MemoryTool> {
    ATTACH.call_once(|| {
        if disabled_by_environment() {
            log::info!("nvtx: memory annotations turned off by {}", crate::env::NVTX);
            return;
        }
        if let Some(t) = injection::attach_from_environment() {
            log::info!("nvtx: a tool takes memory annotations; sub-allocators annotate their memory");
            TOOL.store(Box::into_raw(Box::new(t)), Ordering::Release);
        }
    });
    // SAFETY: a non-null pointer came from `Box::into_raw` and is never freed.
    unsafe { TOOL.load(Ordering::Acquire).as_ref() }
}

/// True when an attached tool (such as compute-sanitizer) takes NVTX
/// memory annotations and `RMM_NVTX` ([`crate::env`](mod@crate::env)) does not turn them off: the
/// sub-allocators then annotate the memory of resources made from now on.
pub fn memory_annotations_active() -> bool {
    tool().is_some()
}

/// What this process told the tool: heaps by start (end, handle) and live
/// regions by start (heap handle, size). Every call to the tool is made
/// under its lock, so the tool sees them in the order recorded here, and
/// only registered regions are resized or unregistered.
#[derive(Default)]
struct Registry {
    heaps: BTreeMap<u64, (u64, usize)>,
    regions: BTreeMap<u64, (usize, usize)>,
}

fn registry() -> MutexGuard<'static, Registry> {
    static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
        heaps: BTreeMap::new(),
        regions: BTreeMap::new(),
    });
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

impl Registry {
    /// The heap that holds `addr`: (end, handle).
    fn heap_holding(&self, addr: u64) -> Option<(u64, usize)> {
        self.heaps
            .range(..=addr)
            .next_back()
            .filter(|(_, &(end, _))| addr < end)
            .map(|(_, &h)| h)
    }

    /// Registers a region of `bytes` at `addr` in heap `handle`.
    fn register_region(&mut self, t: &MemoryTool, handle: usize, addr: u64, bytes: usize) {
        let range = VirtualRangeDesc::new(addr, bytes);
        let batch = RegionsRegisterBatch {
            ext_compat_id: EXT_COMPAT_MEM,
            struct_size: std::mem::size_of::<RegionsRegisterBatch>() as u16,
            region_type: MEM_TYPE_VIRTUAL_ADDRESS,
            heap: handle as *mut c_void,
            region_count: 1,
            region_desc_element_size: std::mem::size_of::<VirtualRangeDesc>(),
            region_desc_elements: std::ptr::from_ref(&range).cast(),
            region_handle_elements_out: std::ptr::null_mut(),
        };
        // SAFETY: the tool's `nvtxMemRegionsRegister`, given a batch of one
        // region that outlives the call; the heap handle is the tool's.
        unsafe { (t.regions_register)(t.domain, &batch) };
        self.regions.insert(addr, (handle, bytes));
    }

    /// Unregisters the region at `addr` if it is registered; returns its size.
    fn unregister_region(&mut self, t: &MemoryTool, addr: u64) -> Option<usize> {
        let (_, size) = self.regions.remove(&addr)?;
        let ptr = addr as *const c_void;
        let batch = RegionsUnregisterBatch {
            ext_compat_id: EXT_COMPAT_MEM,
            struct_size: std::mem::size_of::<RegionsUnregisterBatch>() as u16,
            ref_type: REGION_REF_POINTER,
            ref_count: 1,
            ref_element_size: std::mem::size_of::<*const c_void>(),
            ref_elements: &ptr,
        };
        // SAFETY: the tool's `nvtxMemRegionsUnregister`, given a batch of
        // one reference that outlives the call.
        unsafe { (t.regions_unregister)(t.domain, &batch) };
        Some(size)
    }

    /// The starts of the registered regions in `[start, end)`.
    fn regions_in(&self, start: u64, end: u64) -> Vec<u64> {
        self.regions.range(start..end).map(|(&a, _)| a).collect()
    }
}

/// Whether a resource over memory that is `simulated` (or not) annotates.
/// Simulated memory is annotated only for this module's tests, on the
/// thread that records.
pub(crate) fn annotates(simulated: bool) -> bool {
    #[cfg(test)]
    let simulated = simulated && !tests::recording_here();
    !simulated && tool().is_some()
}

/// A sub-allocator's chunk of memory as the tool sees it: a range in which
/// only the registered regions (the live allocations) may be accessed.
///
/// A chunk of plain memory becomes a heap of its own. A chunk that another
/// annotating sub-allocator handed out (a pool over a pool, binning's bins
/// over a pool, as RMM's binning is usually built) lies inside that one's
/// heap, and the tool refuses heaps inside heaps (compute-sanitizer
/// 2025.3: "parameters invalid"). So such a chunk is *adopted*: the outer
/// allocation's region is unregistered and the inner allocations become
/// regions of the outer heap; when the chunk goes back, its regions are
/// unregistered and the outer region is registered again. Either way every
/// allocation is a region of exactly its requested size.
#[derive(Debug)]
pub(crate) struct Chunk {
    base: u64,
    size: usize,
    handle: usize,
    /// Adopted from an outer heap: the size of the outer region to restore
    /// (`None` when none was registered at the chunk's start); `None` for a
    /// heap of its own.
    adopted: Option<Option<usize>>,
}

impl Chunk {
    /// Claims `[base, base + size)` for a sub-allocator; `None` when no
    /// tool takes annotations or the range straddles another heap's end.
    pub(crate) fn claim(base: u64, size: usize) -> Option<Chunk> {
        let t = tool()?;
        let end = base.checked_add(size as u64).filter(|_| size > 0)?;
        let mut reg = registry();
        if let Some((outer_end, handle)) = reg.heap_holding(base) {
            if end > outer_end {
                return None;
            }
            let restore = reg.unregister_region(t, base);
            return Some(Chunk {
                base,
                size,
                handle,
                adopted: Some(restore),
            });
        }
        if reg.heaps.range(base..end).next().is_some() {
            return None;
        }
        // compute-sanitizer 2025.3 refuses heaps in a driver pool's memory
        // ("parameters invalid"; a pool over `cuda_async`): such a chunk
        // stays unannotated, as without a tool (simulated addresses are
        // unknown to the driver, or there is none: not pool memory).
        if crate::driver::is_driver_pool_memory(base).unwrap_or(false) {
            log::info!(
                "nvtx: {base:#x} is a driver pool's memory, which the tool takes no heap in; not annotated"
            );
            return None;
        }
        let range = VirtualRangeDesc::new(base, size);
        let desc = HeapDesc {
            ext_compat_id: EXT_COMPAT_MEM,
            struct_size: std::mem::size_of::<HeapDesc>() as u16,
            reserved0: 0,
            usage: HEAP_USAGE_SUB_ALLOCATOR,
            mem_type: MEM_TYPE_VIRTUAL_ADDRESS,
            type_specific_desc_size: std::mem::size_of::<VirtualRangeDesc>(),
            type_specific_desc: std::ptr::from_ref(&range).cast(),
            category: 0,
            message_type: 0,
            message: std::ptr::null(),
        };
        // SAFETY: the tool's `nvtxMemHeapRegister`, given a descriptor that
        // outlives the call.
        let handle = unsafe { (t.heap_register)(t.domain, &desc) } as usize;
        // 0 names the whole process, -1 means "no tool": neither is ours.
        if handle == 0 || handle == usize::MAX {
            return None;
        }
        reg.heaps.insert(base, (end, handle));
        Some(Chunk {
            base,
            size,
            handle,
            adopted: None,
        })
    }

    /// Registers `[addr, addr + bytes)` (inside the chunk) as a live allocation.
    pub(crate) fn register_region(&self, addr: u64, bytes: usize) {
        let Some(t) = tool() else { return };
        registry().register_region(t, self.handle, addr, bytes);
    }
}

impl Drop for Chunk {
    fn drop(&mut self) {
        let Some(t) = tool() else { return };
        let mut reg = registry();
        let end = self.base + self.size as u64;
        match self.adopted {
            None => {
                // SAFETY: the tool's `nvtxMemHeapUnregister` with its own
                // handle, once; the tool drops the heap's regions with it.
                unsafe { (t.heap_unregister)(t.domain, self.handle as *mut c_void) };
                reg.heaps.remove(&self.base);
                for a in reg.regions_in(self.base, end) {
                    reg.regions.remove(&a);
                }
            }
            Some(restore) => {
                for a in reg.regions_in(self.base, end) {
                    reg.unregister_region(t, a);
                }
                if let Some(bytes) = restore {
                    reg.register_region(t, self.handle, self.base, bytes);
                }
            }
        }
    }
}

/// Changes the size of the live region that starts at `addr` (a block
/// reused for a request of another size).
pub(crate) fn resize_region(addr: u64, bytes: usize) {
    let Some(t) = tool() else { return };
    let Some(resize) = t.regions_resize else { return };
    let mut reg = registry();
    let Some(region) = reg.regions.get_mut(&addr) else {
        return;
    };
    region.1 = bytes;
    let range = VirtualRangeDesc::new(addr, bytes);
    let batch = RegionsResizeBatch {
        ext_compat_id: EXT_COMPAT_MEM,
        struct_size: std::mem::size_of::<RegionsResizeBatch>() as u16,
        region_type: MEM_TYPE_VIRTUAL_ADDRESS,
        region_desc_count: 1,
        region_desc_element_size: std::mem::size_of::<VirtualRangeDesc>(),
        region_desc_elements: std::ptr::from_ref(&range).cast(),
    };
    // SAFETY: the tool's `nvtxMemRegionsResize`, given a batch of one that
    // outlives the call.
    unsafe { resize(t.domain, &batch) };
}

/// Unregisters the live region that starts at `addr` (its allocation was
/// freed), if it is registered.
pub(crate) fn unregister_region(addr: u64) {
    let Some(t) = tool() else { return };
    registry().unregister_region(t, addr);
}

/// Attaches a tool given as its entry points (the tests' recording tool)
/// unless a tool is attached already; returns whether the attached tool is
/// this one (false under a real tool, such as a memcheck run of the tests).
///
/// # Safety
/// As [`injection::attach`].
#[cfg(test)]
pub(crate) unsafe fn attach_for_tests(
    core_init: Option<injection::CoreInitFn>,
    ext_init: injection::ExtInitFn,
) -> bool {
    static ATTACHED_FOR_TESTS: Mutex<bool> = Mutex::new(false);
    let mut ours = ATTACHED_FOR_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let _ = tool();
    if *ours || !TOOL.load(Ordering::Acquire).is_null() {
        return *ours;
    }
    // SAFETY: the caller's contract.
    let Some(t) = (unsafe { injection::attach(core_init, ext_init) }) else {
        return false;
    };
    TOOL.store(Box::into_raw(Box::new(t)), Ordering::Release);
    *ours = true;
    true
}
