//! Adaptors over an upstream resource: limiting, tracking, failure
//! callback, prefetch and aligned (logging and statistics have files of
//! their own).
#![forbid(unsafe_code)]

use std::fmt::Write as _;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use rmm::mr::{
    AlignedAdaptor, FailureCallbackAdaptor, LimitingAdaptor, PrefetchAdaptor, SharedResource, TrackingAdaptor,
};

use super::base::{over, upstream_arg, PyUpstream};
use crate::errors::{self, IntoPy};
use crate::sizes::{opt_size_arg, size_arg};

/// Caps the bytes outstanding (`rmm.mr.LimitingResourceAdaptor`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "LimitingResourceAdaptor")]
pub(crate) struct PyLimiting {
    mr: LimitingAdaptor,
}

#[pymethods]
impl PyLimiting {
    #[new]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        allocation_limit: &Bound<'_, PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let limit = size_arg(allocation_limit, "allocation_limit")?;
        let mr = LimitingAdaptor::new(upstream, limit);
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyLimiting { mr }))
    }

    /// Bytes allocated through the adaptor now.
    fn get_allocated_bytes(&self) -> usize {
        self.mr.allocated_bytes()
    }

    /// The limit in bytes.
    fn get_allocation_limit(&self) -> usize {
        self.mr.allocation_limit()
    }
}

/// Every outstanding allocation (`rmm.mr.TrackingResourceAdaptor`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "TrackingResourceAdaptor")]
pub(crate) struct PyTracking {
    mr: TrackingAdaptor,
}

#[pymethods]
impl PyTracking {
    #[new]
    #[pyo3(signature = (upstream_mr, capture_stacks=false))]
    fn py_new(upstream_mr: &Bound<'_, PyAny>, capture_stacks: bool) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let mr = TrackingAdaptor::new(upstream, capture_stacks);
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyTracking { mr }))
    }

    /// Sum of the sizes of the outstanding allocations.
    fn get_allocated_bytes(&self) -> usize {
        self.mr.allocated_bytes()
    }

    /// One line per outstanding allocation, in RMM's format: `<address>:
    /// <size> B`, followed by ` : callstack:` and the stack when stacks are
    /// captured; the empty string when nothing is outstanding.
    fn get_outstanding_allocations_str(&self) -> String {
        let mut s = String::new();
        for (ptr, info) in self.mr.outstanding_allocations() {
            let _ = write!(s, "{:#x}: {} B", ptr.addr(), info.size);
            if let Some(bt) = &info.backtrace {
                let _ = write!(s, " : callstack:\n{bt}");
            }
            s.push('\n');
        }
        s
    }

    /// Writes the outstanding allocations to the debug log (debug level).
    fn log_outstanding_allocations(&self) {
        self.mr.log_outstanding_allocations()
    }
}

/// Retries allocations while `callback(nbytes)` returns True after an
/// out-of-memory failure (`rmm.mr.FailureCallbackResourceAdaptor`). An
/// exception of the callback ends the allocation with that exception
/// (a `MemoryError` stays one, others become `RuntimeError`), as in RMM.
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "FailureCallbackResourceAdaptor")]
pub(crate) struct PyFailureCallback;

#[pymethods]
impl PyFailureCallback {
    #[new]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        if !callback.is_callable() {
            return Err(PyTypeError::new_err(
                "callback must be callable: callback(nbytes) -> bool",
            ));
        }
        let cb = callback.unbind();
        let mr = FailureCallbackAdaptor::new(upstream, move |bytes| {
            Python::attach(
                |py| match cb.call1(py, (bytes,)).and_then(|r| r.bind(py).is_truthy()) {
                    Ok(retry) => retry,
                    Err(e) => {
                        // Raised by `errors::to_py` in place of the
                        // out-of-memory error this `false` leads to.
                        errors::stash_callback_error(py, &e);
                        false
                    }
                },
            )
        });
        Ok(over(SharedResource::new(mr), upstream_mr).add_subclass(PyFailureCallback))
    }
}

/// Prefetches managed memory to the current device after allocation
/// (`rmm.mr.PrefetchResourceAdaptor`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "PrefetchResourceAdaptor")]
pub(crate) struct PyPrefetch;

#[pymethods]
impl PyPrefetch {
    #[new]
    fn py_new(upstream_mr: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let mr = PrefetchAdaptor::new(upstream);
        Ok(over(SharedResource::new(mr), upstream_mr).add_subclass(PyPrefetch))
    }
}

/// Alignments above 256 bytes for allocations of at least
/// `alignment_threshold` bytes (`rmm_rs.mr.AlignedResourceAdaptor`, RMM's
/// C++ `aligned_resource_adaptor`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "AlignedResourceAdaptor")]
pub(crate) struct PyAligned;

#[pymethods]
impl PyAligned {
    #[new]
    #[pyo3(signature = (upstream_mr, alignment=256, alignment_threshold=None))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        alignment: usize,
        alignment_threshold: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let threshold = opt_size_arg(alignment_threshold, "alignment_threshold")?.unwrap_or(65536);
        let mr = AlignedAdaptor::new(upstream, alignment, threshold).py_err()?;
        Ok(over(SharedResource::new(mr), upstream_mr).add_subclass(PyAligned))
    }
}
