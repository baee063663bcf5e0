//! Alignment arithmetic (`rmm/aligned.hpp`).
#![forbid(unsafe_code)]

/// Alignment of every allocation a CUDA resource returns: 256 bytes.
pub const CUDA_ALLOCATION_ALIGNMENT: usize = 256;

/// True when `n` is a power of two (0 is not).
pub const fn is_pow2(n: usize) -> bool {
    n != 0 && n & (n - 1) == 0
}

/// True for alignments a base CUDA resource supports: a power of two no
/// larger than [`CUDA_ALLOCATION_ALIGNMENT`].
pub const fn is_supported_alignment(alignment: usize) -> bool {
    is_pow2(alignment) && alignment <= CUDA_ALLOCATION_ALIGNMENT
}

/// Rounds `n` up to a multiple of `alignment` (a power of two); `None` on overflow.
///
/// ```
/// assert_eq!(rmm::align::align_up(1, 256), Some(256));
/// assert_eq!(rmm::align::align_up(512, 256), Some(512));
/// assert_eq!(rmm::align::align_up(usize::MAX, 256), None);
/// ```
pub const fn align_up(n: usize, alignment: usize) -> Option<usize> {
    match n.checked_add(alignment - 1) {
        Some(v) => Some(v & !(alignment - 1)),
        None => None,
    }
}

/// Rounds `n` down to a multiple of `alignment` (a power of two).
///
/// ```
/// assert_eq!(rmm::align::align_down(511, 256), 256);
/// ```
pub const fn align_down(n: usize, alignment: usize) -> usize {
    n & !(alignment - 1)
}

/// True when `n` is a multiple of `alignment` (a power of two).
pub const fn is_aligned(n: usize, alignment: usize) -> bool {
    n & (alignment - 1) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_and_support() {
        assert!(!is_pow2(0));
        assert!(is_pow2(1) && is_pow2(256) && !is_pow2(384));
        assert!(is_supported_alignment(1) && is_supported_alignment(256));
        assert!(!is_supported_alignment(512) && !is_supported_alignment(0) && !is_supported_alignment(3));
    }

    #[test]
    fn rounding() {
        assert_eq!(align_up(0, 256), Some(0));
        assert_eq!(align_up(257, 256), Some(512));
        assert_eq!(align_down(257, 256), 256);
        assert!(is_aligned(1024, 256) && !is_aligned(1000, 256));
        assert_eq!(align_up(usize::MAX - 10, 256), None);
    }
}
