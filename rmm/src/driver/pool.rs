//! Stream-ordered allocation and driver pools.
//!
//! # Safety contract
//! Every call here that takes a [`PoolHandle`] or a [`StreamHandle`] is
//! `unsafe`: its caller vouches that each handle is live (a pool made by
//! [`mem_pool_create`] and not destroyed; a device's default pool or an
//! imported pool, both kept for the life of the process; a pool of another
//! library that outlives the call; a stream as in [`super::stream`]) and,
//! for the freeing and destroying calls, that the memory or pool is not
//! used after. Everything else passed is a value, a description built
//! here, or an out-pointer to a local of the entry point's C type.

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::device::{device_attribute, ensure_context, with_context};
use super::stream::StreamHandle;
use super::{call, check, error_name, DRIVER_LIBRARY};
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;

/// A `CUmemoryPool`: made by [`mem_pool_create`], a device's default
/// managed pool ([`mem_managed_default_pool`]), an imported pool
/// ([`mem_pool_import_posix_fd`]), or one of another library entered
/// through [`from_raw`](Self::from_raw).
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PoolHandle(usize);

impl PoolHandle {
    /// A pool handle given as an integer from outside (a `CUmemoryPool` of
    /// another library). Making one is safe; the calls that take it are
    /// `unsafe` and ask that it be live.
    pub const fn from_raw(raw: usize) -> PoolHandle {
        PoolHandle(raw)
    }

    /// The handle as an integer.
    pub const fn as_raw(self) -> usize {
        self.0
    }

    /// The driver's type, for a call.
    #[inline(always)]
    fn raw(self) -> cu::CUmemoryPool {
        self.0 as cu::CUmemoryPool
    }
}

impl std::fmt::LowerHex for PoolHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

/// `cuMemAllocFromPoolAsync`.
///
/// # Safety
/// `pool` and `stream` are live.
#[inline(always)]
pub unsafe fn mem_alloc_from_pool_async(
    bytes: usize,
    pool: PoolHandle,
    stream: StreamHandle,
) -> Result<DevicePtr> {
    let mut p: cu::CUdeviceptr = 0;
    let status = with_context(|| {
        // SAFETY: `p` is a valid out-pointer; the caller's contract: both
        // handles are live.
        call("cuMemAllocFromPoolAsync", || unsafe {
            cu::cuMemAllocFromPoolAsync(&mut p, bytes, pool.raw(), stream.raw())
        })
    })?;
    check(status, "cuMemAllocFromPoolAsync", bytes)?;
    Ok(DevicePtr::new(p))
}

/// `cuMemFreeAsync`.
///
/// # Safety
/// `ptr` came from a stream-ordered allocation and is not used after in
/// `stream` order; `stream` is live.
#[inline]
pub unsafe fn mem_free_async(ptr: DevicePtr, stream: StreamHandle) -> Result<()> {
    let status = with_context(|| {
        // SAFETY: the caller's contract covers the allocation and the stream.
        call("cuMemFreeAsync", || unsafe {
            cu::cuMemFreeAsync(ptr.addr(), stream.raw())
        })
    })?;
    check(status, "cuMemFreeAsync", 0)
}

