//! GPU kernels written in Rust, compiled to PTX with rustc's own NVPTX
//! backend (`nvptx64-nvidia-cuda`), and loaded by the host crate.
//!
//! [`device`] plays the role of `cuda_std`: thread and block indices,
//! grid-stride loops, shared memory and warp operations. Every kernel is an
//! `extern "ptx-kernel"` function with an unmangled name; the host side
//! (`rmm-suite`'s `src/`) launches them by that name.
//!
//! On the host (any target but nvptx64) the same kernel bodies compile
//! against [`emulator`], a thread-per-GPU-thread emulator of [`device`],
//! and `RUSTC_BOOTSTRAP=1 cargo test --release` here runs them on the CPU
//! (from the root: `cargo test --test kernel_emulator -- --ignored`).
#![cfg_attr(target_arch = "nvptx64", no_std)]
#![cfg_attr(not(target_arch = "nvptx64"), allow(dead_code, unused_imports, unused_macros))]
#![feature(stmt_expr_attributes)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics)
)]
#![allow(clippy::missing_safety_doc, internal_features)]

pub mod copy;
pub mod device;
pub mod fill;
pub mod num;
pub mod reduce;
pub mod scan;
pub mod sequence;
pub mod sort;

#[cfg(not(target_arch = "nvptx64"))]
pub mod emulator;
#[cfg(all(test, not(target_arch = "nvptx64")))]
mod emulator_tests;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    device::trap()
}
