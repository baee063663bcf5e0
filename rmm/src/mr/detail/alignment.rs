//! Alignment checks shared by the resources and adaptors.
#![forbid(unsafe_code)]

use crate::align::{is_supported_alignment, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};

/// Checks an alignment for a base resource: a power of two no larger than 256.
///
/// # Errors
/// [`Error::BadAlloc`] naming the alignment.
#[inline]
pub fn check_base_alignment(alignment: usize) -> Result<()> {
    if is_supported_alignment(alignment) {
        Ok(())
    } else {
        Err(unsupported(alignment, Some(CUDA_ALLOCATION_ALIGNMENT)))
    }
}

/// Checks an alignment for resources that accept any power of two.
///
/// # Errors
/// [`Error::BadAlloc`] when `alignment` is not a power of two (the same
/// variant as [`check_base_alignment`], so every resource and adaptor
/// reports a bad alignment alike).
#[inline]
pub fn check_pow2_alignment(alignment: usize) -> Result<()> {
    if crate::align::is_pow2(alignment) {
        Ok(())
    } else {
        Err(unsupported(alignment, None))
    }
}

/// The error of both checks, out of line: an allocation's success path
/// keeps one compare and no formatting code.
#[cold]
#[inline(never)]
fn unsupported(alignment: usize, max: Option<usize>) -> Error {
    let limit = max.map_or(String::new(), |m| format!(" no larger than {m}"));
    Error::BadAlloc(format!(
        "unsupported alignment {alignment}: must be a power of two{limit}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_alignment_rules() {
        assert!(check_base_alignment(256).is_ok());
        assert!(matches!(check_base_alignment(512), Err(Error::BadAlloc(_))));
        assert!(matches!(check_base_alignment(3), Err(Error::BadAlloc(_))));
    }
}
