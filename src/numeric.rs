//! The element types of the algorithms and their kernels.
#![forbid(unsafe_code)]

use kernel_abi::{numeric, NumericKernels};

/// An element type the sequence, reduction and scan kernels support:
/// `u32`, `i32`, `u64`, `i64`, `f32`, `f64`. Sealed.
pub trait Numeric: Copy + Send + Sync + PartialEq + std::fmt::Debug + sealed::Sealed + 'static {
    /// The names of this type's sequence, reduce and scan kernels.
    const KERNELS: NumericKernels;
    /// Zero (the sum of nothing).
    const ZERO: Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! numeric {
    ($($t:ty: $kernels:expr, $zero:expr);*) => {$(
        impl sealed::Sealed for $t {}
        impl Numeric for $t {
            const KERNELS: NumericKernels = $kernels;
            const ZERO: Self = $zero;
        }
    )*};
}
numeric!(
    u32: numeric::U32, 0; i32: numeric::I32, 0; u64: numeric::U64, 0;
    i64: numeric::I64, 0; f32: numeric::F32, 0.0; f64: numeric::F64, 0.0
);
