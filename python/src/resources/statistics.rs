//! `StatisticsResourceAdaptor`.
#![forbid(unsafe_code)]

use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use rmm::mr::{Counter, SharedResource, StatisticsAdaptor};

use super::base::{over, upstream_arg, PyUpstream};

/// The counters as RMM returns them: an `rmm_rs.statistics.Statistics`
/// (the one home of that class, a dataclass that also answers
/// `s["current_bytes"]`), built from `bytes` and `allocs`.
fn statistics<'py>(py: Python<'py>, (bytes, allocs): (Counter, Counter)) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(py);
    kwargs.set_item("current_bytes", bytes.value)?;
    kwargs.set_item("current_count", allocs.value)?;
    kwargs.set_item("peak_bytes", bytes.peak)?;
    kwargs.set_item("peak_count", allocs.peak)?;
    kwargs.set_item("total_bytes", bytes.total)?;
    kwargs.set_item("total_count", allocs.total)?;
    // Imported at call time: `rmm_rs.statistics` imports `rmm_rs.mr`,
    // which imports this module.
    py.import("rmm_rs.statistics")?
        .getattr("Statistics")?
        .call((), Some(&kwargs))
}

/// Byte and allocation counters with a stack of scopes
/// (`rmm.mr.StatisticsResourceAdaptor`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "StatisticsResourceAdaptor")]
pub(crate) struct PyStatistics {
    mr: StatisticsAdaptor,
}

#[pymethods]
impl PyStatistics {
    #[new]
    fn py_new(upstream_mr: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let mr = StatisticsAdaptor::new(upstream);
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyStatistics { mr }))
    }

    /// The counters of the current scope, a `Statistics`.
    #[getter]
    fn allocation_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        statistics(py, (self.mr.bytes_counter(), self.mr.allocations_counter()))
    }

    /// Starts a new scope of zeroed counters; returns the counters of the
    /// scope below it, a `Statistics`.
    fn push_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        statistics(py, self.mr.push_counters())
    }

    /// Ends the current scope (merged into the one below); returns its
    /// counters, a `Statistics`. `IndexError` when no scope was pushed.
    fn pop_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let counters = self.mr.pop_counters().map_err(|_| {
            PyIndexError::new_err("cannot pop the last counter pair: no push_counters() scope is open")
        })?;
        statistics(py, counters)
    }

    /// Scopes pushed and not popped.
    #[getter]
    fn depth(&self) -> usize {
        self.mr.depth()
    }
}
