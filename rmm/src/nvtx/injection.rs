//! NVTX's tool-attachment protocol, seen from the annotated program.
//!
//! NVTX is a header-only C API: a program carries its own function tables,
//! and a tool (compute-sanitizer, Nsight Systems) fills them when the
//! program loads the library named by `NVTX_INJECTION64_PATH` and calls its
//! entry points. This module is our copy of the program side, written from
//! the published protocol (the NVTX v3 headers' `nvtxInit.h`,
//! `nvtxExtInit.h`, `nvToolsExtMem.h`):
//!
//! * the core entry point `InitializeInjectionNvtx2(getExportTable)`: the
//!   tool asks the export table `NVTX_ETID_CALLBACKS` for each module's
//!   function table and writes its functions into the slots; we only call
//!   `nvtxDomainCreateA` (module CORE2), for a domain named `rmm`;
//! * the extension entry point `InitializeInjectionNvtxExtension(moduleInfo)`
//!   for the memory extension (module 1, compatibility id 0x0102): the tool
//!   writes its memory-API functions into 63 slots indexed by callback id.
//!
//! Only the structures of the functions we call are declared here; their
//! layouts follow the headers field for field (64-bit targets).

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// `NVTX_VERSION` of the headers we follow.
const NVTX_VERSION: u16 = 3;

/// Export table ids (`NVTX_ETID_*`).
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;

/// Entries of each core module's function table, index 0 (the invalid
/// callback id) included, by module id 1 to 6 (`NVTX_CB_MODULE_CORE`,
/// `CUDA`, `OPENCL`, `CUDART`, `CORE2`, `SYNC`; `NVTX_CBID_*_SIZE`).
const CORE_MODULE_SIZES: [usize; 6] = [16, 9, 15, 7, 16, 7];
const MODULE_CORE2: usize = 5;
/// `NVTX_CBID_CORE2_DomainCreateA`.
const CORE2_DOMAIN_CREATE_A: usize = 12;

/// The memory extension: `NVTX_EXT_MODULEID_MEM`, `NVTX_EXT_COMPATID_MEM`.
const EXT_MODULE_MEM: u16 = 1;
pub(super) const EXT_COMPAT_MEM: u16 = 0x0102;
/// Function slots of the memory extension (`NVTX_EXT_MEM_SLOT_COUNT`).
const MEM_SLOT_COUNT: usize = 63;
/// Callback ids of the memory extension (`NVTX3EXT_CBID_nvtxMem*`).
const CBID_HEAP_REGISTER: usize = 1;
const CBID_HEAP_UNREGISTER: usize = 2;
const CBID_REGIONS_REGISTER: usize = 4;
const CBID_REGIONS_RESIZE: usize = 5;
const CBID_REGIONS_UNREGISTER: usize = 6;
/// Slot values below this are states (`NVTX_EXTENSION_FRESH` 0,
/// `DISABLED` 1, `STARTING` 2, `LOADED` 3, `INIT_FN_FAILED` 4), not functions.
const FIRST_FUNCTION_VALUE: usize = 5;

/// `NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR`.
pub(super) const HEAP_USAGE_SUB_ALLOCATOR: u32 = 1;
/// `NVTX_MEM_TYPE_VIRTUAL_ADDRESS`.
pub(super) const MEM_TYPE_VIRTUAL_ADDRESS: u32 = 1;
/// `NVTX_MEM_REGION_REF_TYPE_POINTER`.
pub(super) const REGION_REF_POINTER: u32 = 1;

/// `nvtxMemVirtualRangeDesc_v1`.
#[repr(C)]
pub(super) struct VirtualRangeDesc {
    pub size: usize,
    pub ptr: *const c_void,
}

impl VirtualRangeDesc {
    /// The range `[addr, addr + size)`.
    pub(super) fn new(addr: u64, size: usize) -> Self {
        VirtualRangeDesc {
            size,
            ptr: addr as *const c_void,
        }
    }
}

/// `nvtxMemHeapDesc_v1`.
#[repr(C)]
pub(super) struct HeapDesc {
    pub ext_compat_id: u16,
    pub struct_size: u16,
    pub reserved0: u32,
    pub usage: u32,
    pub mem_type: u32,
    pub type_specific_desc_size: usize,
    pub type_specific_desc: *const c_void,
    pub category: u32,
    pub message_type: u32,
    /// `nvtxMessageValue_t`, a union of pointer-sized members.
    pub message: *const c_void,
}

