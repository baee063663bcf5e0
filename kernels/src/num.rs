//! Arithmetic over the element types of the algorithms (u32, i32, u64, i64,
//! f32, f64): wrapping integer sums, IEEE float sums, and min/max whose
//! identities are the neutral element (floats: NaN, which `min`/`max`
//! ignore, like Rust's `f32::min`).

use crate::device::Word;

/// An element type the reductions, scans and sequences work on.
pub trait Num: Word {
    /// 0.
    const ZERO: Self;
    /// Neutral element of [`min`](Num::min).
    const MIN_IDENTITY: Self;
    /// Neutral element of [`max`](Num::max).
    const MAX_IDENTITY: Self;
    /// Sum (wrapping for integers).
    fn add(self, other: Self) -> Self;
    /// Minimum (floats: a NaN operand is ignored).
    fn min(self, other: Self) -> Self;
    /// Maximum (floats: a NaN operand is ignored).
    fn max(self, other: Self) -> Self;
    /// `init + i * step` (wrapping for integers).
    fn sequence(init: Self, step: Self, i: usize) -> Self;
}

macro_rules! num_int {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const MIN_IDENTITY: Self = <$t>::MAX;
            const MAX_IDENTITY: Self = <$t>::MIN;
            #[inline(always)]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)]
            fn min(self, o: Self) -> Self { if o < self { o } else { self } }
            #[inline(always)]
            fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            #[inline(always)]
            fn sequence(init: Self, step: Self, i: usize) -> Self {
                init.wrapping_add((i as $t).wrapping_mul(step))
            }
        }
    )*};
}
macro_rules! num_float {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const MIN_IDENTITY: Self = <$t>::NAN;
            const MAX_IDENTITY: Self = <$t>::NAN;
            #[inline(always)]
            fn add(self, o: Self) -> Self { self + o }
            #[inline(always)]
            fn min(self, o: Self) -> Self { <$t>::min(self, o) }
            #[inline(always)]
            fn max(self, o: Self) -> Self { <$t>::max(self, o) }
            #[inline(always)]
            fn sequence(init: Self, step: Self, i: usize) -> Self {
                init + (i as $t) * step
            }
        }
    )*};
}
num_int!(u32, i32, u64, i64);
num_float!(f32, f64);
