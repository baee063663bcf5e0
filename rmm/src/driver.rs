//! Every raw CUDA driver call of the crate lives in this module. It is
//! private to the crate (`pub(crate)`): its functions take raw stream and
//! event handles that the rest of `rmm` only passes while they are live.
//! Sibling crates use the typed, public surface in [`crate::launch`] and
//! [`crate::device`].
//!
//! The rest of `rmm` sees safe(ish) functions that take and return plain
//! integers ([`DevicePtr`] addresses, stream and event handles as `usize`) and
//! a [`Result`]. The binding is cudarc's raw `cudarc::driver::sys` (CUDA 12.8
//! declarations), with the driver library loaded at run time: nothing of CUDA
//! is needed to build, and a binary starts on a machine without the NVIDIA
//! driver. Status codes become [`Error`]s through [`Error::from_cuda`], the
//! one place where out-of-memory is recognised.
//!
//! # Without a driver
//! cudarc panics when a function is called and the library (or the symbol)
//! cannot be loaded. [`init`] therefore first checks that the library loads
//! and exports every entry point named in [`ENTRY_POINTS`]; otherwise it
//! returns [`Error::DriverUnavailable`], and so does every function here,
//! since each one calls [`init`] (directly or through [`ensure_context`])
//! before its first driver call. [`device_count`] is then 0.
//!
//! Contexts follow the CUDA runtime's model: each device's *primary* context
//! is retained once and kept for the life of the process (the same context
//! CuPy and PyTorch use); a thread that has no current context gets the
//! primary context of device 0 on its first driver call, as `cudaSetDevice(0)`
//! would give it.

#![allow(clippy::missing_safety_doc)]

use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use cudarc::driver::sys as cu;

use crate::error::{Error, Result};
use crate::ptr::DevicePtr;

/// Maps a driver status to `Ok(())` or an [`Error`] via [`Error::from_cuda`].
#[inline]
fn check(status: cu::CUresult, call: &'static str, requested: usize) -> Result<()> {
    if status == cu::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(error(status, call, requested))
}

/// The [`Error`] of a failed driver call (out of line: every call's success
/// path stays a compare and a branch).
#[cold]
#[inline(never)]
fn error(status: cu::CUresult, call: &'static str, requested: usize) -> Error {
    Error::from_cuda(status as u32, error_name(status), call, requested)
}

/// The driver's name for a status code (`CUDA_ERROR_...`).
fn error_name(status: cu::CUresult) -> &'static str {
    let mut name: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorName writes a pointer to a static string (or leaves it
    // null for unknown codes); `name` is a valid out-pointer.
    let ok = unsafe { cu::cuGetErrorName(status, &mut name) };
    if ok != cu::CUresult::CUDA_SUCCESS || name.is_null() {
        return "CUDA_ERROR_UNKNOWN";
    }
    // SAFETY: the driver returns a NUL-terminated string with static lifetime.
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .unwrap_or("CUDA_ERROR_UNKNOWN")
}

macro_rules! call {
    ($f:ident ( $($arg:expr),* $(,)? )) => {
        call!($f($($arg),*), requested = 0)
    };
    ($f:ident ( $($arg:expr),* $(,)? ), requested = $req:expr) => {{
        // SAFETY: every argument is a value or a valid out-pointer built by the
        // caller for this exact driver entry point; the driver validates handles.
        let status = unsafe { cu::$f($($arg),*) };
        check(status, stringify!($f), $req)
    }};
}

// ---------------------------------------------------------------------------
// Initialisation, devices and contexts
// ---------------------------------------------------------------------------

/// The driver library as the NVIDIA driver installs it (what error messages name).
const DRIVER_LIBRARY: &str = if cfg!(windows) {
    "nvcuda.dll"
} else {
    "libcuda.so.1"
};

/// Every driver entry point this module calls, checked once by [`init`]
/// before the first call: cudarc panics on a missing symbol, we return an
/// error instead. Keep in step with the `call!`s below (the test
/// `entry_points_cover_every_call` reads this file and checks it).
const ENTRY_POINTS: &[&str] = &[
    "cuGetErrorName",
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxGetDevice",
    "cuMemGetInfo_v2",
    "cuDeviceGetAttribute",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocManaged",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemAllocFromPoolAsync",
    "cuMemFreeAsync",
    "cuMemPoolCreate",
    "cuMemPoolDestroy",
    "cuMemPoolTrimTo",
    "cuMemPoolSetAttribute",
    "cuMemPoolGetAttribute",
    "cuMemGetAllocationGranularity",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemCreate",
    "cuMemRelease",
    "cuMemMap",
    "cuMemSetAccess",
    "cuMemUnmap",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuMemcpyAsync",
    "cuMemcpyPeerAsync",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemPrefetchAsync",
    "cuMemAdvise",
    "cuMemPoolExportToShareableHandle",
    "cuMemPoolImportFromShareableHandle",
    "cuMemPoolExportPointer",
    "cuMemPoolImportPointer",
    "cuMemRangeGetAttribute",
    "cuPointerGetAttribute",
    "cuDeviceCanAccessPeer",
    "cuCtxEnablePeerAccess",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuLaunchKernel",
];

