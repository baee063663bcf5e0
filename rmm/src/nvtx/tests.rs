//! The annotations as a tool sees them: a recording tool attached through
//! the same entry points as a real one (compute-sanitizer's run on the GPU
//! machine is in the suite's `tests/sanitizer_annotations.rs`).
//!
//! The tool reads our export tables by raw offsets, as a C tool compiled
//! from the NVTX headers would, and records the calls made on threads that
//! opted in (tests run in parallel; each records its own thread).

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::injection::{
    ExtModuleInfo, GetExportTableFn, HeapDesc, RegionsRegisterBatch, RegionsResizeBatch,
    RegionsUnregisterBatch, VirtualRangeDesc,
};
use crate::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, FixedSizeMemoryResource, FixedSizeOptions,
    MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource,
};
use crate::stream::CudaStreamView;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Heap { handle: usize, base: u64, size: usize },
    HeapGone { handle: usize },
    Region { heap: usize, addr: u64, size: usize },
    Resize { addr: u64, size: usize },
    RegionGone { addr: u64 },
}

thread_local! {
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static EVENTS: RefCell<Vec<Event>> = const { RefCell::new(Vec::new()) };
}

/// True on a thread that records (its resources over simulated memory
/// annotate, see [`super::annotates`]).
pub(super) fn recording_here() -> bool {
    RECORDING.with(Cell::get)
}

fn record(e: Event) {
    if RECORDING.with(Cell::get) {
        EVENTS.with(|v| v.borrow_mut().push(e));
    }
}

static NEXT_HEAP: AtomicUsize = AtomicUsize::new(0x1000);
const DOMAIN: usize = 0xD0;

unsafe extern "C" fn domain_create(name: *const std::ffi::c_char) -> *mut c_void {
    // SAFETY: the caller passes a NUL-terminated name.
    assert_eq!(unsafe { CStr::from_ptr(name) }, c"rmm");
    DOMAIN as *mut c_void
}

unsafe extern "C" fn heap_register(domain: *mut c_void, desc: *const HeapDesc) -> *mut c_void {
    assert_eq!(domain as usize, DOMAIN);
    // SAFETY: the caller passes a valid descriptor.
    let d = unsafe { &*desc };
    assert_eq!((d.ext_compat_id, d.struct_size as usize), (0x0102, 48));
    assert_eq!((d.usage, d.mem_type, d.type_specific_desc_size), (1, 1, 16));
    // SAFETY: a virtual range, as the type says.
    let r = unsafe { &*d.type_specific_desc.cast::<VirtualRangeDesc>() };
    let handle = NEXT_HEAP.fetch_add(1, Ordering::Relaxed);
    record(Event::Heap {
        handle,
        base: r.ptr as u64,
        size: r.size,
    });
    handle as *mut c_void
}

unsafe extern "C" fn heap_unregister(_domain: *mut c_void, heap: *mut c_void) {
    record(Event::HeapGone {
        handle: heap as usize,
    });
}

unsafe extern "C" fn regions_register(_domain: *mut c_void, batch: *const RegionsRegisterBatch) {
    // SAFETY: the caller passes a valid batch.
    let b = unsafe { &*batch };
    assert_eq!((b.struct_size, b.region_type, b.region_count), (48, 1, 1));
    // SAFETY: one virtual range.
    let r = unsafe { &*b.region_desc_elements.cast::<VirtualRangeDesc>() };
    record(Event::Region {
        heap: b.heap as usize,
        addr: r.ptr as u64,
        size: r.size,
    });
}

unsafe extern "C" fn regions_resize(_domain: *mut c_void, batch: *const RegionsResizeBatch) {
    // SAFETY: the caller passes a valid batch of one virtual range.
    let r = unsafe { &*(*batch).region_desc_elements.cast::<VirtualRangeDesc>() };
    record(Event::Resize {
        addr: r.ptr as u64,
        size: r.size,
    });
}

unsafe extern "C" fn regions_unregister(_domain: *mut c_void, batch: *const RegionsUnregisterBatch) {
    // SAFETY: the caller passes a valid batch of one pointer reference.
    let b = unsafe { &*batch };
    assert_eq!((b.ref_type, b.ref_count), (1, 1));
    // SAFETY: the batch holds one pointer reference, as checked above.
    let addr = unsafe { *b.ref_elements } as u64;
    record(Event::RegionGone { addr });
}

