//! Virtual memory management.

use cudarc::driver::sys as cu;

use super::device::ensure_context;
use crate::error::Result;
use crate::ptr::DevicePtr;

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