/// Checks that the driver library loads and exports [`ENTRY_POINTS`], so
/// that no cudarc call below can panic on a missing library or symbol.
fn load_library() -> Result<()> {
    // SAFETY: is_culib_present only tries to open the library under its
    // usual names (running the driver library's own initialisers, as any
    // program using CUDA does) and closes it again; it never panics.
    if !unsafe { cu::is_culib_present() } {
        return Err(Error::DriverUnavailable(format!(
            "CUDA driver library {DRIVER_LIBRARY} not found: install the NVIDIA driver; \
             only simulated resources work without it"
        )));
    }
    // SAFETY: the library was just found under one of the names culib()
    // tries, so culib() loads it (once, kept for the process) and does not
    // panic.
    let lib = unsafe { cu::culib() };
    let missing: Vec<&str> = ENTRY_POINTS
        .iter()
        .copied()
        // SAFETY: the symbol is only looked up, never called through the
        // placeholder type given here.
        .filter(|name| unsafe { lib.get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(Error::DriverUnavailable(format!(
            "CUDA driver library {DRIVER_LIBRARY} lacks {}: update the NVIDIA driver \
             (rmm uses the CUDA 12.8 driver API)",
            missing.join(", ")
        )));
    }
    Ok(())
}

static INIT: OnceLock<Result<()>> = OnceLock::new();

/// Loads the driver library and initialises the driver, once per process.
/// Fails with [`Error::DriverUnavailable`] when the library cannot be loaded
/// (no NVIDIA driver installed), and with the driver's error (e.g.
/// `CUDA_ERROR_NO_DEVICE`) on machines without a usable GPU.
#[inline]
pub fn init() -> Result<()> {
    // Every driver call passes here: once the driver is up this is one
    // load and a compare, inlined (no call, no clone of the result).
    if let Some(Ok(())) = INIT.get() {
        return Ok(());
    }
    init_once()
}

/// The first [`init`] of the process (and every later one after a failure,
/// which returns the same error).
#[cold]
fn init_once() -> Result<()> {
    INIT.get_or_init(|| {
        load_library()?;
        call!(cuInit(0))
    })
    .clone()
}

/// Number of CUDA devices; 0 when the driver cannot initialise. Asked of
/// the driver once: the visible devices of a process do not change.
#[inline]
pub fn device_count() -> usize {
    if let Some(&n) = DEVICE_COUNT.get() {
        return n;
    }
    ask_device_count()
}

/// [`device_count`] before the driver answered.
#[cold]
fn ask_device_count() -> usize {
    if init().is_err() {
        return 0;
    }
    let mut n = 0;
    match call!(cuDeviceGetCount(&mut n)) {
        Ok(()) => *DEVICE_COUNT.get_or_init(|| n.max(0) as usize),
        Err(_) => 0,
    }
}

/// [`device_count`] once the driver answered.
static DEVICE_COUNT: OnceLock<usize> = OnceLock::new();

/// Primary contexts retained so far, by device ordinal (addresses; 0: not
/// yet). No lock: a device's context is retained outside any lock of ours
/// (its first creation can wait for the whole driver) and published with a
/// compare-and-swap; a thread that loses the race releases its extra
/// reference (the driver's primary context is one per device, so both got
/// the same context).
static PRIMARY: OnceLock<Vec<AtomicUsize>> = OnceLock::new();

fn primary_context(device: i32) -> Result<cu::CUcontext> {
    init()?;
    let count = device_count();
    if device < 0 || device as usize >= count {
        return Err(Error::InvalidArgument(format!(
            "device {device} does not exist (device count {count})"
        )));
    }
    let table = PRIMARY.get_or_init(|| {
        let table: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(0)).collect();
        if eager_contexts() {
            retain_every_primary_context(&table);
        }
        table
    });
    let slot = &table[device as usize];
    let known = slot.load(Ordering::Acquire);
    if known != 0 {
        return Ok(known as cu::CUcontext);
    }
    let (dev, ctx) = retain_primary_context(device)?;
    match slot.compare_exchange(0, ctx as usize, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(ctx),
        Err(theirs) => {
            // Another thread published the context first: keep one reference.
            if let Err(e) = call!(cuDevicePrimaryCtxRelease_v2(dev)) {
                log::warn!("cuDevicePrimaryCtxRelease of device {device}: {e}");
            }
            Ok(theirs as cu::CUcontext)
        }
    }
}