/// The tool's core entry point: fills `nvtxDomainCreateA` (module CORE2,
/// callback id 12) through the callbacks export table (id 1).
unsafe extern "C" fn core_init(get_export_table: GetExportTableFn) -> c_int {
    // SAFETY: the protocol's export table; field 1 is the function.
    unsafe {
        let etbl = get_export_table(1).cast::<usize>();
        assert_eq!(*etbl, 16, "NvtxExportTableCallbacks.struct_size");
        type GetTable = unsafe extern "C" fn(c_int, *mut *const usize, *mut c_uint) -> c_int;
        let get: GetTable = std::mem::transmute::<usize, GetTable>(*etbl.add(1));
        let mut table: *const usize = std::ptr::null();
        let mut size: c_uint = 0;
        assert_eq!(get(5, &mut table, &mut size), 1);
        assert_eq!(size, 16);
        assert_eq!(get(7, &mut table, &mut size), 0, "module 7 does not exist");
        get(5, &mut table, &mut size);
        let slot = *table.add(12) as *mut usize;
        *slot = domain_create as *const () as usize;
        assert!(!get_export_table(3).is_null(), "version info");
    }
    1
}

/// The tool's extension entry point: fills the memory slots as
/// compute-sanitizer 2025.3 does, callback id `k` in slot `k - 1`.
unsafe extern "C" fn ext_init(module: *mut ExtModuleInfo) -> c_int {
    // SAFETY: the protocol's module description with one segment of slots.
    unsafe {
        let m = &*module;
        assert_eq!(
            (m.nvtx_ver, m.struct_size, m.module_id, m.compat_id),
            (3, 40, 1, 0x0102)
        );
        let seg = &*m.segments;
        assert_eq!(seg.slot_count, 63);
        let slots = seg.function_slots;
        *slots.add(0) = heap_register as *const () as usize as isize;
        *slots.add(1) = heap_unregister as *const () as usize as isize;
        *slots.add(3) = regions_register as *const () as usize as isize;
        *slots.add(4) = regions_resize as *const () as usize as isize;
        *slots.add(5) = regions_unregister as *const () as usize as isize;
    }
    1
}

/// Attaches the recording tool and records this thread's calls while `f`
/// runs. One test at a time: simulated resources hand out the same
/// addresses, and the record of heaps and regions is the process's.
/// `None` (the test skips, counted) under a real tool, which took the
/// process's one attachment (a memcheck run of these tests).
fn recorded(test: &str, f: impl FnOnce()) -> Option<Vec<Event>> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the entry points above follow the protocol's signatures.
    if !unsafe { super::attach_for_tests(Some(core_init), ext_init) } {
        rmm_testing::report_skip(test, "a real NVTX tool is attached; the recording tool cannot be");
        return None;
    }
    assert!(super::memory_annotations_active());
    EVENTS.with(|v| v.borrow_mut().clear());
    RECORDING.with(|r| r.set(true));
    f();
    RECORDING.with(|r| r.set(false));
    Some(EVENTS.with(|v| std::mem::take(&mut *v.borrow_mut())))
}

fn heap_of(events: &[Event], addr: u64) -> (usize, u64, usize) {
    events
        .iter()
        .find_map(|e| match *e {
            Event::Heap { handle, base, size } if base <= addr && addr < base + size as u64 => {
                Some((handle, base, size))
            }
            _ => None,
        })
        .expect("a heap holds the allocation")
}

const S: CudaStreamView<'static> = CudaStreamView::DEFAULT;

