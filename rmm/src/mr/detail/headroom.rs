//! The headroom decision of [`SamHeadroomMemoryResource`]: how much of a
//! new system allocation should prefer device memory, given the device's
//! free memory and the headroom to keep free.
//!
//! System memory that the GPU touches migrates to the GPU and does not come
//! back on its own; once device memory runs out, other CUDA calls (and
//! other processes) fail with out-of-memory. So only the part of an
//! allocation that still fits above the headroom is advised to live on the
//! device; the rest is advised to stay on the host. The first bytes of the
//! allocation take the device part (RMM's rule), rounded down to a
//! granularity so that the split falls on an allocation boundary.
//!
//! [`SamHeadroomMemoryResource`]: crate::mr::SamHeadroomMemoryResource
#![forbid(unsafe_code)]

/// How an allocation of `device + host` bytes is split: the first `device`
/// bytes prefer device memory, the remaining `host` bytes host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Split {
    /// Bytes at the start of the allocation advised to the device.
    pub device: usize,
    /// Bytes after those advised to the host.
    pub host: usize,
}

/// The split of an allocation of `bytes` when the device has `free` bytes
/// free and `headroom` of them must stay free: the device part is
/// `min(free - headroom, bytes)` (0 when `free <= headroom`) rounded down
/// to a multiple of `granularity` (a power of two; 0 or 1: no rounding),
/// the host part is the rest. Never overflows; `device + host == bytes`.
pub(crate) fn split(bytes: usize, free: usize, headroom: usize, granularity: usize) -> Split {
    let allowed = free.saturating_sub(headroom).min(bytes);
    let device = if granularity > 1 {
        allowed & !(granularity - 1)
    } else {
        allowed
    };
    Split {
        device,
        host: bytes - device,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn all_on_the_device_while_it_fits_above_the_headroom() {
        assert_eq!(
            split(1000, 10_000, 1000, 256),
            Split {
                device: 1000 & !255,
                host: 1000 & 255
            }
        );
        assert_eq!(
            split(4096, 1 << 30, 1 << 20, 256),
            Split {
                device: 4096,
                host: 0
            }
        );
        // Exactly up to the headroom.
        assert_eq!(
            split(4096, 4096 + 512, 512, 256),
            Split {
                device: 4096,
                host: 0
            }
        );
    }

    #[test]
    fn partly_on_the_device_when_the_headroom_is_reached() {
        // 3000 bytes above the headroom: 2816 (11 * 256) on the device.
        assert_eq!(
            split(8192, 5000, 2000, 256),
            Split {
                device: 2816,
                host: 8192 - 2816
            }
        );
    }

    #[test]
    fn all_on_the_host_at_or_below_the_headroom() {
        assert_eq!(
            split(8192, 2000, 2000, 256),
            Split {
                device: 0,
                host: 8192
            }
        );
        assert_eq!(
            split(8192, 100, 2000, 256),
            Split {
                device: 0,
                host: 8192
            }
        );
        // Less than one granule above the headroom.
        assert_eq!(
            split(8192, 2255, 2000, 256),
            Split {
                device: 0,
                host: 8192
            }
        );
    }

    #[test]
    fn extremes_do_not_overflow() {
        assert_eq!(split(0, usize::MAX, 0, 256), Split { device: 0, host: 0 });
        assert_eq!(
            split(usize::MAX, usize::MAX, 0, 256),
            Split {
                device: usize::MAX & !255,
                host: 255
            }
        );
        assert_eq!(
            split(usize::MAX, 0, usize::MAX, 256),
            Split {
                device: 0,
                host: usize::MAX
            }
        );
        assert_eq!(
            split(1000, 5000, 0, 0),
            Split {
                device: 1000,
                host: 0
            }
        );
        assert_eq!(
            split(1000, 5000, 0, 1),
            Split {
                device: 1000,
                host: 0
            }
        );
    }

    proptest! {
        /// Against the definition: the parts add up, the device part is
        /// aligned, never eats into the headroom, and is the largest such.
        #[test]
        fn model(bytes in 0usize..1 << 40, free in 0usize..1 << 41, headroom in 0usize..1 << 41,
                 g in 0u32..17) {
            let granularity = 1usize << g;
            let s = split(bytes, free, headroom, granularity);
            prop_assert_eq!(s.device + s.host, bytes);
            prop_assert_eq!(s.device % granularity, 0);
            prop_assert!(s.device <= bytes);
            prop_assert!(s.device == 0 || s.device + headroom <= free);
            // One more granule would exceed the request or the headroom.
            let more = s.device + granularity;
            prop_assert!(more > bytes || more + headroom > free);
        }
    }
}
