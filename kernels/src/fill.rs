//! Fill: write one value into every element, for 1, 2, 4 and 8-byte types.
//!
//! The bulk of the buffer is written with 16-byte vector stores (the value is
//! replicated into a `u128`), the unaligned head and the tail element by
//! element. The host passes the pointer, the element count and the value.

use crate::device::{global_thread_x, grid_threads_x};

#[inline(always)]
unsafe fn fill_impl<T: Copy>(ptr: *mut T, n: usize, value: T, wide: u128) {
    let size = core::mem::size_of::<T>();
    let per_vec = 16 / size;
    // Elements before the first 16-byte boundary.
    let misalign = (ptr as usize) & 15;
    let head = if misalign == 0 {
        0
    } else {
        ((16 - misalign) / size).min(n)
    };
    let tid = global_thread_x();
    let stride = grid_threads_x();
    let vecs = (n - head) / per_vec;
    // SAFETY (whole body): the host guarantees [ptr, ptr + n) is valid,
    // writable device memory of `T` and that `ptr` is aligned to `T`.
    unsafe {
        let vptr = ptr.add(head) as *mut u128;
        let mut i = tid;
        while i < vecs {
            vptr.add(i).write_volatile(wide);
            i += stride;
        }
        if tid < head {
            ptr.add(tid).write(value);
        }
        let tail_start = head + vecs * per_vec;
        let mut j = tail_start + tid;
        while j < n {
            ptr.add(j).write(value);
            j += stride;
        }
    }
}

fn splat(bits: u64, size: usize) -> u128 {
    let mut w: u128 = 0;
    let mut k = 0;
    while k < 16 / size {
        w |= (bits as u128) << (k * size * 8);
        k += 1;
    }
    w
}

/// Fills `n` bytes at `ptr` with `value`.
#[no_mangle]
#[cfg(target_arch = "nvptx64")]
pub unsafe extern "ptx-kernel" fn rmm_fill_u8(ptr: *mut u8, n: usize, value: u8) {
    // SAFETY: forwarded host contract.
    unsafe { fill_impl(ptr, n, value, splat(value as u64, 1)) }
}

/// Fills `n` 2-byte elements at `ptr` with `value`.
#[no_mangle]
#[cfg(target_arch = "nvptx64")]
pub unsafe extern "ptx-kernel" fn rmm_fill_u16(ptr: *mut u16, n: usize, value: u16) {
    // SAFETY: forwarded host contract.
    unsafe { fill_impl(ptr, n, value, splat(value as u64, 2)) }
}

/// Fills `n` 4-byte elements at `ptr` with `value`.
#[no_mangle]
#[cfg(target_arch = "nvptx64")]
pub unsafe extern "ptx-kernel" fn rmm_fill_u32(ptr: *mut u32, n: usize, value: u32) {
    // SAFETY: forwarded host contract.
    unsafe { fill_impl(ptr, n, value, splat(value as u64, 4)) }
}

/// Fills `n` 8-byte elements at `ptr` with `value`.
#[no_mangle]
#[cfg(target_arch = "nvptx64")]
pub unsafe extern "ptx-kernel" fn rmm_fill_u64(ptr: *mut u64, n: usize, value: u64) {
    // SAFETY: forwarded host contract.
    unsafe { fill_impl(ptr, n, value, splat(value, 8)) }
}
