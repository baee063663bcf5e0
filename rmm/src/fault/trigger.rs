//! [`Trigger`]: which calls of a sequence fail; [`InjectedError`]: how.
#![forbid(unsafe_code)]

/// Which of the matching calls fail, counting them from 1.
///
/// ```
/// use rmm::fault::Trigger;
/// assert!(Trigger::Nth(3).fires(3) && !Trigger::Nth(3).fires(4));
/// assert!(Trigger::EveryNth(2).fires(4) && !Trigger::EveryNth(2).fires(5));
/// let rate = Trigger::rate(0.5, 7);
/// let fired = (1..=10_000).filter(|&i| rate.fires(i)).count();
/// assert!((4_500..5_500).contains(&fired));
/// assert_eq!(fired, (1..=10_000).filter(|&i| Trigger::rate(0.5, 7).fires(i)).count());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Every matching call fails.
    Always,
    /// Only the Nth matching call fails (1 is the first).
    Nth(u64),
    /// Every Nth matching call fails (the Nth, 2Nth, ...; 0 never fires).
    EveryNth(u64),
    /// Each matching call fails with probability `threshold / 2^32`,
    /// decided by a hash of `seed` and the call's index: the same seed fails
    /// the same calls, whatever the threads. Made by [`Trigger::rate`].
    Rate {
        /// Failure probability in units of 2^-32.
        threshold: u64,
        /// The seed.
        seed: u64,
    },
    /// No call fails (faults stopped).
    Never,
}

impl Trigger {
    /// Fails each call with probability `p` (clamped to 0..=1), seeded.
    pub fn rate(p: f64, seed: u64) -> Self {
        let threshold = (p.clamp(0.0, 1.0) * (1u64 << 32) as f64) as u64;
        Trigger::Rate { threshold, seed }
    }

    /// Whether the matching call number `index` (from 1) fails.
    pub fn fires(&self, index: u64) -> bool {
        match *self {
            Trigger::Always => true,
            Trigger::Nth(n) => index == n,
            Trigger::EveryNth(n) => n != 0 && index.is_multiple_of(n),
            Trigger::Rate { threshold, seed } => (mix(seed ^ index.wrapping_mul(GOLDEN)) >> 32) < threshold,
            Trigger::Never => false,
        }
    }
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's finaliser: a well-mixed hash of one word.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The status an injected fault returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedError {
    /// `CUDA_ERROR_OUT_OF_MEMORY` (2); surfaces as [`Error::OutOfMemory`](crate::Error::OutOfMemory).
    OutOfMemory,
    /// `CUDA_ERROR_LAUNCH_FAILED` (719).
    LaunchFailed,
    /// `CUDA_ERROR_UNKNOWN` (999).
    Unknown,
}

impl InjectedError {
    /// The default for a call: out-of-memory for an allocation
    /// (`cuMem*Alloc*`, `cuMemCreate`, `cuMemAddressReserve`), unknown otherwise.
    pub fn default_for(call: &str) -> Self {
        let allocates = (call.starts_with("cuMem") && call.contains("Alloc"))
            || call == "cuMemCreate"
            || call == "cuMemAddressReserve";
        if allocates {
            InjectedError::OutOfMemory
        } else {
            InjectedError::Unknown
        }
    }

    /// The raw `CUresult` value.
    pub fn code(self) -> u32 {
        match self {
            InjectedError::OutOfMemory => 2,
            InjectedError::LaunchFailed => 719,
            InjectedError::Unknown => 999,
        }
    }

    /// The driver's name for the status.
    pub fn name(self) -> &'static str {
        match self {
            InjectedError::OutOfMemory => "CUDA_ERROR_OUT_OF_MEMORY",
            InjectedError::LaunchFailed => "CUDA_ERROR_LAUNCH_FAILED",
            InjectedError::Unknown => "CUDA_ERROR_UNKNOWN",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_fire_where_they_say() {
        let fired = |t: Trigger| (1..=12).filter(|&i| t.fires(i)).collect::<Vec<_>>();
        assert_eq!(fired(Trigger::Nth(5)), [5]);
        assert_eq!(fired(Trigger::EveryNth(4)), [4, 8, 12]);
        assert_eq!(fired(Trigger::EveryNth(0)), Vec::<u64>::new());
        assert_eq!(fired(Trigger::Never), Vec::<u64>::new());
        assert_eq!(fired(Trigger::Always).len(), 12);
        assert_eq!(fired(Trigger::rate(1.0, 3)).len(), 12);
        assert_eq!(fired(Trigger::rate(0.0, 3)).len(), 0);
        // Different seeds fail different calls.
        let a = (1..=1000)
            .filter(|&i| Trigger::rate(0.1, 1).fires(i))
            .collect::<Vec<_>>();
        let b = (1..=1000)
            .filter(|&i| Trigger::rate(0.1, 2).fires(i))
            .collect::<Vec<_>>();
        assert_ne!(a, b);
        assert!((60..140).contains(&a.len()), "{}", a.len());
    }

    #[test]
    fn allocations_fail_with_out_of_memory_by_default() {
        for call in [
            "cuMemAlloc_v2",
            "cuMemAllocFromPoolAsync",
            "cuMemAllocManaged",
            "cuMemHostAlloc",
            "cuMemCreate",
        ] {
            assert_eq!(
                InjectedError::default_for(call),
                InjectedError::OutOfMemory,
                "{call}"
            );
        }
        for call in [
            "cuEventRecord",
            "cuMemMap",
            "cuMemcpyAsync",
            "cuStreamWaitEvent",
            "cuMemFree_v2",
        ] {
            assert_eq!(InjectedError::default_for(call), InjectedError::Unknown, "{call}");
        }
    }
}