/// `nvtxMemRegionsRegisterBatch_v1`.
#[repr(C)]
pub(super) struct RegionsRegisterBatch {
    pub ext_compat_id: u16,
    pub struct_size: u16,
    pub region_type: u32,
    pub heap: *mut c_void,
    pub region_count: usize,
    pub region_desc_element_size: usize,
    pub region_desc_elements: *const c_void,
    pub region_handle_elements_out: *mut *mut c_void,
}

/// `nvtxMemRegionsResizeBatch_v1`.
#[repr(C)]
pub(super) struct RegionsResizeBatch {
    pub ext_compat_id: u16,
    pub struct_size: u16,
    pub region_type: u32,
    pub region_desc_count: usize,
    pub region_desc_element_size: usize,
    pub region_desc_elements: *const c_void,
}

/// `nvtxMemRegionsUnregisterBatch_v1` (references by pointer).
#[repr(C)]
pub(super) struct RegionsUnregisterBatch {
    pub ext_compat_id: u16,
    pub struct_size: u16,
    pub ref_type: u32,
    pub ref_count: usize,
    pub ref_element_size: usize,
    pub ref_elements: *const *const c_void,
}

pub(super) type HeapRegisterFn = unsafe extern "C" fn(*mut c_void, *const HeapDesc) -> *mut c_void;
pub(super) type HeapUnregisterFn = unsafe extern "C" fn(*mut c_void, *mut c_void);
pub(super) type RegionsRegisterFn = unsafe extern "C" fn(*mut c_void, *const RegionsRegisterBatch);
pub(super) type RegionsResizeFn = unsafe extern "C" fn(*mut c_void, *const RegionsResizeBatch);
pub(super) type RegionsUnregisterFn = unsafe extern "C" fn(*mut c_void, *const RegionsUnregisterBatch);
type DomainCreateAFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;

/// `NvtxGetExportTableFunc_t`.
pub(crate) type GetExportTableFn = unsafe extern "C" fn(u32) -> *const c_void;
/// `InitializeInjectionNvtx2`.
pub(crate) type CoreInitFn = unsafe extern "C" fn(GetExportTableFn) -> c_int;
/// `InitializeInjectionNvtxExtension`.
pub(crate) type ExtInitFn = unsafe extern "C" fn(*mut ExtModuleInfo) -> c_int;

/// `nvtxExtModuleSegment_t`.
#[repr(C)]
pub(crate) struct ExtModuleSegment {
    pub segment_id: usize,
    pub slot_count: usize,
    pub function_slots: *mut isize,
}

/// `nvtxExtModuleInfo_t`.
#[repr(C)]
pub(crate) struct ExtModuleInfo {
    pub nvtx_ver: u16,
    pub struct_size: u16,
    pub module_id: u16,
    pub compat_id: u16,
    pub segments_count: usize,
    pub segments: *mut ExtModuleSegment,
    pub get_export_function: Option<unsafe extern "C" fn(u32) -> isize>,
    pub ext_info: *const c_void,
}

/// The memory-API functions a tool attached, and our domain.
#[derive(Debug, Clone, Copy)]
pub(super) struct MemoryTool {
    /// Our domain (`rmm`), or null (the global domain) when the tool gave
    /// no `nvtxDomainCreateA`.
    pub domain: *mut c_void,
    pub heap_register: HeapRegisterFn,
    pub heap_unregister: HeapUnregisterFn,
    pub regions_register: RegionsRegisterFn,
    pub regions_resize: Option<RegionsResizeFn>,
    pub regions_unregister: RegionsUnregisterFn,
}

// SAFETY: the domain is an opaque handle the tool accepts from any thread
// (NVTX calls are thread safe); the rest are function pointers.
unsafe impl Send for MemoryTool {}
// SAFETY: as above; nothing in it is mutated after attachment.
unsafe impl Sync for MemoryTool {}

/// The core modules' function slots and the tables of slot addresses the
/// tool reads (entry 0 and the last entry null, as in the headers).
struct CoreTables {
    slots: Vec<Box<[AtomicUsize]>>,
    tables: Vec<Box<[usize]>>,
}

