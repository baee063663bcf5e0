//! SplitMix64, the workloads' random generator.
#![forbid(unsafe_code)]

/// SplitMix64, the random generator of the anchors' workloads
/// (`shared/anchors/WORKLOADS.md`), shared by the benchmarks, the demo and
/// the tests so that every workload draws the same numbers from the same seed.
///
/// ```
/// use rmm_testing::SplitMix64;
/// let mut a = SplitMix64(42);
/// let mut b = SplitMix64(42);
/// assert_eq!(a.next(), b.next());
/// assert!(a.below(10) < 10);
/// let u = a.unit();
/// assert!((0.0..1.0).contains(&u));
/// let s = a.log_uniform(256, 1 << 20);
/// assert!((256..=1 << 20).contains(&s));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value below `n` (`next() % n`, as the workloads define it).
    ///
    /// # Panics
    /// When `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[0, 1)` (53 random bits).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Approximately standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }

    /// A size log-uniform in `lo..=hi` (`lo > 0`).
    pub fn log_uniform(&mut self, lo: usize, hi: usize) -> usize {
        let u = self.unit();
        let size = lo as f64 * (hi as f64 / lo as f64).powf(u);
        (size.round() as usize).clamp(lo, hi)
    }
}
