//! Initialisation, devices, contexts and peers.
//!
//! # Safety contract
//! The calls of this group take no handle of ours except a
//! [`ContextHandle`], which is a retained primary context: made only by
//! [`primary_context`], never released while the process runs, so every
//! `ContextHandle` is live. Every other argument is a device ordinal
//! (checked by the driver) or an out-pointer to a local of the C type the
//! entry point writes, valid for the call.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use cudarc::driver::sys as cu;

use super::{call, check, DRIVER_LIBRARY, ENTRY_POINTS};
use crate::error::{Error, Result};

/// A device's primary context (`CUcontext`), retained by [`primary_context`]
/// and kept for the life of the process: a `ContextHandle` is always live,
/// so the functions that take one are safe.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextHandle(usize);

impl ContextHandle {
    /// The driver's type, for a call.
    pub(super) fn raw(self) -> cu::CUcontext {
        self.0 as cu::CUcontext
    }
}

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

/// True once [`init`] has run in this process (whatever it answered): every
/// driver call of the crate goes through it first.
pub fn init_attempted() -> bool {
    INIT.get().is_some()
}

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
        // SAFETY: load_library found every entry point; cuInit takes a flags
        // word only (0, the only value the driver accepts).
        check(call("cuInit", || unsafe { cu::cuInit(0) }), "cuInit", 0)
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
    match check(
        // SAFETY: `n` is a valid out-pointer for the call.
        call("cuDeviceGetCount", || unsafe { cu::cuDeviceGetCount(&mut n) }),
        "cuDeviceGetCount",
        0,
    ) {
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

/// `device`'s primary context, retained at its first use and kept for the
/// life of the process.
pub(super) fn primary_context(device: i32) -> Result<ContextHandle> {
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
        return Ok(ContextHandle(known));
    }
    let (dev, ctx) = retain_primary_context(device)?;
    match slot.compare_exchange(0, ctx.0, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(ctx),
        Err(theirs) => {
            // Another thread published the context first: keep one reference.
            // SAFETY: `dev` is the device handle our extra reference was
            // retained with just above; the published one keeps the context.
            let status = call("cuDevicePrimaryCtxRelease_v2", || unsafe {
                cu::cuDevicePrimaryCtxRelease_v2(dev)
            });
            if let Err(e) = check(status, "cuDevicePrimaryCtxRelease_v2", 0) {
                log::warn!("cuDevicePrimaryCtxRelease of device {device}: {e}");
            }
            Ok(ContextHandle(theirs))
        }
    }
}

/// `device`'s primary context ([`primary_context`]) as an integer, to
/// compare with another binding's context handle (the cudarc interop).
#[cfg(feature = "cudarc")]
pub fn primary_context_address(device: i32) -> Result<usize> {
    primary_context(device).map(|c| c.0)
}

/// Retains `device`'s primary context (one more reference to it); returns
/// the driver's device handle with it, for the matching release.
fn retain_primary_context(device: i32) -> Result<(cu::CUdevice, ContextHandle)> {
    let dev = device_handle(device)?;
    let mut ctx: cu::CUcontext = std::ptr::null_mut();
    // SAFETY: `ctx` is a valid out-pointer; `dev` came from cuDeviceGet.
    let status = call("cuDevicePrimaryCtxRetain", || unsafe {
        cu::cuDevicePrimaryCtxRetain(&mut ctx, dev)
    });
    check(status, "cuDevicePrimaryCtxRetain", 0)?;
    Ok((dev, ContextHandle(ctx as usize)))
}