/// Retains `device`'s primary context (one more reference to it); returns
/// the driver's device handle with it, for the matching release.
fn retain_primary_context(device: i32) -> Result<(cu::CUdevice, cu::CUcontext)> {
    let mut dev = 0;
    call!(cuDeviceGet(&mut dev, device))?;
    let mut ctx: cu::CUcontext = std::ptr::null_mut();
    call!(cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
    Ok((dev, ctx))
}

/// Whether every device's primary context is made at the first use of
/// any (the default; `RMM_LAZY_CONTEXTS=1` makes each at its first use).
/// On two H200s (driver 580.159) a context made while other threads work on
/// another device took part in stalls of the container tests (repro/README.md).
fn eager_contexts() -> bool {
    !crate::env::lazy_contexts()
}

/// Retains the primary context of every device into `table`, once, before
/// any other driver work of ours can run (the table is still being built).
fn retain_every_primary_context(table: &[AtomicUsize]) {
    for (ordinal, slot) in table.iter().enumerate() {
        match retain_primary_context(ordinal as i32) {
            Ok((_, ctx)) => slot.store(ctx as usize, Ordering::Release),
            // Left for the lazy path, which reports the error to its caller.
            Err(e) => log::warn!("retaining device {ordinal}'s primary context: {e}"),
        }
    }
}

thread_local! {
    static HAS_CONTEXT: Cell<bool> = const { Cell::new(false) };
}

/// Makes sure this thread has a current context (device 0's primary context
/// if it had none). Cheap after the first call on a thread.
pub fn ensure_context() -> Result<()> {
    if HAS_CONTEXT.with(|c| c.get()) {
        return Ok(());
    }
    make_context_current()
}

/// [`ensure_context`] without its per-thread shortcut: asks the driver
/// whether this thread has a current context and makes device 0's primary
/// context current if not.
fn make_context_current() -> Result<()> {
    init()?;
    let mut ctx: cu::CUcontext = std::ptr::null_mut();
    call!(cuCtxGetCurrent(&mut ctx))?;
    if ctx.is_null() {
        let primary = primary_context(0)?;
        call!(cuCtxSetCurrent(primary))?;
    }
    HAS_CONTEXT.with(|c| c.set(true));
    Ok(())
}

/// Runs the driver call `f` without asking first whether this thread has a
/// current context: where the driver reports none
/// (`CUDA_ERROR_INVALID_CONTEXT`), it makes one current
/// ([`make_context_current`]) and runs `f` once more.
///
/// The stream-ordered pool calls use it on their hot path. A call that
/// succeeds then costs no thread-local lookup, and in a shared library (a
/// Python extension, any `cdylib`) every such lookup is a call to
/// `__tls_get_addr`. Session 12 measured the difference beside RMM in one
/// process (`benches/rmm_ab`): see `docs/perf/h200-2026-12-01-s12`.
#[inline]
fn with_context(mut f: impl FnMut() -> cu::CUresult) -> Result<cu::CUresult> {
    init()?;
    let status = f();
    if status != cu::CUresult::CUDA_ERROR_INVALID_CONTEXT {
        return Ok(status);
    }
    again_with_context(f)
}

/// [`with_context`]'s second try, once per thread that had no context (out
/// of line, so that the first try stays small enough to inline).
#[cold]
#[inline(never)]
fn again_with_context(mut f: impl FnMut() -> cu::CUresult) -> Result<cu::CUresult> {
    make_context_current()?;
    Ok(f())
}

/// Ordinal of the device whose context is current on this thread.
pub fn current_device() -> Result<i32> {
    ensure_context()?;
    let mut dev = 0;
    call!(cuCtxGetDevice(&mut dev))?;
    Ok(dev)
}

/// Makes `device`'s primary context current on this thread (`cudaSetDevice`).
pub fn set_current_device(device: i32) -> Result<()> {
    let ctx = primary_context(device)?;
    call!(cuCtxSetCurrent(ctx))?;
    HAS_CONTEXT.with(|c| c.set(true));
    Ok(())
}

/// Free and total memory of the current device, in bytes.
pub fn mem_get_info() -> Result<(usize, usize)> {
    ensure_context()?;
    let (mut free, mut total) = (0usize, 0usize);
    call!(cuMemGetInfo_v2(&mut free, &mut total))?;
    Ok((free, total))
}

/// An integer attribute of `device`.
pub fn device_attribute(device: i32, attribute: cu::CUdevice_attribute) -> Result<i32> {
    init()?;
    let mut dev = 0;
    call!(cuDeviceGet(&mut dev, device))?;
    let mut value = 0;
    call!(cuDeviceGetAttribute(&mut value, attribute, dev))?;
    Ok(value)
}

/// Whether `device` supports stream-ordered allocation (`cuMemAllocAsync`).
pub fn supports_memory_pools(device: i32) -> Result<bool> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
    )
    .map(|v| v != 0)
}

/// Whether `device` supports concurrent managed access (prefetching).
pub fn supports_concurrent_managed_access(device: i32) -> Result<bool> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS,
    )
    .map(|v| v != 0)
}

/// Whether `device` supports the virtual memory management API.
pub fn supports_virtual_memory(device: i32) -> Result<bool> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_VIRTUAL_ADDRESS_MANAGEMENT_SUPPORTED,
    )
    .map(|v| v != 0)
}

/// Whether `device` can access pageable host memory (plain `malloc`
/// memory) coherently: `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`, true
/// on systems with HMM or ATS (e.g. Grace Hopper), false on most x86 hosts.
pub fn supports_pageable_memory_access(device: i32) -> Result<bool> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
    )
    .map(|v| v != 0)
}

/// Synchronises the current context (`cudaDeviceSynchronize`).
pub fn device_synchronize() -> Result<()> {
    ensure_context()?;
    call!(cuCtxSynchronize())
}

// ---------------------------------------------------------------------------
// Plain allocations
// ---------------------------------------------------------------------------

/// `cuMemAlloc`.
pub fn mem_alloc(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: cu::CUdeviceptr = 0;
    call!(cuMemAlloc_v2(&mut p, bytes), requested = bytes)?;
    Ok(DevicePtr::new(p))
}

/// `cuMemFree`.
///
/// # Safety
/// `ptr` came from [`mem_alloc`] or [`mem_alloc_managed`] and is not used after.
pub unsafe fn mem_free(ptr: DevicePtr) -> Result<()> {
    ensure_context()?;
    call!(cuMemFree_v2(ptr.addr()))
}

/// `cuMemAllocManaged` with global attachment.
pub fn mem_alloc_managed(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: cu::CUdeviceptr = 0;
    call!(
        cuMemAllocManaged(&mut p, bytes, cu::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32),
        requested = bytes
    )?;
    Ok(DevicePtr::new(p))
}

/// `cuMemHostAlloc` (page-locked, portable, device-mapped host memory).
pub fn mem_host_alloc(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP
    call!(cuMemHostAlloc(&mut p, bytes, 0x01 | 0x02), requested = bytes)?;
    Ok(DevicePtr::new(p as u64))
}

/// `cuMemFreeHost`.
///
/// # Safety
/// `ptr` came from [`mem_host_alloc`] and is not used after.
pub unsafe fn mem_free_host(ptr: DevicePtr) -> Result<()> {
    ensure_context()?;
    call!(cuMemFreeHost(ptr.addr() as *mut c_void))
}