#[test]
fn pool_registers_chunks_as_heaps_and_allocations_at_their_requested_size() {
    let Some(events) = recorded(
        "pool_registers_chunks_as_heaps_and_allocations_at_their_requested_size",
        || {
            let pool = PoolMemoryResource::new(
                SimulatedMemoryResource::new(1 << 30),
                PoolOptions::default().initial_pool_size(1 << 20),
            )
            .unwrap();
            let a = pool.allocate(1000, 256, S).unwrap();
            let b = pool.allocate(3 << 20, 256, S).unwrap(); // grows: a second chunk
                                                             // SAFETY: allocated above with these sizes.
            unsafe {
                pool.deallocate(a, 1000, 256, S);
                pool.deallocate(b, 3 << 20, 256, S);
            }
            // A refused free (double free) registers nothing.
            // SAFETY: the pool checks frees; this one is refused.
            unsafe { pool.deallocate(a, 1000, 256, S) };
            assert_eq!(pool.bad_frees(), 1);
            RECORDED_ADDRS.with(|c| c.set((a.addr(), b.addr())));
        },
    ) else {
        return;
    };
    let (a, b) = RECORDED_ADDRS.with(Cell::get);
    let (ha, base_a, size_a) = heap_of(&events, a);
    let (hb, _, _) = heap_of(&events, b);
    assert_ne!(ha, hb, "each upstream chunk is its own heap");
    assert_eq!((base_a, size_a), (a, 1 << 20), "the initial chunk");
    let expected_tail = [Event::RegionGone { addr: a }, Event::RegionGone { addr: b }];
    assert!(events.contains(&Event::Region {
        heap: ha,
        addr: a,
        size: 1000
    }));
    assert!(events.contains(&Event::Region {
        heap: hb,
        addr: b,
        size: 3 << 20
    }));
    let gone: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::RegionGone { .. }))
        .cloned()
        .collect();
    assert_eq!(
        gone, expected_tail,
        "each accepted free unregisters once; the refused one does not"
    );
    let heaps_gone = events
        .iter()
        .filter(|e| matches!(e, Event::HeapGone { .. }))
        .count();
    assert_eq!(
        heaps_gone, 2,
        "both heaps go when the pool is dropped: {events:?}"
    );
}

thread_local! {
    static RECORDED_ADDRS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

#[test]
fn fixed_size_registers_the_requested_bytes_of_its_blocks() {
    let Some(events) = recorded("fixed_size_registers_the_requested_bytes_of_its_blocks", || {
        let fixed = FixedSizeMemoryResource::new(
            SimulatedMemoryResource::new(1 << 30),
            FixedSizeOptions::default()
                .block_size(4096)
                .blocks_to_preallocate(4),
        )
        .unwrap();
        let p = fixed.allocate(100, 256, S).unwrap();
        // SAFETY: allocated above.
        unsafe { fixed.deallocate(p, 100, 256, S) };
        RECORDED_ADDRS.with(|c| c.set((p.addr(), 0)));
    }) else {
        return;
    };
    let (p, _) = RECORDED_ADDRS.with(Cell::get);
    let (h, _, size) = heap_of(&events, p);
    assert_eq!(size, 4 * 4096);
    assert!(events.contains(&Event::Region {
        heap: h,
        addr: p,
        size: 100
    }));
    assert!(events.contains(&Event::RegionGone { addr: p }));
    assert!(events.contains(&Event::HeapGone { handle: h }));
}

#[test]
fn binning_resizes_a_reused_block_to_each_request() {
    let Some(events) = recorded("binning_resizes_a_reused_block_to_each_request", || {
        let binning =
            BinningMemoryResource::with_fixed_bins(SimulatedMemoryResource::new(1 << 30), 10, 12).unwrap();
        let p = binning.allocate(1000, 256, S).unwrap();
        // SAFETY: allocated above; the block goes to the stream's cache.
        unsafe { binning.deallocate(p, 1000, 256, S) };
        let q = binning.allocate(900, 256, S).unwrap();
        assert_eq!(p, q, "the cached block is reused");
        // SAFETY: allocated above.
        unsafe { binning.deallocate(q, 900, 256, S) };
        RECORDED_ADDRS.with(|c| c.set((p.addr(), 0)));
    }) else {
        return;
    };
    let (p, _) = RECORDED_ADDRS.with(Cell::get);
    let (h, _, _) = heap_of(&events, p);
    let of_p: Vec<_> = events
        .iter()
        .filter(|e| match e {
            Event::Region { addr, .. } | Event::Resize { addr, .. } | Event::RegionGone { addr } => {
                *addr == p
            }
            _ => false,
        })
        .cloned()
        .collect();
    assert_eq!(
        of_p,
        [
            Event::Region {
                heap: h,
                addr: p,
                size: 1024
            },
            Event::Resize { addr: p, size: 1000 },
            Event::Resize { addr: p, size: 900 },
        ],
        "the bin registers its block, binning sizes it to each request; a cached block \
         stays registered"
    );
    assert!(
        events.contains(&Event::HeapGone { handle: h }),
        "the bin's heap (and the cached block's region with it) goes when the bin is dropped"
    );
}

#[test]
fn arena_registers_its_arena_as_one_heap() {
    let Some(events) = recorded("arena_registers_its_arena_as_one_heap", || {
        let arena = ArenaMemoryResource::new(
            SimulatedMemoryResource::new(1 << 30),
            ArenaOptions::default().arena_size(64 << 20),
        )
        .unwrap();
        let p = arena.allocate(1000, 256, S).unwrap();
        // SAFETY: allocated above.
        unsafe { arena.deallocate(p, 1000, 256, S) };
        // A refused free (foreign pointer) unregisters nothing.
        // SAFETY: the arena checks frees; this one is refused.
        unsafe { arena.deallocate(crate::DevicePtr::new(p.addr() + 4096), 256, 256, S) };
        RECORDED_ADDRS.with(|c| c.set((p.addr(), 0)));
    }) else {
        return;
    };
    let (p, _) = RECORDED_ADDRS.with(Cell::get);
    let (h, _, size) = heap_of(&events, p);
    assert_eq!(size, 64 << 20);
    assert_eq!(
        events.iter().filter(|e| matches!(e, Event::Heap { .. })).count(),
        1,
        "one heap: {events:?}"
    );
    assert!(events.contains(&Event::Region {
        heap: h,
        addr: p,
        size: 1000
    }));
    let gone: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, Event::RegionGone { .. }))
        .cloned()
        .collect();
    assert_eq!(gone, [Event::RegionGone { addr: p }]);
    assert_eq!(events.last(), Some(&Event::HeapGone { handle: h }));
}

