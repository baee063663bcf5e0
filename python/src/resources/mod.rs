//! `rmm_rs.mr`'s resources and adaptors over the `rmm` crate, one file per
//! kind, plus the per-device registry and the replay functions.
//!
//! Every class derives from `DeviceMemoryResource` (`base`), which holds the
//! type-erased `rmm::mr::SharedResource` (what buffers, the per-device
//! registry and the PyTorch hook use) and, for the adaptors and
//! sub-allocators (`UpstreamResourceAdaptor`), the Python upstream object
//! (so that `upstream_mr` gives back what was passed in and keeps it
//! alive). Buffers hold the `SharedResource`, so a resource lives as long
//! as any buffer made from it.

mod adaptors;
mod base;
mod binning;
mod callback;
mod cuda_async;
mod device;
mod logging_adaptor;
mod registry;
mod replay;
mod simulated;
mod statistics;
mod suballocators;

use pyo3::prelude::*;

pub(crate) use base::resource_arg;

/// Adds the resource classes and the registry's functions to `m`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<base::PyResource>()?;
    m.add_class::<base::PyUpstream>()?;
    m.add_class::<device::PyCuda>()?;
    m.add_class::<device::PyManaged>()?;
    m.add_class::<device::PyPinned>()?;
    m.add_class::<device::PySystem>()?;
    m.add_class::<device::PySamHeadroom>()?;
    m.add_class::<cuda_async::PyCudaAsync>()?;
    m.add_class::<cuda_async::PyCudaAsyncView>()?;
    m.add_class::<cuda_async::PyCudaAsyncManaged>()?;
    m.add_class::<simulated::PySimulated>()?;
    m.add_class::<callback::PyCallback>()?;
    m.add_class::<suballocators::PyPool>()?;
    m.add_class::<suballocators::PyFixedSize>()?;
    m.add_class::<suballocators::PyArena>()?;
    m.add_class::<binning::PyBinning>()?;
    m.add_class::<adaptors::PyLimiting>()?;
    m.add_class::<adaptors::PyTracking>()?;
    m.add_class::<adaptors::PyFailureCallback>()?;
    m.add_class::<adaptors::PyPrefetch>()?;
    m.add_class::<adaptors::PyAligned>()?;
    m.add_class::<logging_adaptor::PyLogging>()?;
    m.add_class::<statistics::PyStatistics>()?;
    registry::register(m)?;
    replay::register(m)?;
    Ok(())
}