// ---------------------------------------------------------------------------
// Stream-ordered allocation and driver pools
// ---------------------------------------------------------------------------

/// `cuMemAllocFromPoolAsync`.
#[inline(always)]
pub fn mem_alloc_from_pool_async(bytes: usize, pool: usize, stream: usize) -> Result<DevicePtr> {
    let mut p: cu::CUdeviceptr = 0;
    let status = with_context(|| {
        // SAFETY: `p` is a valid out-pointer; the driver validates the pool
        // and stream handles.
        unsafe {
            cu::cuMemAllocFromPoolAsync(&mut p, bytes, pool as cu::CUmemoryPool, stream as cu::CUstream)
        }
    })?;
    check(status, "cuMemAllocFromPoolAsync", bytes)?;
    Ok(DevicePtr::new(p))
}

/// `cuMemFreeAsync`.
///
/// # Safety
/// `ptr` came from a stream-ordered allocation and is not used after in
/// `stream` order.
#[inline]
pub unsafe fn mem_free_async(ptr: DevicePtr, stream: usize) -> Result<()> {
    let status = with_context(|| {
        // SAFETY: the caller's contract; the driver validates the handles.
        unsafe { cu::cuMemFreeAsync(ptr.addr(), stream as cu::CUstream) }
    })?;
    check(status, "cuMemFreeAsync", 0)
}

/// Creates a driver memory pool on `device` (`cuMemPoolCreate`).
/// `handle_types` is a `CUmemAllocationHandleType` bit set (0 for none).
pub fn mem_pool_create(device: i32, handle_types: u32) -> Result<usize> {
    ensure_context()?;
    // SAFETY: CUmemPoolProps is a plain C struct for which all-zero is valid.
    let mut props: cu::CUmemPoolProps = unsafe { std::mem::zeroed() };
    props.allocType = cu::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    // The handle-type "enum" is a C bit set (a newtype in cudarc); the driver
    // validates the bits.
    props.handleTypes = cu::CUmemAllocationHandleType(handle_types);
    props.location = cu::CUmemLocation {
        type_: cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    };
    let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
    call!(cuMemPoolCreate(&mut pool, &props))?;
    Ok(pool as usize)
}

/// `CU_MEM_ALLOCATION_TYPE_MANAGED`: the CUDA 13 value of
/// `CUmemAllocationType`, absent from the CUDA 12.8 declarations this
/// module is built with (so passed as the C enum's integer, never as the
/// Rust enum).
const ALLOCATION_TYPE_MANAGED: u32 = 2;

/// The signature of `cuMemGetDefaultMemPool` (CUDA 13), looked up at run
/// time: the allocation type is the C enum's integer.
type GetDefaultMemPool =
    unsafe extern "C" fn(*mut cu::CUmemoryPool, *mut cu::CUmemLocation, u32) -> cu::CUresult;

/// The default pool of managed memory of `device` (`cuMemGetDefaultMemPool`
/// with `CU_MEM_ALLOCATION_TYPE_MANAGED`, preferred location the device).
/// A CUDA 13 entry point, so not in [`ENTRY_POINTS`]: it is looked up at
/// each call, and a driver without it is reported, not a failed start.
///
/// # Errors
/// [`Error::Logic`] when the driver lacks the entry point (older than CUDA
/// 13) or refuses managed pools on this device; driver errors otherwise.
pub fn mem_managed_default_pool(device: i32) -> Result<usize> {
    ensure_context()?;
    // SAFETY: ensure_context() ran init(), which found the library, so
    // culib() returns it without panicking.
    let lib = unsafe { cu::culib() };
    // SAFETY: the symbol, when present, has exactly this C signature
    // (cuda.h of CUDA 13: CUresult cuMemGetDefaultMemPool(CUmemoryPool*,
    // CUmemLocation*, CUmemAllocationType)).
    let get = match unsafe { lib.get::<GetDefaultMemPool>(b"cuMemGetDefaultMemPool") } {
        Ok(f) => f,
        Err(_) => {
            return Err(Error::Logic(format!(
                "managed driver pools need a CUDA 13 driver: {DRIVER_LIBRARY} lacks cuMemGetDefaultMemPool"
            )))
        }
    };
    let mut location = cu::CUmemLocation {
        type_: cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    };
    let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: valid out-pointer and location for the duration of the call.
    let status = unsafe { get(&mut pool, &mut location, ALLOCATION_TYPE_MANAGED) };
    match check(status, "cuMemGetDefaultMemPool", 0) {
        Ok(()) if !pool.is_null() => Ok(pool as usize),
        Ok(()) => Err(Error::Logic(format!("device {device} returned no managed pool"))),
        Err(Error::Cuda { code, .. }) if code == 801 || code == 1 => Err(Error::Logic(format!(
            "device {device} has no managed driver pool (cuMemGetDefaultMemPool: {})",
            error_name(status)
        ))),
        Err(e) => Err(e),
    }
}

/// `CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR` (a bit of the pool's
/// shareable handle types).
pub const HANDLE_TYPE_POSIX_FD: u32 = 1;
/// `CU_MEM_HANDLE_TYPE_FABRIC`.
pub const HANDLE_TYPE_FABRIC: u32 = 8;

/// Exports `pool` (made with the POSIX file descriptor handle type) as a
/// new file descriptor owned by the caller
/// (`cuMemPoolExportToShareableHandle`).
pub fn mem_pool_export_posix_fd(pool: usize) -> Result<i32> {
    ensure_context()?;
    let mut fd: std::ffi::c_int = -1;
    call!(cuMemPoolExportToShareableHandle(
        (&mut fd as *mut std::ffi::c_int).cast::<c_void>(),
        pool as cu::CUmemoryPool,
        cu::CUmemAllocationHandleType(HANDLE_TYPE_POSIX_FD),
        0
    ))?;
    Ok(fd)
}