/// Creates a driver memory pool on `device` (`cuMemPoolCreate`).
/// `handle_types` is a `CUmemAllocationHandleType` bit set (0 for none).
pub fn mem_pool_create(device: i32, handle_types: u32) -> Result<PoolHandle> {
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
    // SAFETY: `pool` is a valid out-pointer and `props` a valid description.
    let status = call("cuMemPoolCreate", || unsafe {
        cu::cuMemPoolCreate(&mut pool, &props)
    });
    check(status, "cuMemPoolCreate", 0)?;
    Ok(PoolHandle(pool as usize))
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
/// A CUDA 13 entry point, so not in [`ENTRY_POINTS`](super::ENTRY_POINTS):
/// it is looked up at each call, and a driver without it is reported, not
/// a failed start.
///
/// # Errors
/// [`Error::Logic`] when the driver lacks the entry point (older than CUDA
/// 13) or refuses managed pools on this device; driver errors otherwise.
pub fn mem_managed_default_pool(device: i32) -> Result<PoolHandle> {
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
        Ok(()) if !pool.is_null() => Ok(PoolHandle(pool as usize)),
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
///
/// # Safety
/// `pool` is live.
pub unsafe fn mem_pool_export_posix_fd(pool: PoolHandle) -> Result<i32> {
    ensure_context()?;
    let mut fd: std::ffi::c_int = -1;
    // SAFETY: `fd` is a valid out-pointer of the handle type's size (an
    // `int`); the caller's contract: `pool` is live.
    let status = call("cuMemPoolExportToShareableHandle", || unsafe {
        cu::cuMemPoolExportToShareableHandle(
            (&mut fd as *mut std::ffi::c_int).cast::<c_void>(),
            pool.raw(),
            cu::CUmemAllocationHandleType(HANDLE_TYPE_POSIX_FD),
            0,
        )
    });
    check(status, "cuMemPoolExportToShareableHandle", 0)?;
    Ok(fd)
}

/// Imports a pool of another process from its POSIX file descriptor
/// (`cuMemPoolImportFromShareableHandle`); the descriptor stays the
/// caller's to close.
pub fn mem_pool_import_posix_fd(fd: i32) -> Result<PoolHandle> {
    ensure_context()?;
    let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer. The handle argument of a POSIX
    // descriptor is the descriptor itself, passed in the pointer-sized slot
    // (never dereferenced); the driver checks that it names an exported pool.
    let status = call("cuMemPoolImportFromShareableHandle", || unsafe {
        cu::cuMemPoolImportFromShareableHandle(
            &mut pool,
            fd as isize as *mut c_void,
            cu::CUmemAllocationHandleType(HANDLE_TYPE_POSIX_FD),
            0,
        )
    });
    check(status, "cuMemPoolImportFromShareableHandle", 0)?;
    Ok(PoolHandle(pool as usize))
}

/// The 64 bytes that let another process map `ptr`, an allocation of an
/// exportable pool (`cuMemPoolExportPointer`).
pub fn mem_pool_export_pointer(ptr: DevicePtr) -> Result<[u8; 64]> {
    ensure_context()?;
    let mut data = cu::CUmemPoolPtrExportData { reserved: [0; 64] };
    // SAFETY: `data` is a valid out-pointer; the driver checks that `ptr` is
    // a live allocation of an exportable pool.
    let status = call("cuMemPoolExportPointer", || unsafe {
        cu::cuMemPoolExportPointer(&mut data, ptr.addr())
    });
    check(status, "cuMemPoolExportPointer", 0)?;
    Ok(data.reserved)
}

/// Maps an allocation of another process's pool, imported as `pool`, from
/// its export data (`cuMemPoolImportPointer`).
///
/// # Safety
/// `pool` is live.
pub unsafe fn mem_pool_import_pointer(pool: PoolHandle, data: [u8; 64]) -> Result<DevicePtr> {
    ensure_context()?;
    let mut share = cu::CUmemPoolPtrExportData { reserved: data };
    let mut p: cu::CUdeviceptr = 0;
    // SAFETY: `p` and `share` are valid pointers for the call; the caller's
    // contract: `pool` is live; the driver checks the export data.
    let status = call("cuMemPoolImportPointer", || unsafe {
        cu::cuMemPoolImportPointer(&mut p, pool.raw(), &mut share)
    });
    check(status, "cuMemPoolImportPointer", 0)?;
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
pub unsafe fn mem_pool_destroy(pool: PoolHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a live pool of ours, used no more.
    check(
        call("cuMemPoolDestroy", || unsafe { cu::cuMemPoolDestroy(pool.raw()) }),
        "cuMemPoolDestroy",
        0,
    )
}

/// Releases a pool's unused memory down to `keep` bytes (`cuMemPoolTrimTo`).
///
/// # Safety
/// `pool` is live.
pub unsafe fn mem_pool_trim_to(pool: PoolHandle, keep: usize) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: `pool` is live.
    let status = call("cuMemPoolTrimTo", || unsafe {
        cu::cuMemPoolTrimTo(pool.raw(), keep)
    });
    check(status, "cuMemPoolTrimTo", 0)
}

/// Sets an `int` pool attribute (the `CU_MEMPOOL_ATTR_REUSE_*` switches).
///
/// # Safety
/// `pool` is live.
pub unsafe fn mem_pool_set_i32(pool: PoolHandle, attr: PoolAttribute, value: i32) -> Result<()> {
    ensure_context()?;
    let mut v = value;
    // SAFETY: `v` is an `int`, the size of the attributes this is used for;
    // the caller's contract: `pool` is live.
    let status = call("cuMemPoolSetAttribute", || unsafe {
        cu::cuMemPoolSetAttribute(pool.raw(), attr, (&mut v as *mut i32).cast())
    });
    check(status, "cuMemPoolSetAttribute", 0)
}

/// Sets a 64-bit pool attribute such as the release threshold.
///
/// # Safety
/// `pool` is live.
pub unsafe fn mem_pool_set_u64(pool: PoolHandle, attr: PoolAttribute, value: u64) -> Result<()> {
    ensure_context()?;
    let mut v = value;
    // SAFETY: `v` is a `cuuint64_t`, the size of the attributes this is used
    // for; the caller's contract: `pool` is live.
    let status = call("cuMemPoolSetAttribute", || unsafe {
        cu::cuMemPoolSetAttribute(pool.raw(), attr, (&mut v as *mut u64).cast())
    });
    check(status, "cuMemPoolSetAttribute", 0)
}

/// Reads a 64-bit pool attribute.
///
/// # Safety
/// `pool` is live.
pub unsafe fn mem_pool_get_u64(pool: PoolHandle, attr: PoolAttribute) -> Result<u64> {
    ensure_context()?;
    let mut v: u64 = 0;
    // SAFETY: `v` is a valid out-pointer of the 64-bit attributes' size; the
    // caller's contract: `pool` is live.
    let status = call("cuMemPoolGetAttribute", || unsafe {
        cu::cuMemPoolGetAttribute(pool.raw(), attr, (&mut v as *mut u64).cast())
    });
    check(status, "cuMemPoolGetAttribute", 0)?;
    Ok(v)
}

/// Pool attributes used by the crate.
pub use cu::CUmemPool_attribute as PoolAttribute;

/// Whether `ptr` lies in memory of a stream-ordered driver pool
/// (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`); `false` for an address
/// the driver does not know.
pub fn is_driver_pool_memory(ptr: u64) -> Result<bool> {
    ensure_context()?;
    let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: `pool` is a valid out-pointer of the attribute's size (a handle).
    let status = call("cuPointerGetAttribute", || unsafe {
        cu::cuPointerGetAttribute(
            (&mut pool as *mut cu::CUmemoryPool).cast(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
            ptr,
        )
    });
    if status == cu::CUresult::CUDA_ERROR_INVALID_VALUE {
        return Ok(false);
    }
    check(status, "cuPointerGetAttribute", 0)?;
    Ok(!pool.is_null())
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
        let null = StreamHandle::NULL;
        let clear = || {
            // SAFETY: a null context is valid: it makes none current.
            let status = unsafe { cu::cuCtxSetCurrent(std::ptr::null_mut()) };
            check(status, "cuCtxSetCurrent", 0)
        };
        std::thread::spawn(move || {
            let none = || {
                let mut ctx: cu::CUcontext = std::ptr::null_mut();
                // SAFETY: `ctx` is a valid out-pointer.
                check(unsafe { cu::cuCtxGetCurrent(&mut ctx) }, "cuCtxGetCurrent", 0).unwrap();
                ctx.is_null()
            };
            assert!(none(), "a new thread starts without a current context");
            // SAFETY: the pool lives until the end of the test; the null
            // stream always.
            let p = unsafe { mem_alloc_from_pool_async(256, pool, null) }.unwrap();
            assert!(!none());
            // SAFETY: `p` came from the pool and is not used.
            unsafe { mem_free_async(p, null).unwrap() };
            ensure_context().unwrap();
            clear().unwrap();
            // SAFETY: as above.
            let p = unsafe { mem_alloc_from_pool_async(256, pool, null) }.unwrap();
            clear().unwrap();
            // SAFETY: as above.
            unsafe { mem_free_async(p, null).unwrap() };
            assert!(!none());
            crate::driver::device_synchronize().unwrap();
        })
        .join()
        .unwrap();
        // SAFETY: the pool's only allocations were freed and synchronised.
        unsafe { mem_pool_destroy(pool).unwrap() };
    }
}
