//! Virtual memory management.
//!
//! # Safety contract
//! Reserving and creating write one address or [`AllocationHandle`] through
//! an out-pointer to a local and read an allocation description built here.
//! The calls that map, unmap, release or free are `unsafe`: their caller
//! vouches that the physical allocation is live (not yet released) and that
//! the address range is a reservation of ours in the state the call expects
//! (unmapped before a map, unused by any work before an unmap, empty before
//! it is freed).

use cudarc::driver::sys as cu;

use super::device::ensure_context;
use super::{call, check};
use crate::error::Result;
use crate::ptr::DevicePtr;

/// A physical allocation (`CUmemGenericAllocationHandle`) made by
/// [`vmm_create`]. A mapping keeps its memory alive after
/// [`vmm_release`].
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationHandle(cu::CUmemGenericAllocationHandle);

/// Pinned device memory of `device`, as the allocation calls describe it.
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
    let minimum = cu::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM;
    // SAFETY: `g` is a valid out-pointer and `prop` a valid description.
    let status = call("cuMemGetAllocationGranularity", || unsafe {
        cu::cuMemGetAllocationGranularity(&mut g, &prop, minimum)
    });
    check(status, "cuMemGetAllocationGranularity", 0)?;
    Ok(g)
}

/// Reserves `bytes` of virtual address space (`cuMemAddressReserve`).
pub fn vmm_reserve(bytes: usize, alignment: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: cu::CUdeviceptr = 0;
    // SAFETY: `p` is a valid out-pointer; no fixed address is asked for (0).
    let status = call("cuMemAddressReserve", || unsafe {
        cu::cuMemAddressReserve(&mut p, bytes, alignment, 0, 0)
    });
    check(status, "cuMemAddressReserve", bytes)?;
    Ok(DevicePtr::new(p))
}

/// Frees a reservation (`cuMemAddressFree`).
///
/// # Safety
/// The range is a reservation of [`vmm_reserve`] with nothing mapped in it
/// any more.
pub unsafe fn vmm_free_reservation(ptr: DevicePtr, bytes: usize) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: our reservation, now empty.
    let status = call("cuMemAddressFree", || unsafe {
        cu::cuMemAddressFree(ptr.addr(), bytes)
    });
    check(status, "cuMemAddressFree", 0)
}

/// Creates `bytes` of physical memory on `device` (`cuMemCreate`); returns the handle.
pub fn vmm_create(device: i32, bytes: usize) -> Result<AllocationHandle> {
    ensure_context()?;
    let prop = pinned_device_prop(device);
    let mut h: cu::CUmemGenericAllocationHandle = 0;
    // SAFETY: `h` is a valid out-pointer and `prop` a valid description;
    // flags must be 0.
    let status = call("cuMemCreate", || unsafe {
        cu::cuMemCreate(&mut h, bytes, &prop, 0)
    });
    check(status, "cuMemCreate", bytes)?;
    Ok(AllocationHandle(h))
}

/// Releases a physical allocation handle (`cuMemRelease`).
///
/// # Safety
/// The handle came from [`vmm_create`] and is not used after (its mappings
/// keep the memory alive).
pub unsafe fn vmm_release(handle: AllocationHandle) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a live handle of ours, used no more.
    check(
        call("cuMemRelease", || unsafe { cu::cuMemRelease(handle.0) }),
        "cuMemRelease",
        0,
    )
}

/// Maps `handle` at `ptr` and grants `device` read-write access.
///
/// # Safety
/// `handle` is live; `[ptr, ptr + bytes)` lies in a reservation of
/// [`vmm_reserve`] and nothing is mapped there.
pub unsafe fn vmm_map(ptr: DevicePtr, bytes: usize, handle: AllocationHandle, device: i32) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract covers the handle and the range; offset
    // and flags are 0.
    let status = call("cuMemMap", || unsafe {
        cu::cuMemMap(ptr.addr(), bytes, 0, handle.0, 0)
    });
    check(status, "cuMemMap", bytes)?;
    let desc = cu::CUmemAccessDesc {
        location: cu::CUmemLocation {
            type_: cu::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: device,
        },
        flags: cu::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: the range was mapped just above; `desc` is one valid descriptor.
    let status = call("cuMemSetAccess", || unsafe {
        cu::cuMemSetAccess(ptr.addr(), bytes, &desc, 1)
    });
    let r = check(status, "cuMemSetAccess", bytes);
    if r.is_err() {
        // SAFETY: the range was mapped just above and nothing uses it yet.
        let _ = unsafe { vmm_unmap(ptr, bytes) };
    }
    r
}

/// Unmaps a range (`cuMemUnmap`).
///
/// # Safety
/// The range was mapped by [`vmm_map`], and no pending or future work uses
/// it.
pub unsafe fn vmm_unmap(ptr: DevicePtr, bytes: usize) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: a mapped range of ours, unused.
    check(
        call("cuMemUnmap", || unsafe { cu::cuMemUnmap(ptr.addr(), bytes) }),
        "cuMemUnmap",
        0,
    )
}