fn core_tables() -> &'static CoreTables {
    static TABLES: OnceLock<CoreTables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let slots: Vec<Box<[AtomicUsize]>> = CORE_MODULE_SIZES
            .iter()
            .map(|&n| (0..n).map(|_| AtomicUsize::new(0)).collect())
            .collect();
        let tables = slots
            .iter()
            .map(|s| {
                let mut t = vec![0usize; s.len() + 1];
                for (i, slot) in s.iter().enumerate().skip(1) {
                    t[i] = slot.as_ptr() as usize;
                }
                t.into_boxed_slice()
            })
            .collect();
        CoreTables { slots, tables }
    })
}

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: unsafe extern "C" fn(c_int, *mut *const usize, *mut c_uint) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(u32),
}

static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
    struct_size: std::mem::size_of::<ExportTableCallbacks>(),
    get_module_function_table,
};

static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: std::mem::size_of::<ExportTableVersionInfo>(),
    version: NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `nvtxEtiGetModuleFunctionTable`: a core module's table and its size
/// (entries, the trailing null excluded).
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    out_table: *mut *const usize,
    out_size: *mut c_uint,
) -> c_int {
    let Some(i) = usize::try_from(module).ok().and_then(|m| m.checked_sub(1)) else {
        return 0;
    };
    let Some(table) = core_tables().tables.get(i) else {
        return 0;
    };
    if !out_size.is_null() {
        // SAFETY: the tool passes a writable `unsigned int` or null.
        unsafe { *out_size = (table.len() - 1) as c_uint };
    }
    if !out_table.is_null() {
        // SAFETY: the tool passes a writable table pointer or null.
        unsafe { *out_table = table.as_ptr() };
    }
    1
}

/// `nvtxEtiSetInjectionNvtxVersion`: reserved, nothing to do.
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

/// `nvtxGetExportTable`.
unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => std::ptr::from_ref(&CALLBACKS).cast(),
        ETID_VERSIONINFO => std::ptr::from_ref(&VERSION_INFO).cast(),
        _ => std::ptr::null(),
    }
}

/// The memory extension's function slots, filled by the tool.
static MEM_SLOTS: [AtomicIsize; MEM_SLOT_COUNT] = [const { AtomicIsize::new(0) }; MEM_SLOT_COUNT];

/// The memory-API function of callback id `cbid` the tool wrote, if any.
///
/// Two slot layouts exist. The NVTX headers through 3.1 pass the slots
/// from the first function on (callback id `k` in slot `k - 1`), and that
/// is how compute-sanitizer 2025.3 fills them (seen on the GPU machine:
/// slot 1 held `nvtxMemHeapUnregister`). Later headers index the slots by
/// callback id, leaving slot 0 (the invalid id 0) empty. A function in
/// slot 0 therefore means the first layout.
fn mem_slot(cbid: usize) -> Option<usize> {
    let read = |i: usize| {
        let v = MEM_SLOTS[i].load(Ordering::Acquire) as usize;
        (v >= FIRST_FUNCTION_VALUE).then_some(v)
    };
    if read(0).is_some() {
        read(cbid - 1)
    } else {
        read(cbid)
    }
}

/// Runs a tool's entry points and collects its memory-API functions:
/// `None` when the tool does not provide the memory extension.
///
/// # Safety
/// `core_init` and `ext_init` are a tool's NVTX entry points (they follow
/// the protocol's signatures); called once per process.
pub(super) unsafe fn attach(core_init: Option<CoreInitFn>, ext_init: ExtInitFn) -> Option<MemoryTool> {
    let tables = core_tables();
    if let Some(init) = core_init {
        // SAFETY: the tool's core entry point, given our export tables.
        if unsafe { init(get_export_table) } == 0 {
            log::warn!("nvtx: the tool's InitializeInjectionNvtx2 failed; using the global domain");
        }
    }
    let domain = match tables.slots[MODULE_CORE2 - 1][CORE2_DOMAIN_CREATE_A].load(Ordering::Acquire) {
        0 => std::ptr::null_mut(),
        f => {
            // SAFETY: the tool wrote its `nvtxDomainCreateA` into this slot.
            let create: DomainCreateAFn = unsafe { std::mem::transmute::<usize, DomainCreateAFn>(f) };
            // SAFETY: a NUL-terminated name that lives for the program.
            unsafe { create(c"rmm".as_ptr()) }
        }
    };
    let mut segment = ExtModuleSegment {
        segment_id: 1,
        slot_count: MEM_SLOT_COUNT,
        function_slots: MEM_SLOTS.as_ptr() as *mut isize,
    };
    let mut module = ExtModuleInfo {
        nvtx_ver: NVTX_VERSION,
        struct_size: std::mem::size_of::<ExtModuleInfo>() as u16,
        module_id: EXT_MODULE_MEM,
        compat_id: EXT_COMPAT_MEM,
        segments_count: 1,
        segments: &mut segment,
        get_export_function: None,
        ext_info: std::ptr::null(),
    };
    // SAFETY: the tool's extension entry point, given a module description
    // that outlives the call and static slots it may write.
    if unsafe { ext_init(&mut module) } == 0 {
        log::warn!("nvtx: the tool's InitializeInjectionNvtxExtension failed; no memory annotations");
        return None;
    }
    let (Some(hr), Some(hu), Some(rr), Some(ru)) = (
        mem_slot(CBID_HEAP_REGISTER),
        mem_slot(CBID_HEAP_UNREGISTER),
        mem_slot(CBID_REGIONS_REGISTER),
        mem_slot(CBID_REGIONS_UNREGISTER),
    ) else {
        log::info!("nvtx: the attached tool does not take memory annotations");
        return None;
    };
    // SAFETY: (all four and the resize) the tool wrote these functions into
    // the slots of their callback ids, whose signatures are the ones named.
    unsafe {
        Some(MemoryTool {
            domain,
            heap_register: std::mem::transmute::<usize, HeapRegisterFn>(hr),
            heap_unregister: std::mem::transmute::<usize, HeapUnregisterFn>(hu),
            regions_register: std::mem::transmute::<usize, RegionsRegisterFn>(rr),
            regions_resize: mem_slot(CBID_REGIONS_RESIZE)
                .map(|f| std::mem::transmute::<usize, RegionsResizeFn>(f)),
            regions_unregister: std::mem::transmute::<usize, RegionsUnregisterFn>(ru),
        })
    }
}

