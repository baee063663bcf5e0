//! The element types of the algorithms and the names of their kernels.

/// An element type the sequence, reduction and scan kernels support:
/// `u32`, `i32`, `u64`, `i64`, `f32`, `f64`. Sealed.
pub trait Numeric: Copy + Send + Sync + PartialEq + std::fmt::Debug + sealed::Sealed + 'static {
    /// Kernel `rmm_sequence_*`.
    const SEQUENCE: &'static str;
    /// Kernel `rmm_reduce_sum_*`.
    const SUM: &'static str;
    /// Kernel `rmm_reduce_min_*`.
    const MIN: &'static str;
    /// Kernel `rmm_reduce_max_*`.
    const MAX: &'static str;
    /// Kernel `rmm_scan_partials_*`.
    const SCAN_PARTIALS: &'static str;
    /// Kernel `rmm_scan_single_*`.
    const SCAN_SINGLE: &'static str;
    /// Kernel `rmm_scan_down_*`.
    const SCAN_DOWN: &'static str;
    /// Zero (the sum of nothing).
    const ZERO: Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! numeric {
    ($($t:ty: $s:literal, $zero:expr);*) => {$(
        impl sealed::Sealed for $t {}
        impl Numeric for $t {
            const SEQUENCE: &'static str = concat!("rmm_sequence_", $s);
            const SUM: &'static str = concat!("rmm_reduce_sum_", $s);
            const MIN: &'static str = concat!("rmm_reduce_min_", $s);
            const MAX: &'static str = concat!("rmm_reduce_max_", $s);
            const SCAN_PARTIALS: &'static str = concat!("rmm_scan_partials_", $s);
            const SCAN_SINGLE: &'static str = concat!("rmm_scan_single_", $s);
            const SCAN_DOWN: &'static str = concat!("rmm_scan_down_", $s);
            const ZERO: Self = $zero;
        }
    )*};
}
numeric!(u32: "u32", 0; i32: "i32", 0; u64: "u64", 0; i64: "i64", 0; f32: "f32", 0.0; f64: "f64", 0.0);

/// Every kernel name of the numeric families, for PTX checks.
pub fn all_kernel_names() -> Vec<&'static str> {
    fn of<T: Numeric>() -> [&'static str; 7] {
        [
            T::SEQUENCE,
            T::SUM,
            T::MIN,
            T::MAX,
            T::SCAN_PARTIALS,
            T::SCAN_SINGLE,
            T::SCAN_DOWN,
        ]
    }
    let mut v = Vec::new();
    v.extend(of::<u32>());
    v.extend(of::<i32>());
    v.extend(of::<u64>());
    v.extend(of::<i64>());
    v.extend(of::<f32>());
    v.extend(of::<f64>());
    v
}
