//! Support for tests that need a GPU.
//!
//! A GPU test starts with [`require_gpu!`](crate::require_gpu). Without a
//! GPU it prints `RMM-SKIP: <test>` to stderr and returns early, so the test
//! counts as skipped (the bundle runner counts those lines); with the
//! environment variable `RMM_REQUIRE_GPU=1` it fails instead, so a run on a
//! GPU machine can never pass by skipping.
#![forbid(unsafe_code)]

/// The variable that turns skips into failures.
pub const REQUIRE_GPU_VAR: &str = "RMM_REQUIRE_GPU";

/// The marker printed for a skipped test.
pub const SKIP_MARKER: &str = "RMM-SKIP:";

/// When set, names a file to which every skipped GPU test appends one line
/// (`scripts/test.sh` counts them: the test harness hides a passing test's
/// output, so a skip would otherwise read as a pass).
pub const SKIP_LOG_VAR: &str = "RMM_SKIP_LOG";

mod watchdog;
pub use watchdog::{Progress, Watchdog, EU_STACK_VAR};

/// Reports a skipped GPU test: the marker on stderr and a line in the
/// [`SKIP_LOG_VAR`] file when that is set.
pub fn report_skip(test: &str, why: &str) {
    eprintln!("{SKIP_MARKER} {test} ({why})");
    if let Some(path) = std::env::var_os(SKIP_LOG_VAR) {
        use std::io::Write;
        // One short append per skip: lines from parallel tests stay whole.
        match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
            Ok(mut f) => {
                let _ = f.write_all(format!("{test} ({why})\n").as_bytes());
            }
            Err(e) => eprintln!("rmm: could not append to {}: {e}", path.to_string_lossy()),
        }
    }
}

/// True when a GPU is usable. Otherwise prints the skip marker for `test`
/// and returns false, or panics when `RMM_REQUIRE_GPU=1`.
///
/// # Panics
/// When no GPU is usable and `RMM_REQUIRE_GPU=1`.
pub fn gpu_available_or_skip(test: &str) -> bool {
    if crate::device::is_available() {
        return true;
    }
    let why = crate::driver::init()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| "no device".into());
    if std::env::var(REQUIRE_GPU_VAR).is_ok_and(|v| v == "1") {
        panic!("{test}: no usable GPU ({why}) and {REQUIRE_GPU_VAR}=1");
    }
    report_skip(test, &format!("no GPU: {why}"));
    false
}

/// The variable naming how many GPUs a run must have (multi-GPU tests fail
/// instead of skipping when fewer are present).
pub const REQUIRE_GPUS_VAR: &str = "RMM_REQUIRE_GPUS";

/// True when at least `n` GPUs are usable. Otherwise prints the skip marker
/// and returns false, or panics when `RMM_REQUIRE_GPUS` is `n` or more.
///
/// # Panics
/// When fewer than `n` GPUs are usable and `RMM_REQUIRE_GPUS >= n`.
pub fn gpus_available_or_skip(n: usize, test: &str) -> bool {
    let have = crate::device::device_count();
    if have >= n {
        return true;
    }
    let required: usize = std::env::var(REQUIRE_GPUS_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if required >= n {
        panic!("{test}: needs {n} GPUs, found {have}, and {REQUIRE_GPUS_VAR}={required}");
    }
    report_skip(test, &format!("needs {n} GPUs, found {have}"));
    false
}

/// Returns from the enclosing test unless a GPU is usable (see the module docs).
///
/// ```
/// fn fills_on_the_gpu() {
///     rmm::require_gpu!();
///     // ... GPU work ...
/// }
/// # fills_on_the_gpu();
/// ```
#[macro_export]
macro_rules! require_gpu {
    () => {
        if !$crate::testing::gpu_available_or_skip(module_path!()) {
            return;
        }
    };
    ($name:expr) => {
        if !$crate::testing::gpu_available_or_skip($name) {
            return;
        }
    };
}

/// Returns from the enclosing test unless `n` GPUs are usable; see
/// [`gpus_available_or_skip`].
#[macro_export]
macro_rules! require_gpus {
    ($n:expr) => {
        if !$crate::testing::gpus_available_or_skip($n, module_path!()) {
            return;
        }
    };
}

/// SplitMix64, the random generator of the anchors' workloads
/// (`shared/anchors/WORKLOADS.md`), shared by the benchmarks, the demo and
/// the tests so that every workload draws the same numbers from the same seed.
///
/// ```
/// use rmm::testing::SplitMix64;
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
