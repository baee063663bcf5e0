//! Interop with other Rust GPU libraries, one module per library, each
//! behind a feature of the same name.
//!
//! | Library | Feature | Module |
//! |---|---|---|
//! | cudarc 0.19 (safe driver API, cuBLAS, kernel launches) | `cudarc` | `interop::cudarc` |
//!
//! Rust-CUDA's `cust` interop predates this module and lives on the types
//! themselves (feature `cust`: `CudaStream::as_cust`, `DeviceUvector::into_cust`).

#[cfg(feature = "cudarc")]
pub mod cudarc;
