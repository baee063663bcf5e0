//! Plain allocations, copies, memsets, prefetch, advice and pointer queries.
//!
//! # Safety contract
//! An allocation call writes one address through an out-pointer to a local
//! and takes sizes and flags only. A call that frees, copies or fills
//! memory is `unsafe`: its caller vouches for the addresses (the memory is
//! ours to free, or valid for the bytes the call touches until it has run in
//! stream order) and for the stream ([`StreamHandle`], live until the call
//! returns). Queries and advice take addresses the driver checks itself (an
//! address it does not know is an error, never an access).

use std::ffi::c_void;

use cudarc::driver::sys as cu;

use super::device::{device_handle, ensure_context, primary_context};
use super::stream::StreamHandle;
use super::{call, check};
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;

/// `cuMemAlloc`.
pub fn mem_alloc(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: cu::CUdeviceptr = 0;
    // SAFETY: `p` is a valid out-pointer; a context is current.
    let status = call("cuMemAlloc_v2", || unsafe { cu::cuMemAlloc_v2(&mut p, bytes) });
    check(status, "cuMemAlloc_v2", bytes)?;
    Ok(DevicePtr::new(p))
}

/// `cuMemFree`.
///
/// # Safety
/// `ptr` came from [`mem_alloc`] or [`mem_alloc_managed`] and is not used after.
pub unsafe fn mem_free(ptr: DevicePtr) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: `ptr` is a live allocation of ours.
    check(
        call("cuMemFree_v2", || unsafe { cu::cuMemFree_v2(ptr.addr()) }),
        "cuMemFree_v2",
        0,
    )
}

/// `cuMemAllocManaged` with global attachment.
pub fn mem_alloc_managed(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: cu::CUdeviceptr = 0;
    let global = cu::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
    // SAFETY: `p` is a valid out-pointer; a context is current.
    let status = call("cuMemAllocManaged", || unsafe {
        cu::cuMemAllocManaged(&mut p, bytes, global)
    });
    check(status, "cuMemAllocManaged", bytes)?;
    Ok(DevicePtr::new(p))
}

/// `cuMemHostAlloc` (page-locked, portable, device-mapped host memory).
pub fn mem_host_alloc(bytes: usize) -> Result<DevicePtr> {
    ensure_context()?;
    let mut p: *mut c_void = std::ptr::null_mut();
    // CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP
    // SAFETY: `p` is a valid out-pointer; a context is current.
    let status = call("cuMemHostAlloc", || unsafe {
        cu::cuMemHostAlloc(&mut p, bytes, 0x01 | 0x02)
    });
    check(status, "cuMemHostAlloc", bytes)?;
    Ok(DevicePtr::new(p as u64))
}

/// `cuMemFreeHost`.
///
/// # Safety
/// `ptr` came from [`mem_host_alloc`] and is not used after.
pub unsafe fn mem_free_host(ptr: DevicePtr) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract: `ptr` is a live host allocation of ours.
    let status = call("cuMemFreeHost", || unsafe {
        cu::cuMemFreeHost(ptr.addr() as *mut c_void)
    });
    check(status, "cuMemFreeHost", 0)
}

/// `cuMemcpyAsync` between any two addresses of the unified address space.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy completes in `stream`
/// order; `stream` is live.
pub unsafe fn memcpy_async(dst: u64, src: u64, bytes: usize, stream: StreamHandle) -> Result<()> {
    ensure_context()?;
    if bytes == 0 {
        return Ok(());
    }
    // SAFETY: the caller's contract covers both ranges and the stream.
    let status = call("cuMemcpyAsync", || unsafe {
        cu::cuMemcpyAsync(dst, src, bytes, stream.raw())
    });
    check(status, "cuMemcpyAsync", 0)
}

/// `cuMemcpyPeerAsync` from `src` on `src_device` to `dst` on `dst_device`.
///
/// # Safety
/// Both ranges are valid for `bytes` until the copy completes in `stream`
/// order; `stream` is live.
pub unsafe fn memcpy_peer_async(
    dst: u64,
    dst_device: i32,
    src: u64,
    src_device: i32,
    bytes: usize,
    stream: StreamHandle,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let dctx = primary_context(dst_device)?.raw();
    let sctx = primary_context(src_device)?.raw();
    // SAFETY: the caller's contract covers both ranges and the stream; both
    // contexts are retained primary contexts.
    let status = call("cuMemcpyPeerAsync", || unsafe {
        cu::cuMemcpyPeerAsync(dst, dctx, src, sctx, bytes, stream.raw())
    });
    check(status, "cuMemcpyPeerAsync", 0)
}

