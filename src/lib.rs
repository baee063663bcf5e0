//! Rust GPU kernels (compiled to PTX) that draw scratch memory from the `rmm` crate.
