//! What Python reads of the environment, through `rmm::env` (the one place
//! the library's variables are read): `_lib.log_file_name()`.
#![forbid(unsafe_code)]

use std::path::PathBuf;

use pyo3::prelude::*;

/// The file `RMM_LOG_FILE` names, or `None` when it is unset or empty (what
/// a logging resource made without a file name writes to).
#[pyfunction]
pub(crate) fn log_file_name() -> Option<PathBuf> {
    rmm::env::log_file()
}
