//! Fill device memory with one value, for 1, 2, 4 and 8-byte element types.

use kernel_abi::BLOCK;
use rmm::{CudaStreamView, DevicePtr, Error, Result};

use crate::kernels::Kernels;

/// Element types the fill kernels can write: any `Copy` type of 1, 2, 4 or 8
/// bytes, written as its bit pattern.
pub trait FillValue: Copy + Send + Sync + 'static {
    /// The value's bits, zero-extended to 64 bits.
    fn bits(self) -> u64;
}

macro_rules! fill_value {
    ($($t:ty),*) => {$(
        impl FillValue for $t {
            fn bits(self) -> u64 {
                let bytes = self.to_le_bytes();
                let mut wide = [0u8; 8];
                wide[..bytes.len()].copy_from_slice(&bytes);
                u64::from_le_bytes(wide)
            }
        }
    )*};
}
fill_value!(u8, i8, u16, i16, u32, i32, f32, u64, i64, f64);

/// Fills `n` elements of `T` at `ptr` with `value`, in `stream` order.
///
/// # Safety
/// `[ptr, ptr + n * size_of::<T>())` is device-accessible memory, aligned
/// for `T`, that stays valid until the fill has run in `stream` order.
///
/// # Errors
/// [`Error::InvalidArgument`] for a misaligned pointer; driver errors.
pub unsafe fn fill_raw<T: FillValue>(
    ptr: DevicePtr,
    n: usize,
    value: T,
    stream: CudaStreamView,
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    if !ptr.is_aligned(size) {
        return Err(Error::InvalidArgument(format!(
            "fill: {ptr} is not aligned to {size} bytes"
        )));
    }
    if n == 0 {
        return Ok(());
    }
    let k = Kernels::current()?;
    let Some(name) = kernel_abi::elementwise::fill(size) else {
        return Err(Error::InvalidArgument(format!("fill: element size {size}")));
    };
    let grid = k.grid_for(n.div_ceil(16 / size), BLOCK);
    let mut p = ptr.addr();
    let mut count = n as u64;
    let bits = value.bits();
    // The kernel's value parameter has the element's width.
    let (mut v8, mut v16, mut v32, mut v64) = (bits as u8, bits as u16, bits as u32, bits);
    let value_param: *mut std::ffi::c_void = match size {
        1 => (&mut v8 as *mut u8).cast(),
        2 => (&mut v16 as *mut u16).cast(),
        4 => (&mut v32 as *mut u32).cast(),
        _ => (&mut v64 as *mut u64).cast(),
    };
    let mut params = [
        (&mut p as *mut u64).cast(),
        (&mut count as *mut u64).cast(),
        value_param,
    ];
    // SAFETY: parameters match `(ptr: *mut T, n: usize, value: T)`; the caller
    // guarantees the memory.
    unsafe { k.launch(name, grid, BLOCK, 0, stream, &mut params) }
}
