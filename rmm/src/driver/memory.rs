//! Plain allocations, copies, memsets, prefetch, advice and pointer queries.

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::check;
use super::device::{ensure_context, primary_context};
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;

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
