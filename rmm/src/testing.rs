//! Support for tests that need a GPU.
//!
//! A GPU test starts with [`require_gpu!`](crate::require_gpu). Without a
//! GPU it prints `RMM-SKIP: <test>` to stderr and returns early, so the test
//! counts as skipped (the bundle runner counts those lines); with the
//! environment variable `RMM_REQUIRE_GPU=1` it fails instead, so a run on a
//! GPU machine can never pass by skipping.

/// The variable that turns skips into failures.
pub const REQUIRE_GPU_VAR: &str = "RMM_REQUIRE_GPU";

/// The marker printed for a skipped test.
pub const SKIP_MARKER: &str = "RMM-SKIP:";

/// True when a GPU is usable. Otherwise prints the skip marker for `test`
/// and returns false, or panics when `RMM_REQUIRE_GPU=1`.
///
/// # Panics
/// When no GPU is usable and `RMM_REQUIRE_GPU=1`.
pub fn gpu_available_or_skip(test: &str) -> bool {
    if crate::device::is_available() {
        return true;
    }
    if std::env::var(REQUIRE_GPU_VAR).is_ok_and(|v| v == "1") {
        let why = crate::driver::init()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "no device".into());
        panic!("{test}: no usable GPU ({why}) and {REQUIRE_GPU_VAR}=1");
    }
    eprintln!("{SKIP_MARKER} {test} (no GPU)");
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
    eprintln!("{SKIP_MARKER} {test} (needs {n} GPUs, found {have})");
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