/// Fills `count` elements of 1, 2 or 4 bytes at `dst` with `value` (`cuMemsetD*Async`).
///
/// # Safety
/// The range is valid device memory until the memset completes in `stream`
/// order; `stream` is live.
pub unsafe fn memset_async(
    dst: u64,
    value: u32,
    element_size: usize,
    count: usize,
    stream: StreamHandle,
) -> Result<()> {
    ensure_context()?;
    if count == 0 {
        return Ok(());
    }
    let name = match element_size {
        1 => "cuMemsetD8Async",
        2 => "cuMemsetD16Async",
        4 => "cuMemsetD32Async",
        n => {
            return Err(Error::InvalidArgument(format!(
                "memset element size {n} (must be 1, 2 or 4)"
            )))
        }
    };
    let s = stream.raw();
    // SAFETY: the caller's contract covers the range (`count` elements of
    // `element_size` bytes, the width of the entry point called) and the
    // stream.
    let status = call(name, || unsafe {
        match element_size {
            1 => cu::cuMemsetD8Async(dst, value as u8, count, s),
            2 => cu::cuMemsetD16Async(dst, value as u16, count, s),
            _ => cu::cuMemsetD32Async(dst, value, count, s),
        }
    });
    check(status, name, 0)
}

/// Prefetches managed memory to `device` (`cuMemPrefetchAsync`).
///
/// # Safety
/// `stream` is live. (The range need not be: prefetching moves pages but
/// never changes their contents, and the driver refuses unknown memory.)
pub unsafe fn mem_prefetch_async(
    ptr: DevicePtr,
    bytes: usize,
    device: i32,
    stream: StreamHandle,
) -> Result<()> {
    ensure_context()?;
    // SAFETY: the caller's contract covers the stream; the driver checks the
    // range and the device.
    let status = call("cuMemPrefetchAsync", || unsafe {
        cu::cuMemPrefetchAsync(ptr.addr(), bytes, device, stream.raw())
    });
    check(status, "cuMemPrefetchAsync", 0)
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
        Some(ordinal) => device_handle(ordinal)?,
        None => -1,
    };
    let advice = cu::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION;
    // SAFETY: advice only (no memory is read or written); the driver checks
    // the range and the location.
    let status = call("cuMemAdvise", || unsafe {
        cu::cuMemAdvise(ptr.addr(), bytes, advice, location)
    });
    check(status, "cuMemAdvise", 0)
}

/// The device that `[ptr, ptr + bytes)` of managed memory was last
/// prefetched to (`CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION`): a device
/// ordinal, `-1` (`CU_DEVICE_CPU`) for the host, `-2` when never prefetched
/// or prefetched to different places.
pub fn mem_range_last_prefetch_location(ptr: DevicePtr, bytes: usize) -> Result<i32> {
    ensure_context()?;
    let mut location: i32 = -2;
    // SAFETY: `location` is a valid out-pointer of the size passed (the
    // attribute is an `int`); the driver checks the range.
    let status = call("cuMemRangeGetAttribute", || unsafe {
        cu::cuMemRangeGetAttribute(
            (&mut location as *mut i32).cast(),
            std::mem::size_of::<i32>(),
            cu::CUmem_range_attribute::CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION,
            ptr.addr(),
            bytes,
        )
    });
    check(status, "cuMemRangeGetAttribute", 0)?;
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
    let status = call("cuPointerGetAttribute", || unsafe {
        cu::cuPointerGetAttribute(
            (&mut mem_type as *mut u32).cast(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            ptr,
        )
    });
    if status == cu::CUresult::CUDA_ERROR_INVALID_VALUE {
        return Ok(PointerKind::Unknown);
    }
    check(status, "cuPointerGetAttribute", 0)?;
    if mem_type == cu::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
        return Ok(PointerKind::Host);
    }
    let mut ordinal: i32 = -1;
    // SAFETY: `ordinal` is a valid out-pointer of the attribute's size (an
    // `int`); the driver knows `ptr` (it answered above).
    let status = call("cuPointerGetAttribute", || unsafe {
        cu::cuPointerGetAttribute(
            (&mut ordinal as *mut i32).cast(),
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
            ptr,
        )
    });
    check(status, "cuPointerGetAttribute", 0)?;
    Ok(PointerKind::Device(ordinal))
}
