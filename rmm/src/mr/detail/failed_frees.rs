//! Frees the driver refused: each one is logged at error level and counted
//! here, since [`MemoryResource::deallocate`](crate::mr::MemoryResource::deallocate)
//! cannot return an error.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;

static FAILED: AtomicU64 = AtomicU64::new(0);

/// Logs and counts a driver call that returns memory (`cuMemFree`,
/// `cuMemFreeHost`, `cuMemFreeAsync`, `cuMemUnmap`, `cuMemRelease`,
/// `cuMemAddressFree`) which failed.
#[cold]
#[inline(never)]
pub(crate) fn failed_free(who: &str, what: &str, e: &Error) {
    FAILED.fetch_add(1, Ordering::Relaxed);
    log::error!("{who}: {what} failed: {e}");
}

/// How many driver calls that return memory (`cuMemFree`, `cuMemFreeHost`,
/// `cuMemFreeAsync`, `cuMemUnmap`, `cuMemRelease`, `cuMemAddressFree`)
/// failed in this process, by every resource. Each one is also logged at
/// error level; the memory stays with the driver (for a synchronous free
/// it is lost to the process). A healthy program reads 0.
///
/// ```
/// assert_eq!(rmm::mr::failed_driver_frees(), 0);
/// ```
pub fn failed_driver_frees() -> u64 {
    FAILED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_free_is_counted() {
        let before = failed_driver_frees();
        failed_free("test", "cuMemFree(0x1000)", &Error::Logic("refused".into()));
        assert!(failed_driver_frees() > before);
    }
}
