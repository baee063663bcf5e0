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
