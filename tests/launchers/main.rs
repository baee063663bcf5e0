//! The launchers' tests, one module per former test binary, linked once:
//! the kernels (fill, copy, sequence, reductions, scans, the radix sort)
//! over rmm memory, containers and spans. Test names keep their file's name
//! as their first path segment (`sort::each_kernel_once_keys_u64`), so a
//! filter such as `sort::` runs what the `sort` binary ran.
//!
//! `sanitizer_annotations` (which runs itself under compute-sanitizer),
//! `kernel_emulator` (which runs cargo) and `capture` (graph capture, which
//! the device-wide synchronisations of these tests would invalidate) stay
//! binaries of their own.

mod algo_util;

mod algorithms;
mod container_ops;
mod copy;
mod fill;
mod kernel_image;
mod sort;
mod span_order;