/// Imports a pool of another process from its POSIX file descriptor
/// (`cuMemPoolImportFromShareableHandle`); the descriptor stays the
/// caller's to close.
pub fn mem_pool_import_posix_fd(fd: i32) -> Result<usize> {
    ensure_context()?;
    let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
    // The handle argument of a POSIX descriptor is the descriptor itself,
    // passed in the pointer-sized slot.
    call!(cuMemPoolImportFromShareableHandle(
        &mut pool,
        fd as isize as *mut c_void,
        cu::CUmemAllocationHandleType(HANDLE_TYPE_POSIX_FD),
        0
    ))?;
    Ok(pool as usize)
}

/// The 64 bytes that let another process map `ptr`, an allocation of an
/// exportable pool (`cuMemPoolExportPointer`).
pub fn mem_pool_export_pointer(ptr: DevicePtr) -> Result<[u8; 64]> {
    ensure_context()?;
    let mut data = cu::CUmemPoolPtrExportData { reserved: [0; 64] };
    call!(cuMemPoolExportPointer(&mut data, ptr.addr()))?;
    Ok(data.reserved)
}

/// Maps an allocation of another process's pool, imported as `pool`, from
/// its export data (`cuMemPoolImportPointer`).
pub fn mem_pool_import_pointer(pool: usize, data: [u8; 64]) -> Result<DevicePtr> {
    ensure_context()?;
    let mut share = cu::CUmemPoolPtrExportData { reserved: data };
    let mut p: cu::CUdeviceptr = 0;
    call!(cuMemPoolImportPointer(
        &mut p,
        pool as cu::CUmemoryPool,
        &mut share
    ))?;
    Ok(DevicePtr::new(p))
}

/// Whether `device` can export pools as POSIX file descriptors (bit 1 of
/// `CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES`).
pub fn supports_posix_fd_pools(device: i32) -> Result<bool> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES,
    )
    .map(|v| v as u32 & HANDLE_TYPE_POSIX_FD != 0)
}

/// `cuMemPoolDestroy`.
///
/// # Safety
/// `pool` came from [`mem_pool_create`] and is not used after.
pub unsafe fn mem_pool_destroy(pool: usize) -> Result<()> {
    ensure_context()?;
    call!(cuMemPoolDestroy(pool as cu::CUmemoryPool))
}

/// Releases a pool's unused memory down to `keep` bytes (`cuMemPoolTrimTo`).
pub fn mem_pool_trim_to(pool: usize, keep: usize) -> Result<()> {
    ensure_context()?;
    call!(cuMemPoolTrimTo(pool as cu::CUmemoryPool, keep))
}

/// Sets an `int` pool attribute (the `CU_MEMPOOL_ATTR_REUSE_*` switches).
pub fn mem_pool_set_i32(pool: usize, attr: cu::CUmemPool_attribute, value: i32) -> Result<()> {
    ensure_context()?;
    let mut v = value;
    call!(cuMemPoolSetAttribute(
        pool as cu::CUmemoryPool,
        attr,
        (&mut v as *mut i32).cast()
    ))
}

/// Sets a 64-bit pool attribute such as the release threshold.
pub fn mem_pool_set_u64(pool: usize, attr: cu::CUmemPool_attribute, value: u64) -> Result<()> {
    ensure_context()?;
    let mut v = value;
    call!(cuMemPoolSetAttribute(
        pool as cu::CUmemoryPool,
        attr,
        (&mut v as *mut u64).cast()
    ))
}

/// Reads a 64-bit pool attribute.
pub fn mem_pool_get_u64(pool: usize, attr: cu::CUmemPool_attribute) -> Result<u64> {
    ensure_context()?;
    let mut v: u64 = 0;
    call!(cuMemPoolGetAttribute(
        pool as cu::CUmemoryPool,
        attr,
        (&mut v as *mut u64).cast()
    ))?;
    Ok(v)
}

/// Pool attributes used by the crate.
pub use cu::CUmemPool_attribute as PoolAttribute;

// ---------------------------------------------------------------------------
// Virtual memory management
// ---------------------------------------------------------------------------

fn pinned_device_prop(device: i32) -> cu::CUmemAllocationProp {
    // SAFETY: CUmemAllocationProp is a plain C struct for which all-zero is valid.
    let mut prop: cu::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = cu::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = cu::CUmemLocation {
        type_: cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
        id: device,
    };
    prop
}

/// Minimum granularity of physical allocations on `device`.
pub fn vmm_granularity(device: i32) -> Result<usize> {
    ensure_context()?;
    let prop = pinned_device_prop(device);
    let mut g = 0usize;
    call!(cuMemGetAllocationGranularity(
        &mut g,
        &prop,
        cu::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM
    ))?;
    Ok(g)
}

/// Reserves `bytes` of virtual address space (`cuMemAddressReserve`).
pub fn vmm_reserve(bytes: usize, alignment: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: cu::CUdeviceptr = 0;
    call!(
        cuMemAddressReserve(&mut p, bytes, alignment, 0, 0),
        requested = bytes
    )?;
    Ok(DevicePtr::new(p))
}

/// Frees a reservation (`cuMemAddressFree`).
///
/// # Safety
/// Nothing is mapped in the range any more.
pub unsafe fn vmm_free_reservation(ptr: DevicePtr, bytes: usize) -> Result<()> {
    ensure_context()?;
    call!(cuMemAddressFree(ptr.addr(), bytes))
}