#[test]
fn a_pool_over_an_annotating_pool_adopts_its_chunk_inside_the_outer_heap() {
    let Some(events) = recorded(
        "a_pool_over_an_annotating_pool_adopts_its_chunk_inside_the_outer_heap",
        || {
            let outer = PoolMemoryResource::new(
                SimulatedMemoryResource::new(1 << 30),
                PoolOptions::default().initial_pool_size(64 << 20),
            )
            .unwrap();
            let inner =
                PoolMemoryResource::new(outer.clone(), PoolOptions::default().initial_pool_size(1 << 20))
                    .unwrap();
            let p = inner.allocate(1000, 256, S).unwrap();
            let q = inner.allocate(3000, 256, S).unwrap();
            // SAFETY: allocated above.
            unsafe { inner.deallocate(p, 1000, 256, S) };
            drop(inner); // `q` is still live: its region goes with the chunk
            RECORDED_ADDRS.with(|c| c.set((p.addr(), q.addr())));
        },
    ) else {
        return;
    };
    let (p, q) = RECORDED_ADDRS.with(Cell::get);
    let (h, _, _) = heap_of(&events, p);
    let chunk = 1 << 20;
    assert_eq!(
        events,
        [
            Event::Heap {
                handle: h,
                base: p,
                size: 64 << 20
            },
            Event::Region {
                heap: h,
                addr: p,
                size: chunk
            },
            Event::RegionGone { addr: p },
            Event::Region {
                heap: h,
                addr: p,
                size: 1000
            },
            Event::Region {
                heap: h,
                addr: q,
                size: 3000
            },
            Event::RegionGone { addr: p },
            Event::RegionGone { addr: q },
            Event::Region {
                heap: h,
                addr: p,
                size: chunk
            },
            Event::RegionGone { addr: p },
            Event::HeapGone { handle: h },
        ],
        "one heap (the outer pool's chunk); the inner pool's chunk is the outer region, \
         replaced by the inner allocations while the inner pool holds it"
    );
}
