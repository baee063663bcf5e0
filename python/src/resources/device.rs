//! Resources that take memory straight from the driver or the system:
//! cuda, managed, pinned host, system and SAM-with-headroom.
#![forbid(unsafe_code)]

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use rmm::mr::{
    CudaMemoryResource, ManagedMemoryResource, PinnedHostMemoryResource, SamHeadroomMemoryResource,
    SharedResource, SystemMemoryResource,
};

use super::base::{base, need_driver, PyResource};
use super::simulated::PySimulated;
use crate::errors::IntoPy;
use crate::sizes::size_arg;

/// `cuMemAlloc` / `cuMemFree` (`rmm.mr.CudaMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CudaMemoryResource")]
pub(crate) struct PyCuda;

#[pymethods]
impl PyCuda {
    #[new]
    fn py_new() -> PyResult<PyClassInitializer<Self>> {
        need_driver()?;
        Ok(base(SharedResource::new(CudaMemoryResource::new())).add_subclass(PyCuda))
    }
}

/// Wraps the registry's initial resource (no driver check: it is what a
/// device uses until another is set, also on a machine without a GPU).
pub(crate) fn wrap_default(py: Python<'_>, inner: SharedResource) -> PyResult<Py<PyAny>> {
    let init = base(inner).add_subclass(PyCuda);
    Ok(Bound::new(py, init)?.into_any().unbind())
}

/// Managed memory (`rmm.mr.ManagedMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "ManagedMemoryResource")]
pub(crate) struct PyManaged;

#[pymethods]
impl PyManaged {
    #[new]
    fn py_new() -> PyResult<PyClassInitializer<Self>> {
        need_driver()?;
        Ok(base(SharedResource::new(ManagedMemoryResource::new())).add_subclass(PyManaged))
    }
}

/// Pinned host memory (`rmm.mr.PinnedHostMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "PinnedHostMemoryResource")]
pub(crate) struct PyPinned;

#[pymethods]
impl PyPinned {
    #[new]
    fn py_new() -> PyResult<PyClassInitializer<Self>> {
        need_driver()?;
        Ok(base(SharedResource::new(PinnedHostMemoryResource::new())).add_subclass(PyPinned))
    }
}

/// System memory used by the GPU (`rmm.mr.SystemMemoryResource`): only on
/// GPUs that can access pageable memory (Grace Hopper, Linux HMM); on
/// others the constructor raises `RMMError` saying so.
/// `without_gpu=True` (rmm_rs only) gives the same host allocations with
/// no GPU behind them (no driver call), e.g. for tests.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "SystemMemoryResource")]
pub(crate) struct PySystem {
    mr: SystemMemoryResource,
}

#[pymethods]
impl PySystem {
    #[new]
    #[pyo3(signature = (*, without_gpu=false))]
    fn py_new(without_gpu: bool) -> PyResult<PyClassInitializer<Self>> {
        let mr = if without_gpu {
            SystemMemoryResource::without_gpu()
        } else {
            need_driver()?;
            SystemMemoryResource::new().py_err()?
        };
        Ok(base(SharedResource::new(mr.clone())).add_subclass(PySystem { mr }))
    }

    /// Bytes allocated and not yet freed.
    fn allocated_bytes(&self) -> usize {
        self.mr.allocated_bytes()
    }

    /// Frees refused so far.
    fn bad_frees(&self) -> usize {
        self.mr.bad_frees()
    }
}

/// System memory that keeps `headroom` bytes of device memory free
/// (`rmm.mr.SamHeadroomMemoryResource`); same systems as
/// `SystemMemoryResource`. `simulated_device` (rmm_rs only, a
/// `SimulatedMemoryResource`) runs the same decisions without a GPU: its
/// free memory is the device's, and device parts are allocated on it.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "SamHeadroomMemoryResource")]
pub(crate) struct PySamHeadroom {
    mr: SamHeadroomMemoryResource,
}

#[pymethods]
impl PySamHeadroom {
    #[new]
    #[pyo3(signature = (headroom, *, simulated_device=None))]
    fn py_new(
        headroom: &Bound<'_, PyAny>,
        simulated_device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let headroom = size_arg(headroom, "headroom")?;
        let mr = match simulated_device {
            Some(obj) => {
                let sim = obj.cast::<PySimulated>().map_err(|_| {
                    PyTypeError::new_err("simulated_device must be an rmm_rs.mr.SimulatedMemoryResource")
                })?;
                SamHeadroomMemoryResource::simulated(headroom, sim.borrow().mr.clone())
            }
            None => {
                need_driver()?;
                SamHeadroomMemoryResource::new(headroom).py_err()?
            }
        };
        Ok(base(SharedResource::new(mr.clone())).add_subclass(PySamHeadroom { mr }))
    }

    /// The device memory kept free, in bytes.
    #[getter]
    fn headroom(&self) -> usize {
        self.mr.headroom()
    }

    /// Bytes of the live allocations advised to the device.
    fn device_bytes(&self) -> usize {
        self.mr.device_bytes()
    }

    /// Bytes allocated and not yet freed.
    fn allocated_bytes(&self) -> usize {
        self.mr.allocated_bytes()
    }
}
