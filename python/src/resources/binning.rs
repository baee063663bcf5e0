//! `BinningMemoryResource`: requests routed by size to bins.
#![forbid(unsafe_code)]

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmm::mr::{BinningMemoryResource, MemoryResource, SharedResource};

use super::base::{over, resource_arg, upstream_arg, PyUpstream};
use crate::errors::{to_py, RMMError};
use crate::sizes::size_arg;

/// Requests routed by size to bins (`rmm.mr.BinningMemoryResource`; the
/// Python subclass of that name adds the exponents' bins).
///
/// Bins are added before the resource is used: `add_bin` on a resource
/// that is already shared (set as a current resource, used as an
/// upstream, or holding live buffers) raises `RMMError`. As in RMM, a bin
/// of a size that exists already is left as it is, and `bin_mrs` lists the
/// resources passed to `add_bin` (kept alive here), in call order.
#[pyclass(extends = PyUpstream, subclass, module = "rmm_rs.mr", name = "_BinningMemoryResource")]
pub(crate) struct PyBinning {
    mr: Arc<BinningMemoryResource>,
    /// The resources passed to `add_bin`.
    given: Vec<Py<PyAny>>,
}

fn exponent_arg(v: Option<i64>, what: &str) -> PyResult<Option<u32>> {
    match v {
        None => Ok(None),
        Some(-1) => Ok(None),
        Some(e) if (0..48).contains(&e) => Ok(Some(e as u32)),
        Some(e) => Err(PyValueError::new_err(format!(
            "{what} must be in 0..48 (or -1: none), got {e}"
        ))),
    }
}

impl PyBinning {
    fn add_bin_impl(
        slf: &Bound<'_, Self>,
        size: usize,
        bin_resource: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if size == 0 {
            return Err(PyValueError::new_err("allocation_size must be positive"));
        }
        let given = bin_resource.filter(|r| !r.is_none());
        let bin_shared = match given {
            Some(r) => Some(resource_arg(r, "bin_resource")?),
            None => None,
        };
        let mut me = slf.borrow_mut();
        // Take the erased handle away so that the Arc is unique if nothing
        // else (a buffer, the registry, another resource) holds it.
        let held = me.as_super().as_super().inner.take();
        drop(held);
        let result = match Arc::get_mut(&mut me.mr) {
            Some(b) => b.add_bin(size, bin_shared).map_err(to_py),
            None => Err(RMMError::new_err(
                "BinningMemoryResource.add_bin: the resource is already in use (a current resource, an \
                 upstream, or live buffers hold it); add bins before using it",
            )),
        };
        let erased: Arc<dyn MemoryResource> = me.mr.clone();
        me.as_super().as_super().inner = Some(SharedResource::from_arc(erased));
        result?;
        if let Some(r) = given {
            me.given.push(r.clone().unbind());
        }
        Ok(())
    }
}

#[pymethods]
impl PyBinning {
    #[new]
    #[pyo3(signature = (upstream_mr, min_size_exponent=None, max_size_exponent=None))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        min_size_exponent: Option<i64>,
        max_size_exponent: Option<i64>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let lo = exponent_arg(min_size_exponent, "min_size_exponent")?;
        let hi = exponent_arg(max_size_exponent, "max_size_exponent")?;
        if lo.is_some() != hi.is_some() {
            return Err(PyValueError::new_err(
                "give both min_size_exponent and max_size_exponent, or neither",
            ));
        }
        if let (Some(l), Some(h)) = (lo, hi) {
            if l > h {
                return Err(PyValueError::new_err(format!(
                    "min_size_exponent {l} exceeds max_size_exponent {h}"
                )));
            }
        }
        let mr = Arc::new(BinningMemoryResource::new(upstream));
        let erased: Arc<dyn MemoryResource> = mr.clone();
        Ok(
            over(SharedResource::from_arc(erased), upstream_mr).add_subclass(PyBinning {
                mr,
                given: Vec::new(),
            }),
        )
    }

    /// Adds the bins of `2**min .. 2**max` bytes (the Python subclass's
    /// `__init__` calls this with the constructor's exponents).
    fn _add_fixed_bins(slf: &Bound<'_, Self>, lo: u32, hi: u32) -> PyResult<()> {
        for e in lo..=hi {
            Self::add_bin_impl(slf, 1usize << e, None)?;
        }
        Ok(())
    }

    /// Adds a bin for requests up to `allocation_size` bytes, served by
    /// `bin_resource`, or by a new fixed-size resource of that block size
    /// over the upstream.
    #[pyo3(signature = (allocation_size, bin_resource=None))]
    fn add_bin(
        slf: &Bound<'_, Self>,
        allocation_size: &Bound<'_, PyAny>,
        bin_resource: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let size = size_arg(allocation_size, "allocation_size")?;
        Self::add_bin_impl(slf, size, bin_resource)
    }

    /// The resources passed to `add_bin`, in call order (RMM's list).
    #[getter]
    fn bin_mrs(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.given.iter().map(|r| r.clone_ref(py)).collect()
    }

    /// The bin sizes, increasing.
    #[getter]
    fn bin_sizes(&self) -> Vec<usize> {
        self.mr.bin_sizes()
    }
}