/// Creates `bytes` of physical memory on `device` (`cuMemCreate`); returns the handle.
pub fn vmm_create(device: i32, bytes: usize) -> Result<u64> {
    ensure_context()?;
    let prop = pinned_device_prop(device);
    let mut h: cu::CUmemGenericAllocationHandle = 0;
    call!(cuMemCreate(&mut h, bytes, &prop, 0), requested = bytes)?;
    Ok(h)
}

/// Releases a physical allocation handle (`cuMemRelease`).
///
/// # Safety
/// The handle came from [`vmm_create`]; mappings keep the memory alive.
pub unsafe fn vmm_release(handle: u64) -> Result<()> {
    ensure_context()?;
    call!(cuMemRelease(handle))
}

/// Maps `handle` at `ptr` and grants `device` read-write access.
pub fn vmm_map(ptr: DevicePtr, bytes: usize, handle: u64, device: i32) -> Result<()> {
    ensure_context()?;
    call!(cuMemMap(ptr.addr(), bytes, 0, handle, 0), requested = bytes)?;
    let desc = cu::CUmemAccessDesc {
        location: cu::CUmemLocation {
            type_: cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        flags: cu::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    let r = call!(cuMemSetAccess(ptr.addr(), bytes, &desc, 1), requested = bytes);
    if r.is_err() {
        // SAFETY: the range was mapped just above and nothing uses it yet.
        let _ = unsafe { vmm_unmap(ptr, bytes) };
    }
    r
}

/// Unmaps a range (`cuMemUnmap`).
///
/// # Safety
/// No pending or future work uses the range.
pub unsafe fn vmm_unmap(ptr: DevicePtr, bytes: usize) -> Result<()> {
    ensure_context()?;
    call!(cuMemUnmap(ptr.addr(), bytes))
}

// ---------------------------------------------------------------------------
// Streams and events
// ---------------------------------------------------------------------------

/// Creates a stream (`cuStreamCreate`); `non_blocking` sets
/// `CU_STREAM_NON_BLOCKING` (no implicit synchronisation with the legacy
/// default stream). (With the `cust` feature, cust makes the streams.)
#[cfg(not(feature = "cust"))]
pub fn stream_create(non_blocking: bool) -> Result<usize> {
    ensure_context()?;
    let mut s: cu::CUstream = std::ptr::null_mut();
    let flags = if non_blocking {
        cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32
    } else {
        cu::CUstream_flags::CU_STREAM_DEFAULT as u32
    };
    call!(cuStreamCreate(&mut s, flags))?;
    Ok(s as usize)
}

/// Destroys a stream (`cuStreamDestroy`); work already queued on it still
/// completes.
///
/// # Safety
/// `stream` came from [`stream_create`] and is not used after.
#[cfg(not(feature = "cust"))]
pub unsafe fn stream_destroy(stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuStreamDestroy_v2(stream as cu::CUstream))
}

/// Blocks until all work on `stream` has finished.
pub fn stream_synchronize(stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuStreamSynchronize(stream as cu::CUstream))
}

/// True when all work on `stream` has finished.
pub fn stream_query(stream: usize) -> Result<bool> {
    ensure_context()?;
    // SAFETY: the stream handle is validated by the driver.
    let status = unsafe { cu::cuStreamQuery(stream as cu::CUstream) };
    match status {
        cu::CUresult::CUDA_SUCCESS => Ok(true),
        cu::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => check(other, "cuStreamQuery", 0).map(|_| false),
    }
}

/// Makes `stream` wait (on the GPU) for `event`.
pub fn stream_wait_event(stream: usize, event: usize) -> Result<()> {
    ensure_context()?;
    call!(cuStreamWaitEvent(stream as cu::CUstream, event as cu::CUevent, 0))
}

/// Creates an event; timing is disabled unless `timing` is set.
pub fn event_create(timing: bool) -> Result<usize> {
    ensure_context()?;
    let mut e: cu::CUevent = std::ptr::null_mut();
    let flags = if timing {
        0
    } else {
        cu::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
    };
    call!(cuEventCreate(&mut e, flags))?;
    Ok(e as usize)
}

/// Destroys an event.
///
/// # Safety
/// `event` came from [`event_create`] and is not used after.
pub unsafe fn event_destroy(event: usize) -> Result<()> {
    ensure_context()?;
    call!(cuEventDestroy_v2(event as cu::CUevent))
}

/// Records `event` on `stream`.
pub fn event_record(event: usize, stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuEventRecord(event as cu::CUevent, stream as cu::CUstream))
}

/// Blocks until `event` has completed.
pub fn event_synchronize(event: usize) -> Result<()> {
    ensure_context()?;
    call!(cuEventSynchronize(event as cu::CUevent))
}

/// Milliseconds between two recorded timing events.
pub fn event_elapsed_ms(start: usize, end: usize) -> Result<f32> {
    ensure_context()?;
    let mut ms = 0f32;
    call!(cuEventElapsedTime(
        &mut ms,
        start as cu::CUevent,
        end as cu::CUevent
    ))?;
    Ok(ms)
}

// ---------------------------------------------------------------------------
// Copies, memsets, prefetch, pointer queries, peers
// ---------------------------------------------------------------------------

/// `cuMemcpyAsync` between any two addresses of the unified address space.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy completes in `stream` order.
pub unsafe fn memcpy_async(dst: u64, src: u64, bytes: usize, stream: usize) -> Result<()> {
    ensure_context()?;
    if bytes == 0 {
        return Ok(());
    }
    call!(cuMemcpyAsync(dst, src, bytes, stream as cu::CUstream))
}