/// Loads the tool named by `NVTX_INJECTION64_PATH` and attaches to it;
/// `None` without the variable, when loading fails, or when the tool takes
/// no memory annotations. The library stays loaded for the process.
pub(super) fn attach_from_environment() -> Option<MemoryTool> {
    let path = crate::env::nvtx_injection_path()?;
    // SAFETY: the tool library is the one the user (or the tool launching
    // us) named for exactly this purpose; its initialisers run here.
    let lib = match unsafe { libloading::Library::new(&path) } {
        Ok(lib) => lib,
        Err(e) => {
            log::warn!("nvtx: cannot load {}: {e}", path.to_string_lossy());
            return None;
        }
    };
    // SAFETY: the symbols, if present, have the protocol's signatures.
    let core: Option<CoreInitFn> = unsafe { lib.get::<CoreInitFn>(b"InitializeInjectionNvtx2\0") }
        .ok()
        .map(|s| *s);
    // SAFETY: as above.
    let ext: Option<ExtInitFn> = unsafe { lib.get::<ExtInitFn>(b"InitializeInjectionNvtxExtension\0") }
        .ok()
        .map(|s| *s);
    // The functions the tool hands out live in the library: keep it loaded.
    std::mem::forget(lib);
    let Some(ext) = ext else {
        log::info!(
            "nvtx: {} has no InitializeInjectionNvtxExtension; no memory annotations",
            path.to_string_lossy()
        );
        return None;
    };
    // SAFETY: the tool's entry points; `attach_from_environment` runs once.
    unsafe { attach(core, ext) }
}

#[cfg(test)]
mod layout_tests {
    use super::*;

    #[test]
    fn structures_have_the_headers_sizes() {
        assert_eq!(std::mem::size_of::<HeapDesc>(), 48);
        assert_eq!(std::mem::size_of::<RegionsRegisterBatch>(), 48);
        assert_eq!(std::mem::size_of::<RegionsResizeBatch>(), 32);
        assert_eq!(std::mem::size_of::<RegionsUnregisterBatch>(), 32);
        assert_eq!(std::mem::size_of::<VirtualRangeDesc>(), 16);
        assert_eq!(std::mem::size_of::<ExtModuleInfo>(), 40);
        assert_eq!(std::mem::size_of::<ExtModuleSegment>(), 24);
        assert_eq!(std::mem::size_of::<ExportTableCallbacks>(), 16);
        assert_eq!(std::mem::size_of::<ExportTableVersionInfo>(), 24);
    }

    #[test]
    fn core_tables_have_null_ends() {
        for (t, &n) in core_tables().tables.iter().zip(CORE_MODULE_SIZES.iter()) {
            assert_eq!(t.len(), n + 1);
            assert_eq!((t[0], t[n]), (0, 0));
            assert!(t[1..n].iter().all(|&p| p != 0));
        }
    }
}
