//! Stream-ordered allocation and driver pools.

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::device::{device_attribute, ensure_context, with_context};
use super::{check, error_name, DRIVER_LIBRARY};
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::device::ensure_context;

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
}