/// `cuMemcpyPeerAsync` from `src` on `src_device` to `dst` on `dst_device`.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy completes in `stream` order.
pub unsafe fn memcpy_peer_async(
    dst: u64,
    dst_device: i32,
    src: u64,
    src_device: i32,
    bytes: usize,
    stream: usize,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let dctx = primary_context(dst_device)?;
    let sctx = primary_context(src_device)?;
    call!(cuMemcpyPeerAsync(
        dst,
        dctx,
        src,
        sctx,
        bytes,
        stream as cu::CUstream
    ))
}

/// Fills `count` elements of 1, 2 or 4 bytes at `dst` with `value` (`cuMemsetD*Async`).
///
/// # Safety
/// The range is valid device memory until the memset completes in `stream` order.
pub unsafe fn memset_async(
    dst: u64,
    value: u32,
    element_size: usize,
    count: usize,
    stream: usize,
) -> Result<()> {
    ensure_context()?;
    if count == 0 {
        return Ok(());
    }
    let s = stream as cu::CUstream;
    match element_size {
        1 => call!(cuMemsetD8Async(dst, value as u8, count, s)),
        2 => call!(cuMemsetD16Async(dst, value as u16, count, s)),
        4 => call!(cuMemsetD32Async(dst, value, count, s)),
        n => Err(Error::InvalidArgument(format!(
            "memset element size {n} (must be 1, 2 or 4)"
        ))),
    }
}

/// Prefetches managed memory to `device` (`cuMemPrefetchAsync`).
pub fn mem_prefetch_async(ptr: DevicePtr, bytes: usize, device: i32, stream: usize) -> Result<()> {
    ensure_context()?;
    call!(cuMemPrefetchAsync(
        ptr.addr(),
        bytes,
        device,
        stream as cu::CUstream
    ))
}

/// Sets the preferred location of `[ptr, ptr + bytes)` (managed or, where
/// the device can access pageable memory, system memory) to `device`, or
/// to the host when `device` is `None` (`cuMemAdvise` with
/// `CU_MEM_ADVISE_SET_PREFERRED_LOCATION`). Advice only: no memory is
/// touched or moved by the call.
pub fn mem_advise_preferred_location(ptr: DevicePtr, bytes: usize, device: Option<i32>) -> Result<()> {
    ensure_context()?;
    // CU_DEVICE_CPU (-1) names the host; a device by its driver handle.
    let location = match device {
        Some(ordinal) => {
            let mut dev = 0;
            call!(cuDeviceGet(&mut dev, ordinal))?;
            dev
        }
        None => -1,
    };
    call!(cuMemAdvise(
        ptr.addr(),
        bytes,
        cu::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION,
        location
    ))
}

/// The device that `[ptr, ptr + bytes)` of managed memory was last
/// prefetched to (`CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION`): a device
/// ordinal, `-1` (`CU_DEVICE_CPU`) for the host, `-2` when never prefetched
/// or prefetched to different places.
pub fn mem_range_last_prefetch_location(ptr: DevicePtr, bytes: usize) -> Result<i32> {
    ensure_context()?;
    let mut location: i32 = -2;
    call!(cuMemRangeGetAttribute(
        (&mut location as *mut i32).cast(),
        std::mem::size_of::<i32>(),
        cu::CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
        ptr.addr(),
        bytes
    ))?;
    Ok(location)
}

/// What the driver knows about an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointerKind {
    /// Device memory (including managed memory) of the given device ordinal.
    Device(i32),
    /// Host memory known to the driver (pinned / registered).
    Host,
    /// Not an address the driver knows (plain pageable host memory or garbage).
    Unknown,
}

/// Classifies `ptr` with `cuPointerGetAttribute`.
pub fn pointer_kind(ptr: u64) -> Result<PointerKind> {
    ensure_context()?;
    let mut mem_type: u32 = 0;
    // SAFETY: `mem_type` is a valid out-pointer of the attribute's size.
    let status = unsafe {
        cu::cuPointerGetAttribute(
            (&mut mem_type as *mut u32).cast(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr,
        )
    };
    if status == cu::CUresult::CUDA_ERROR_INVALID_VALUE {
        return Ok(PointerKind::Unknown);
    }
    check(status, "cuPointerGetAttribute", 0)?;
    if mem_type == cu::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
        return Ok(PointerKind::Host);
    }
    let mut ordinal: i32 = -1;
    call!(cuPointerGetAttribute(
        (&mut ordinal as *mut i32).cast(),
        cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        ptr
    ))?;
    Ok(PointerKind::Device(ordinal))
}

/// Whether `ptr` lies in memory of a stream-ordered driver pool
/// (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`); `false` for an address
/// the driver does not know.
pub fn is_driver_pool_memory(ptr: u64) -> Result<bool> {
    ensure_context()?;
    let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer of the attribute's size (a handle).
    let status = unsafe {
        cu::cuPointerGetAttribute(
            (&mut pool as *mut cu::CUmemoryPool).cast(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
            ptr,
        )
    };
    if status == cu::CUresult::CUDA_ERROR_INVALID_VALUE {
        return Ok(false);
    }
    check(status, "cuPointerGetAttribute", 0)?;
    Ok(!pool.is_null())
}

/// Whether `device` can access `peer`'s memory directly.
pub fn can_access_peer(device: i32, peer: i32) -> Result<bool> {
    init()?;
    let (mut d, mut p) = (0, 0);
    call!(cuDeviceGet(&mut d, device))?;
    call!(cuDeviceGet(&mut p, peer))?;
    let mut can = 0;
    call!(cuDeviceCanAccessPeer(&mut can, d, p))?;
    Ok(can != 0)
}

/// Lets the current context access `peer`'s memory; already-enabled is success.
pub fn enable_peer_access(peer: i32) -> Result<()> {
    ensure_context()?;
    let ctx = primary_context(peer)?;
    // SAFETY: `ctx` is a retained primary context.
    let status = unsafe { cu::cuCtxEnablePeerAccess(ctx, 0) };
    if status == cu::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
        return Ok(());
    }
    check(status, "cuCtxEnablePeerAccess", 0)
}

