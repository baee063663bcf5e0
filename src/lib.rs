//! # rmm-suite: Rust GPU kernels that draw their memory from `rmm`
//!
//! The kernels live in `kernels/` (a `#![no_std]` crate compiled to PTX by
//! `build.rs` with rustc's NVPTX backend); this crate embeds that PTX, loads
//! it once per device and offers typed host functions that launch the
//! kernels.
//!
//! | Item | What |
//! |---|---|
//! | [`kernels::PTX`] | the embedded PTX text |
//! | [`kernels::Kernels`] | the loaded module of one device, kernels by name |
//! | [`fill`] | fill device memory with a 1, 2, 4 or 8-byte value |
//! | [`copy`] | device-to-device copies through the copy kernel |
//! | [`containers`] | fill and copy over `rmm`'s containers (length checked, stream ordered) |
//! | [`report`] | benchmark charts and memory timelines (CPU only; the `rmm-report` binary) |

pub mod containers;
pub mod copy;
pub mod fill;
pub mod kernels;
pub mod report;

pub use rmm;

/// The README's examples, compiled as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
