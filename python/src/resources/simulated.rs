//! `SimulatedMemoryResource` (rmm_rs only): addresses without memory.
#![forbid(unsafe_code)]

use pyo3::prelude::*;

use rmm::mr::{SharedResource, SimulatedMemoryResource};

use super::base::{base, PyResource};
use crate::sizes::opt_size_arg;

/// Addresses without memory (`rmm_rs.mr.SimulatedMemoryResource`, not in
/// RMM): a simulated device of `capacity` bytes, so pools, adaptors,
/// statistics and logging run without a GPU. Buffers over it have no
/// contents (copies to or from them raise).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "SimulatedMemoryResource")]
pub(crate) struct PySimulated {
    pub(super) mr: SimulatedMemoryResource,
}

#[pymethods]
impl PySimulated {
    #[new]
    #[pyo3(signature = (capacity=None))]
    fn py_new(capacity: Option<&Bound<'_, PyAny>>) -> PyResult<PyClassInitializer<Self>> {
        let capacity = opt_size_arg(capacity, "capacity")?.unwrap_or(1 << 40);
        let mr = SimulatedMemoryResource::new(capacity);
        Ok(base(SharedResource::new(mr.clone())).add_subclass(PySimulated { mr }))
    }

    /// The simulated device size in bytes.
    #[getter]
    fn capacity(&self) -> usize {
        self.mr.capacity()
    }

    /// Bytes allocated now (each allocation rounded up to 256).
    fn allocated_bytes(&self) -> usize {
        self.mr.allocated_bytes()
    }

    /// Highest `allocated_bytes()` seen.
    fn peak_bytes(&self) -> usize {
        self.mr.peak_bytes()
    }

    /// Number of live allocations.
    fn live_allocations(&self) -> usize {
        self.mr.live_allocations()
    }

    /// Frees refused (unknown pointer or wrong size).
    fn bad_frees(&self) -> usize {
        self.mr.bad_frees()
    }
}