/// The driver's handle of the device with ordinal `device` (`cuDeviceGet`).
pub(super) fn device_handle(device: i32) -> Result<cu::CUdevice> {
    let mut dev = 0;
    check(
        // SAFETY: `dev` is a valid out-pointer; the driver checks the ordinal.
        call("cuDeviceGet", || unsafe { cu::cuDeviceGet(&mut dev, device) }),
        "cuDeviceGet",
        0,
    )?;
    Ok(dev)
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
            Ok((_, ctx)) => slot.store(ctx.0, Ordering::Release),
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
    check(
        // SAFETY: `ctx` is a valid out-pointer for the call.
        call("cuCtxGetCurrent", || unsafe { cu::cuCtxGetCurrent(&mut ctx) }),
        "cuCtxGetCurrent",
        0,
    )?;
    if ctx.is_null() {
        set_current_context(primary_context(0)?)?;
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
/// `__tls_get_addr` (four per allocate/free pair before commit 4dbea9b,
/// 2026-12-01); `benches/rmm_ab` measures the path beside RMM in one
/// process (H200, 2026-12-01, commit e8bb713: the resource 6-10 ns per
/// operation above the bare binding).
#[inline]
pub(super) fn with_context(mut f: impl FnMut() -> cu::CUresult) -> Result<cu::CUresult> {
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
    check(
        // SAFETY: `dev` is a valid out-pointer; a context is current.
        call("cuCtxGetDevice", || unsafe { cu::cuCtxGetDevice(&mut dev) }),
        "cuCtxGetDevice",
        0,
    )?;
    Ok(dev)
}

/// The device ordinal of `ctx`: a primary context retained by rmm is
/// looked up in its table; any other context (one made by another library)
/// is asked by making it current for one `cuCtxGetDevice`
/// (`cuCtxPushCurrent` / `cuCtxPopCurrent`).
///
/// # Safety
/// `ctx` is a live context.
pub(super) unsafe fn device_of_context(ctx: cu::CUcontext) -> Result<i32> {
    if let Some(table) = PRIMARY.get() {
        if let Some(d) = table
            .iter()
            .position(|slot| slot.load(Ordering::Acquire) == ctx as usize)
        {
            return Ok(d as i32);
        }
    }
    check(
        // SAFETY: the caller's contract: `ctx` is live.
        call("cuCtxPushCurrent_v2", || unsafe { cu::cuCtxPushCurrent_v2(ctx) }),
        "cuCtxPushCurrent_v2",
        0,
    )?;
    let mut dev = 0;
    // SAFETY: `dev` is a valid out-pointer; `ctx` is current.
    let asked = check(
        call("cuCtxGetDevice", || unsafe { cu::cuCtxGetDevice(&mut dev) }),
        "cuCtxGetDevice",
        0,
    );
    let mut popped: cu::CUcontext = std::ptr::null_mut();
    // SAFETY: pops the context pushed above; `popped` is a valid out-pointer.
    let pop = check(
        call("cuCtxPopCurrent_v2", || unsafe {
            cu::cuCtxPopCurrent_v2(&mut popped)
        }),
        "cuCtxPopCurrent_v2",
        0,
    );
    asked.and(pop).map(|()| dev)
}

/// Makes `device`'s primary context current on this thread (`cudaSetDevice`).
pub fn set_current_device(device: i32) -> Result<()> {
    set_current_context(primary_context(device)?)?;
    HAS_CONTEXT.with(|c| c.set(true));
    Ok(())
}

/// `cuCtxSetCurrent` of a primary context.
fn set_current_context(ctx: ContextHandle) -> Result<()> {
    // SAFETY: a ContextHandle is a retained primary context, live for the
    // life of the process.
    check(
        call("cuCtxSetCurrent", || unsafe { cu::cuCtxSetCurrent(ctx.raw()) }),
        "cuCtxSetCurrent",
        0,
    )
}

/// Free and total memory of the current device, in bytes.
pub fn mem_get_info() -> Result<(usize, usize)> {
    ensure_context()?;
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: both are valid out-pointers; a context is current.
    let status = call("cuMemGetInfo_v2", || unsafe {
        cu::cuMemGetInfo_v2(&mut free, &mut total)
    });
    check(status, "cuMemGetInfo_v2", 0)?;
    Ok((free, total))
}

/// An integer attribute of `device`.
pub fn device_attribute(device: i32, attribute: cu::CUdevice_attribute) -> Result<i32> {
    init()?;
    let dev = device_handle(device)?;
    let mut value = 0;
    // SAFETY: `value` is a valid out-pointer; `dev` came from cuDeviceGet.
    let status = call("cuDeviceGetAttribute", || unsafe {
        cu::cuDeviceGetAttribute(&mut value, attribute, dev)
    });
    check(status, "cuDeviceGetAttribute", 0)?;
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
    // SAFETY: no argument; a context is current.
    check(
        call("cuCtxSynchronize", || unsafe { cu::cuCtxSynchronize() }),
        "cuCtxSynchronize",
        0,
    )
}

/// Number of multiprocessors of `device`.
pub fn multiprocessor_count(device: i32) -> Result<i32> {
    device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    )
}

/// The compute capability `(major, minor)` of `device`.
pub fn compute_capability(device: i32) -> Result<(i32, i32)> {
    let major = device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    )?;
    let minor = device_attribute(
        device,
        cu::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    )?;
    Ok((major, minor))
}

/// Whether `device` can access `peer`'s memory directly.
pub fn can_access_peer(device: i32, peer: i32) -> Result<bool> {
    init()?;
    let (d, p) = (device_handle(device)?, device_handle(peer)?);
    let mut can = 0;
    // SAFETY: `can` is a valid out-pointer; both devices came from cuDeviceGet.
    let status = call("cuDeviceCanAccessPeer", || unsafe {
        cu::cuDeviceCanAccessPeer(&mut can, d, p)
    });
    check(status, "cuDeviceCanAccessPeer", 0)?;
    Ok(can != 0)
}

/// Lets the current context access `peer`'s memory; already-enabled is success.
pub fn enable_peer_access(peer: i32) -> Result<()> {
    ensure_context()?;
    let ctx = primary_context(peer)?;
    // SAFETY: `ctx` is a retained primary context (live for the process);
    // flags must be 0.
    let status = call("cuCtxEnablePeerAccess", || unsafe {
        cu::cuCtxEnablePeerAccess(ctx.raw(), 0)
    });
    if status == cu::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
        return Ok(());
    }
    check(status, "cuCtxEnablePeerAccess", 0)
}
