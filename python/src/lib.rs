//! `rmm_rs._lib`: the Rust half of the `rmm_rs` Python package.
//!
//! The Python package (`python/rmm_rs/`) mirrors RAPIDS RMM's Python API;
//! this extension module holds what has to be native: the memory resources
//! and adaptors over the `rmm` crate and the per-device registry
//! (`resources`, one file per kind), `DeviceBuffer` (`buffer`), RMM's
//! copies between raw addresses (`pointer_copies`), streams, stream flags
//! and the stream pool (`stream`), the debug logger's level (`logging`)
//! the two C-ABI functions PyTorch's `CUDAPluggableAllocator` calls
//! (`ffi`), and the capture queries of `rmm_rs.graph` (`graph`).
//!
//! Errors: every `rmm::Error` becomes a Python exception in one place,
//! `errors::to_py`: out-of-memory and bad-alloc become `MemoryError`
//! (the message keeps `out_of_memory`), invalid arguments `ValueError`,
//! driver failures `rmm_rs.CUDAError` (a `MemoryError` when an allocation
//! fails, as in RMM), a missing driver `rmm_rs.DriverUnavailableError`,
//! a call stopped by a stream capture `rmm_rs.CaptureError`,
//! anything else `rmm_rs.RMMError`; an exception of a Python callback
//! inside an allocation leaves it as RMM translates it. An out-of-memory
//! `MemoryError` carries the error's report as `report` (`forensics`,
//! which also holds `memory_snapshot_json` and the observer functions).
//!
//! No `unsafe` outside `ffi` (the exported C functions), `stream` (views
//! of foreign stream handles), `buffer` and `pointer_copies` (raw copies
//! between device and host memory), `resources::base` (the free of a
//! pointer `allocate()` handed out) and `resources::cuda_async` (a view of
//! a foreign driver pool); each block says why it is sound.
#![deny(unsafe_code)]

use pyo3::prelude::*;

mod buffer;
mod errors;
mod ffi;
mod forensics;
mod graph;
mod logging;
mod pointer_copies;
mod resources;
mod sizes;
mod stream;

/// The extension module `rmm_rs._lib`.
#[pymodule]
#[pyo3(name = "_lib")]
fn rmm_rs_lib(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // The crate's debug logger (RMM_DEBUG_LOG_FILE / RMM_DEBUG_LOG_LEVEL);
    // a logger installed by someone else first is kept.
    logging::install();
    errors::register(m)?;
    m.add_function(wrap_pyfunction!(sizes::parse_bytes, m)?)?;
    stream::register(m)?;
    resources::register(m)?;
    forensics::register(m)?;
    buffer::register(m)?;
    pointer_copies::register(m)?;
    logging::register(m)?;
    graph::register(m)?;
    m.add_function(wrap_pyfunction!(ffi::extension_path_symbols, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("__git_commit__", env!("RMM_RS_GIT_COMMIT"))?;
    Ok(())
}
