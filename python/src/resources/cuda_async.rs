//! The driver's stream-ordered pools: `CudaAsyncMemoryResource` (a pool of
//! its own), `CudaAsyncViewMemoryResource` (an existing pool) and
//! `CudaAsyncManagedMemoryResource` (the default managed pool).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

use rmm::mr::{
    CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, CudaAsyncOptions, CudaAsyncViewMemoryResource,
    ExportHandleType, SharedResource,
};

use super::base::{base, need_driver, PyResource};
use crate::errors::{self, IntoPy, RMMError};
use crate::sizes::opt_size_arg;

/// The driver's stream-ordered pool (`rmm.mr.CudaAsyncMemoryResource`).
///
/// `enable_ipc` exports POSIX file descriptors, `enable_fabric` fabric
/// handles; asking for both at once is refused (`ValueError`): the pool
/// takes one export handle type.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CudaAsyncMemoryResource")]
pub(crate) struct PyCudaAsync {
    mr: CudaAsyncMemoryResource,
}

/// The export handle type of `enable_ipc` / `enable_fabric`.
fn export_handle_type(enable_ipc: bool, enable_fabric: bool) -> PyResult<ExportHandleType> {
    match (enable_ipc, enable_fabric) {
        (false, false) => Ok(ExportHandleType::None),
        (true, false) => Ok(ExportHandleType::PosixFileDescriptor),
        (false, true) => Ok(ExportHandleType::Fabric),
        (true, true) => Err(PyValueError::new_err(
            "enable_ipc and enable_fabric cannot both be set: rmm_rs pools export one handle type",
        )),
    }
}

#[pymethods]
impl PyCudaAsync {
    #[new]
    #[pyo3(signature = (initial_pool_size=None, release_threshold=None, enable_ipc=false, enable_fabric=false))]
    fn py_new(
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        release_threshold: Option<&Bound<'_, PyAny>>,
        enable_ipc: bool,
        enable_fabric: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let mut opts = CudaAsyncOptions::default();
        if let Some(n) = opt_size_arg(initial_pool_size, "initial_pool_size")? {
            opts = opts.initial_pool_size(n);
        }
        if let Some(n) = opt_size_arg(release_threshold, "release_threshold")? {
            opts = opts.release_threshold(n as u64);
        }
        let export = export_handle_type(enable_ipc, enable_fabric)?;
        opts = opts.export_handle_type(export);
        need_driver()?;
        let mr = CudaAsyncMemoryResource::with_options(opts).map_err(|e| match e {
            // RMM's words for a handle type the device or driver cannot
            // export (its error ends with them).
            rmm::Error::Logic(_) if export != ExportHandleType::None => {
                RMMError::new_err(format!("{e}: Requested IPC memory handle type not supported"))
            }
            other => errors::to_py(other),
        })?;
        Ok(base(SharedResource::new(mr.clone())).add_subclass(PyCudaAsync { mr }))
    }

    /// The driver pool's handle (`cudaMemPool_t` as an int).
    fn pool_handle(&self) -> usize {
        self.mr.pool_handle()
    }

    /// The pool's release threshold in bytes.
    fn release_threshold(&self) -> PyResult<u64> {
        self.mr.release_threshold().py_err()
    }
}

/// The integer handle of a `pool_handle` argument: a cuda-python
/// `cudaMemPool_t` or `CUmemoryPool` (RMM takes only those), or a plain
/// int (rmm_rs also takes the handle as a number, e.g. another
/// resource's `pool_handle()`).
fn pool_handle_arg(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
        return obj
            .extract::<usize>()
            .map_err(|_| PyValueError::new_err("pool_handle must be a non-negative handle value"));
    }
    let type_name = obj.get_type().name()?.to_string();
    if type_name != "cudaMemPool_t" && type_name != "CUmemoryPool" {
        return Err(PyValueError::new_err(
            "pool_handle must be a cudaMemPool_t or CUmemoryPool",
        ));
    }
    obj.call_method0("__int__")?
        .extract::<usize>()
        .map_err(|_| PyTypeError::new_err("pool_handle: int() of the handle is not a handle value"))
}

/// Stream-ordered allocation from an existing driver pool
/// (`rmm.mr.CudaAsyncViewMemoryResource`): the device's default pool or
/// one made by another library. As in RMM, the pool must outlive the
/// resource and every allocation from it.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CudaAsyncViewMemoryResource")]
pub(crate) struct PyCudaAsyncView {
    mr: CudaAsyncViewMemoryResource,
}

#[pymethods]
impl PyCudaAsyncView {
    #[new]
    fn py_new(pool_handle: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let handle = pool_handle_arg(pool_handle)?;
        need_driver()?;
        #[allow(unsafe_code)]
        // SAFETY: RMM's contract for this class, which its documentation
        // passes on to the caller: `pool_handle` names a driver pool of the
        // current device that is not destroyed while the resource or any of
        // its allocations lives. A null handle is refused by `from_raw`.
        let mr = unsafe { CudaAsyncViewMemoryResource::from_raw(handle) }.py_err()?;
        Ok(base(SharedResource::new(mr.clone())).add_subclass(PyCudaAsyncView { mr }))
    }

    /// The driver pool handle as an int.
    fn pool_handle(&self) -> usize {
        self.mr.pool_handle()
    }
}

/// Stream-ordered managed memory from the current device's default managed
/// driver pool (`rmm.mr.experimental.CudaAsyncManagedMemoryResource`; also
/// `rmm_rs.mr.CudaAsyncManagedMemoryResource`). Needs a CUDA 13 driver: an
/// older one raises `RMMError` saying so.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CudaAsyncManagedMemoryResource")]
pub(crate) struct PyCudaAsyncManaged {
    mr: CudaAsyncManagedMemoryResource,
}

#[pymethods]
impl PyCudaAsyncManaged {
    #[new]
    fn py_new() -> PyResult<PyClassInitializer<Self>> {
        need_driver()?;
        let mr = CudaAsyncManagedMemoryResource::new().py_err()?;
        Ok(base(SharedResource::new(mr.clone())).add_subclass(PyCudaAsyncManaged { mr }))
    }

    /// The driver pool handle (`CUmemoryPool` as an integer).
    fn pool_handle(&self) -> usize {
        self.mr.pool_handle()
    }
}