// ---------------------------------------------------------------------------
// Modules and kernel launches (used by the kernels of the rmm-suite package)
// ---------------------------------------------------------------------------

/// Loads a PTX module (NUL-terminated text) into the current context.
pub fn module_load_data(ptx_nul_terminated: &[u8]) -> Result<usize> {
    ensure_context()?;
    if ptx_nul_terminated.last() != Some(&0) {
        return Err(Error::InvalidArgument("PTX image must be NUL-terminated".into()));
    }
    let mut m: cu::CUmodule = std::ptr::null_mut();
    call!(cuModuleLoadData(&mut m, ptx_nul_terminated.as_ptr().cast()))?;
    Ok(m as usize)
}

/// Looks up a kernel by its unmangled name.
pub fn module_get_function(module: usize, name: &CStr) -> Result<usize> {
    ensure_context()?;
    let mut f: cu::CUfunction = std::ptr::null_mut();
    call!(cuModuleGetFunction(&mut f, module as cu::CUmodule, name.as_ptr()))?;
    Ok(f as usize)
}

/// Number of multiprocessors of `device`.
pub fn multiprocessor_count(device: i32) -> Result<i32> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )
}

/// How many blocks of `block_size` threads (with `dynamic_shared` bytes of
/// dynamic shared memory) of `function` fit on one multiprocessor at once
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`).
pub fn occupancy_max_active_blocks(function: usize, block_size: u32, dynamic_shared: usize) -> Result<i32> {
    ensure_context()?;
    let mut blocks: std::os::raw::c_int = 0;
    call!(cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &mut blocks,
        function as cu::CUfunction,
        block_size as std::os::raw::c_int,
        dynamic_shared
    ))?;
    Ok(blocks)
}

/// Launches `function` on `stream` (`cuLaunchKernel`).
///
/// # Safety
/// `params` holds one pointer per kernel parameter, each pointing to a
/// value of exactly the parameter's type, and the kernel's memory accesses
/// are valid for the whole time it runs in `stream` order.
pub unsafe fn launch_kernel(
    function: usize,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared_bytes: u32,
    stream: usize,
    params: &mut [*mut c_void],
) -> Result<()> {
    ensure_context()?;
    call!(cuLaunchKernel(
        function as cu::CUfunction,
        grid.0,
        grid.1,
        grid.2,
        block.0,
        block.1,
        block.2,
        shared_bytes,
        stream as cu::CUstream,
        params.as_mut_ptr(),
        std::ptr::null_mut()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stream-ordered pool calls ask nothing before calling the driver
    /// ([`with_context`]): on a new thread, which has no current context,
    /// and on a thread whose context was taken away after
    /// [`ensure_context`] had seen one, they make device 0's primary
    /// context current and succeed.
    #[test]
    fn pool_calls_make_a_context_current_where_there_is_none() {
        crate::require_gpu!();
        let pool = mem_pool_create(0, 0).unwrap();
        std::thread::spawn(move || {
            let none = || {
                let mut ctx: cu::CUcontext = std::ptr::null_mut();
                call!(cuCtxGetCurrent(&mut ctx)).unwrap();
                ctx.is_null()
            };
            assert!(none(), "a new thread starts without a current context");
            let p = mem_alloc_from_pool_async(256, pool, 0).unwrap();
            assert!(!none());
            // SAFETY: `p` came from the pool and is not used.
            unsafe { mem_free_async(p, 0).unwrap() };
            ensure_context().unwrap();
            call!(cuCtxSetCurrent(std::ptr::null_mut())).unwrap();
            let p = mem_alloc_from_pool_async(256, pool, 0).unwrap();
            call!(cuCtxSetCurrent(std::ptr::null_mut())).unwrap();
            // SAFETY: as above.
            unsafe { mem_free_async(p, 0).unwrap() };
            assert!(!none());
            call!(cuCtxSynchronize()).unwrap();
        })
        .join()
        .unwrap();
        // SAFETY: the pool's only allocations were freed and synchronised.
        unsafe { mem_pool_destroy(pool).unwrap() };
    }

    /// Every `cu*` function this file calls is in [`ENTRY_POINTS`], so that
    /// [`super::init`] checks it before cudarc could panic on it.
    #[test]
    fn entry_points_cover_every_call() {
        let source = include_str!("driver.rs");
        let mut called = Vec::new();
        for marker in ["call!(", "cu::"] {
            for (at, _) in source.match_indices(marker) {
                let name: String = source[at + marker.len()..]
                    .trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if name.starts_with("cu") {
                    called.push(name);
                }
            }
        }
        called.sort();
        called.dedup();
        // Driver entry points are `cu` + a capital letter; this keeps out the
        // markers in this test and cudarc's loader helpers (`cu::culib`).
        called.retain(|n| n.len() > 2 && n.as_bytes()[2].is_ascii_uppercase());
        assert!(called.len() > 40, "found only {called:?}");
        for name in &called {
            assert!(
                ENTRY_POINTS.contains(&name.as_str()),
                "{name} is called but not in ENTRY_POINTS"
            );
        }
        for name in ENTRY_POINTS {
            assert!(
                called.iter().any(|c| c == name),
                "{name} is in ENTRY_POINTS but never called"
            );
        }
    }
}
