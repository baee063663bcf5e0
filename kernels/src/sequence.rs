//! Sequence (iota): `out[i] = init + i * step`.

use crate::device::grid_stride;
use crate::num::Num;

/// Grid-stride body of the sequence kernels.
///
/// # Safety
/// `out` holds `n` writable elements.
#[inline(always)]
pub(crate) unsafe fn sequence_impl<T: Num>(out: *mut T, n: usize, init: T, step: T) {
    for i in grid_stride(n) {
        // SAFETY: `i < n` and the host guarantees `out` holds `n` elements.
        unsafe { out.add(i).write(T::sequence(init, step, i)) };
    }
}

macro_rules! sequence_kernel {
    ($($name:ident: $t:ty),*) => {$(
        /// Writes `init + i * step` to `out[i]` for `i < n`.
        ///
        /// # Safety
        /// `out` is device memory of `n` aligned elements, not read or written
        /// by other work during the kernel.
        #[no_mangle]
        #[cfg(target_arch = "nvptx64")]
        pub unsafe extern "ptx-kernel" fn $name(out: *mut $t, n: usize, init: $t, step: $t) {
            // SAFETY: forwarded host contract.
            unsafe { sequence_impl(out, n, init, step) }
        }
    )*};
}
sequence_kernel!(
    rmm_sequence_u32: u32,
    rmm_sequence_i32: i32,
    rmm_sequence_u64: u64,
    rmm_sequence_i64: i64,
    rmm_sequence_f32: f32,
    rmm_sequence_f64: f64
);
