//! `rmm_rs.mr`'s resources and adaptors over the `rmm` crate.
//!
//! Every class derives from `DeviceMemoryResource`, which holds the
//! type-erased `rmm::mr::SharedResource` (what buffers, the per-device
//! registry and the PyTorch hook use) and the Python upstream object (so
//! that `upstream_mr` gives back what was passed in and keeps it alive).
//! Buffers hold the `SharedResource`, so a resource lives as long as any
//! buffer made from it.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use rmm::device::DeviceId;
use rmm::mr::{
    AlignedAdaptor, ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CallbackMemoryResource,
    CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, CudaAsyncOptions, CudaMemoryResource,
    ExportHandleType, FailureCallbackAdaptor, FixedSizeMemoryResource, FixedSizeOptions, LimitingAdaptor,
    LoggingAdaptor, ManagedMemoryResource, MemoryResource, PinnedHostMemoryResource, PoolMemoryResource,
    PoolOptions, PrefetchAdaptor, SamHeadroomMemoryResource, SharedResource, SimulatedMemoryResource,
    StatisticsAdaptor, SystemMemoryResource, TrackingAdaptor,
};
use rmm::{DevicePtr, Error};

use crate::errors::{to_py, IntoPy};
use crate::sizes::{opt_size_arg, size_arg};
use crate::stream::{stream_arg, PyStream};

/// The alignment every allocation of the Python API asks for.
const ALIGNMENT: usize = 256;

/// Base class of every memory resource (`rmm.mr.DeviceMemoryResource`).
///
/// `allocate(nbytes, stream)` returns an int pointer; `deallocate(ptr,
/// nbytes, stream)` frees it. Pointers handed out by `allocate` are
/// remembered per resource object, so freeing a pointer this object did
/// not hand out, freeing twice, or freeing with another size is a
/// `ValueError` instead of memory corruption.
#[pyclass(subclass, module = "rmm_rs.mr", name = "DeviceMemoryResource")]
pub(crate) struct PyResource {
    inner: Option<SharedResource>,
    upstream: Option<Py<PyAny>>,
    /// Live raw allocations made through `allocate`: address -> bytes.
    live: Mutex<HashMap<u64, usize>>,
}

impl PyResource {
    fn of(inner: SharedResource, upstream: Option<Py<PyAny>>) -> Self {
        PyResource {
            inner: Some(inner),
            upstream,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// The resource, or `ValueError` for a resource without one.
    pub(crate) fn shared(&self) -> PyResult<SharedResource> {
        self.inner.clone().ok_or_else(|| {
            PyValueError::new_err(
                "this DeviceMemoryResource holds no resource (closed, or a bare base-class object); \
                 use one of the resource classes of rmm_rs.mr",
            )
        })
    }
}

/// The `SharedResource` of a Python resource argument.
///
/// # Errors
/// `TypeError` when `obj` is not a `DeviceMemoryResource`; `ValueError`
/// when it holds no resource.
pub(crate) fn resource_arg(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<SharedResource> {
    match obj.cast::<PyResource>() {
        Ok(r) => r.borrow().shared(),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be an rmm_rs.mr.DeviceMemoryResource, not {}",
            obj.get_type().name()?
        ))),
    }
}

fn base(inner: SharedResource, upstream: Option<&Bound<'_, PyAny>>) -> PyClassInitializer<PyResource> {
    PyClassInitializer::from(PyResource::of(inner, upstream.map(|u| u.clone().unbind())))
}

/// Refuses sizes that are not multiples of 256 (a bad argument, not a
/// logic error of the library).
fn check_256(value: Option<usize>, what: &str) -> PyResult<()> {
    match value {
        Some(v) if !v.is_multiple_of(ALIGNMENT) => Err(PyValueError::new_err(format!(
            "{what} must be a multiple of 256 bytes, got {v}"
        ))),
        _ => Ok(()),
    }
}

/// Makes sure the driver is there, naming the missing library otherwise.
fn need_driver() -> PyResult<()> {
    rmm::device::init_driver().py_err()?;
    if rmm::device::device_count() == 0 {
        return Err(crate::errors::DriverUnavailableError::new_err(
            "no usable GPU: the CUDA driver reports no device",
        ));
    }
    Ok(())
}

#[pymethods]
impl PyResource {
    /// A bare base-class object holds no resource; use a subclass.
    #[new]
    fn py_new() -> Self {
        PyResource {
            inner: None,
            upstream: None,
            live: Mutex::new(HashMap::new()),
        }
    }

    /// Allocates `nbytes` on `stream`; returns the address as an int.
    #[pyo3(signature = (nbytes, stream=None))]
    fn allocate(
        &self,
        py: Python<'_>,
        nbytes: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let bytes = size_arg(nbytes, "nbytes")?;
        let stream = stream_arg(py, stream)?;
        let mr = self.shared()?;
        let view = stream.get().view();
        let p = py.detach(|| mr.allocate(bytes, ALIGNMENT, view)).py_err()?;
        if !p.is_null() {
            self.live
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(p.addr(), bytes);
        }
        Ok(p.addr())
    }

    /// Frees `ptr` (from this object's `allocate`, with the same `nbytes`)
    /// on `stream`.
    #[pyo3(signature = (ptr, nbytes, stream=None))]
    fn deallocate(
        &self,
        py: Python<'_>,
        ptr: u64,
        nbytes: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let bytes = size_arg(nbytes, "nbytes")?;
        let stream = stream_arg(py, stream)?;
        let mr = self.shared()?;
        if ptr == 0 {
            return Ok(());
        }
        {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            match live.get(&ptr) {
                None => {
                    return Err(PyValueError::new_err(format!(
                        "deallocate: {ptr:#x} was not allocated by this resource's allocate(), or was \
                         already freed"
                    )))
                }
                Some(&n) if n != bytes => {
                    return Err(PyValueError::new_err(format!(
                        "deallocate: {ptr:#x} was allocated with {n} bytes, not {bytes}"
                    )))
                }
                Some(_) => {
                    live.remove(&ptr);
                }
            }
        }
        // The pointer is one this object handed out with these bytes and the
        // same alignment, and it was removed from `live`, so it is freed once.
        let view = stream.get().view();
        py.detach(|| free(&mr, DevicePtr::new(ptr), bytes, view));
        Ok(())
    }

    /// The upstream resource of an adaptor or sub-allocator (`None` for a
    /// base resource).
    #[getter]
    fn upstream_mr(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.upstream.as_ref().map(|u| u.clone_ref(py))
    }

    /// Same as `upstream_mr`.
    fn get_upstream(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.upstream_mr(py)
    }

    /// True when memory from `other` can be freed through this resource.
    fn is_equal(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let other = resource_arg(other, "other")?;
        Ok(self.shared()?.is_equal(&other))
    }

    /// True when no GPU is behind the resource (simulated resource and
    /// what is built over it).
    #[getter]
    fn is_simulated(&self) -> PyResult<bool> {
        Ok(self.shared()?.is_simulated())
    }

    /// The device the resource is bound to, where it is.
    #[getter]
    fn device(&self) -> PyResult<Option<i32>> {
        Ok(self.shared()?.device().map(|d| d.0))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let name = slf.get_type().name()?;
        Ok(format!("<rmm_rs.mr.{name}>"))
    }
}

/// Frees through the trait's checked path (the resources log and ignore
/// a bad free instead of trusting it).
fn free(mr: &SharedResource, ptr: DevicePtr, bytes: usize, stream: rmm::CudaStreamView<'_>) {
    // `MemoryResource::deallocate` is an unsafe fn; the call lives in
    // `buffer.rs`, the module that holds the package's raw-memory code.
    crate::buffer::free_raw(mr, ptr, bytes, ALIGNMENT, stream);
}

// ---------------------------------------------------------------------------
// Base resources

/// `cuMemAlloc` / `cuMemFree` (`rmm.mr.CudaMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CudaMemoryResource")]
pub(crate) struct PyCuda;

#[pymethods]
impl PyCuda {
    #[new]
    fn py_new() -> PyResult<PyClassInitializer<Self>> {
        need_driver()?;
        Ok(base(SharedResource::new(CudaMemoryResource::new()), None).add_subclass(PyCuda))
    }
}

/// Wraps the registry's initial resource (no driver check: it is what a
/// device uses until another is set, also on a machine without a GPU).
pub(crate) fn wrap_default(py: Python<'_>, inner: SharedResource) -> PyResult<Py<PyAny>> {
    let init = base(inner, None).add_subclass(PyCuda);
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
        Ok(base(SharedResource::new(ManagedMemoryResource::new()), None).add_subclass(PyManaged))
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
        Ok(base(SharedResource::new(PinnedHostMemoryResource::new()), None).add_subclass(PyPinned))
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
        Ok(base(SharedResource::new(mr.clone()), None).add_subclass(PyCudaAsyncManaged { mr }))
    }

    /// The driver pool handle (`CUmemoryPool` as an integer).
    fn pool_handle(&self) -> usize {
        self.mr.pool_handle()
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
        Ok(base(SharedResource::new(mr.clone()), None).add_subclass(PySystem { mr }))
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
        Ok(base(SharedResource::new(mr.clone()), None).add_subclass(PySamHeadroom { mr }))
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

/// The driver's stream-ordered pool (`rmm.mr.CudaAsyncMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CudaAsyncMemoryResource")]
pub(crate) struct PyCudaAsync {
    mr: CudaAsyncMemoryResource,
}

#[pymethods]
impl PyCudaAsync {
    #[new]
    #[pyo3(signature = (initial_pool_size=None, release_threshold=None, enable_ipc=false))]
    fn py_new(
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        release_threshold: Option<&Bound<'_, PyAny>>,
        enable_ipc: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let mut opts = CudaAsyncOptions::default();
        if let Some(n) = opt_size_arg(initial_pool_size, "initial_pool_size")? {
            opts = opts.initial_pool_size(n);
        }
        if let Some(n) = opt_size_arg(release_threshold, "release_threshold")? {
            opts = opts.release_threshold(n as u64);
        }
        if enable_ipc {
            opts = opts.export_handle_type(ExportHandleType::PosixFileDescriptor);
        }
        need_driver()?;
        let mr = CudaAsyncMemoryResource::with_options(opts).py_err()?;
        Ok(base(SharedResource::new(mr.clone()), None).add_subclass(PyCudaAsync { mr }))
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

/// Addresses without memory (`rmm_rs.mr.SimulatedMemoryResource`, not in
/// RMM): a simulated device of `capacity` bytes, so pools, adaptors,
/// statistics and logging run without a GPU. Buffers over it have no
/// contents (copies to or from them raise).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "SimulatedMemoryResource")]
pub(crate) struct PySimulated {
    mr: SimulatedMemoryResource,
}

#[pymethods]
impl PySimulated {
    #[new]
    #[pyo3(signature = (capacity=None))]
    fn py_new(capacity: Option<&Bound<'_, PyAny>>) -> PyResult<PyClassInitializer<Self>> {
        let capacity = opt_size_arg(capacity, "capacity")?.unwrap_or(1 << 40);
        let mr = SimulatedMemoryResource::new(capacity);
        Ok(base(SharedResource::new(mr.clone()), None).add_subclass(PySimulated { mr }))
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

/// `allocate_func(nbytes, stream) -> int` and `deallocate_func(ptr, nbytes,
/// stream)` (`rmm.mr.CallbackMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "CallbackMemoryResource")]
pub(crate) struct PyCallback;

/// The error for a failed Python allocate callback: `MemoryError` stays
/// out-of-memory, anything else is a bad_alloc naming the exception.
fn callback_error(py: Python<'_>, bytes: usize, e: PyErr) -> Error {
    let text = e.to_string();
    if e.is_instance_of::<pyo3::exceptions::PyMemoryError>(py) {
        Error::OutOfMemory {
            requested: bytes,
            reason: format!("allocate callback: {text}"),
        }
    } else {
        Error::BadAlloc(format!("allocate callback raised {text}"))
    }
}

#[pymethods]
impl PyCallback {
    /// `simulated=True` (rmm_rs only) marks callbacks that hand out
    /// addresses without a GPU behind them (e.g. from a
    /// `SimulatedMemoryResource`), so that pools and buffers over them run
    /// without a GPU.
    #[new]
    #[pyo3(signature = (allocate_func, deallocate_func, *, simulated=false))]
    fn py_new(
        allocate_func: Bound<'_, PyAny>,
        deallocate_func: Bound<'_, PyAny>,
        simulated: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        if !allocate_func.is_callable() || !deallocate_func.is_callable() {
            return Err(PyTypeError::new_err(
                "CallbackMemoryResource needs two callables: allocate_func(nbytes, stream) and \
                 deallocate_func(ptr, nbytes, stream)",
            ));
        }
        let alloc = allocate_func.unbind();
        let dealloc = deallocate_func.unbind();
        let mr = CallbackMemoryResource::new(
            move |bytes, _alignment, stream| {
                Python::attach(|py| {
                    let s = Py::new(py, PyStream::special(stream.as_raw()))
                        .map_err(|e| callback_error(py, bytes, e))?;
                    let r = alloc
                        .call1(py, (bytes, s))
                        .and_then(|p| p.extract::<u64>(py))
                        .map_err(|e| callback_error(py, bytes, e))?;
                    Ok(DevicePtr::new(r))
                })
            },
            move |ptr, bytes, _alignment, stream| {
                Python::attach(|py| {
                    let r = Py::new(py, PyStream::special(stream.as_raw()))
                        .and_then(|s| dealloc.call1(py, (ptr.addr(), bytes, s)).map(drop));
                    if let Err(e) = r {
                        log::error!("CallbackMemoryResource: deallocate callback for {ptr} raised {e}");
                    }
                })
            },
        );
        let mr = if simulated { mr.without_gpu() } else { mr };
        Ok(base(SharedResource::new(mr), None).add_subclass(PyCallback))
    }
}

// ---------------------------------------------------------------------------
// Sub-allocators

/// Default initial pool size when none is given: half the free device
/// memory (RMM's default), half a simulated device's capacity, 0 over
/// other simulated stacks.
fn default_initial_pool(upstream: &SharedResource) -> PyResult<usize> {
    if upstream.is_simulated() {
        let half = upstream
            .inner()
            .downcast_ref::<SimulatedMemoryResource>()
            .map(|s| s.capacity() / 2)
            .unwrap_or(0);
        return Ok(half / ALIGNMENT * ALIGNMENT);
    }
    rmm::device::percent_of_free_device_memory(50).py_err()
}

/// A coalescing best-fit pool (`rmm.mr.PoolMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "PoolMemoryResource")]
pub(crate) struct PyPool {
    mr: PoolMemoryResource,
}

#[pymethods]
impl PyPool {
    #[new]
    #[pyo3(signature = (upstream_mr, initial_pool_size=None, maximum_pool_size=None))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        maximum_pool_size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let initial = opt_size_arg(initial_pool_size, "initial_pool_size")?;
        let maximum = opt_size_arg(maximum_pool_size, "maximum_pool_size")?;
        check_256(initial, "initial_pool_size")?;
        check_256(maximum, "maximum_pool_size")?;
        if let (Some(i), Some(m)) = (initial, maximum) {
            if i > m {
                return Err(PyValueError::new_err(format!(
                    "initial_pool_size {i} exceeds maximum_pool_size {m}"
                )));
            }
        }
        let initial = match initial {
            Some(i) => i,
            None => {
                let d = default_initial_pool(&upstream)?;
                maximum.map_or(d, |m| d.min(m))
            }
        };
        let mut opts = PoolOptions::default().initial_pool_size(initial);
        if let Some(m) = maximum {
            opts = opts.maximum_pool_size(m);
        }
        let mr = PoolMemoryResource::new(upstream, opts).py_err()?;
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyPool { mr }))
    }

    /// Bytes the pool holds from its upstream.
    fn pool_size(&self) -> usize {
        self.mr.pool_size()
    }

    /// Bytes held free in the pool.
    fn free_bytes(&self) -> usize {
        self.mr.free_bytes()
    }

    /// The configured maximum, or None.
    fn maximum_pool_size(&self) -> Option<usize> {
        self.mr.maximum_pool_size()
    }
}

/// Equal blocks from upstream chunks (`rmm.mr.FixedSizeMemoryResource`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "FixedSizeMemoryResource")]
pub(crate) struct PyFixedSize {
    mr: FixedSizeMemoryResource,
}

#[pymethods]
impl PyFixedSize {
    #[new]
    #[pyo3(signature = (upstream_mr, block_size=None, blocks_to_preallocate=128))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        block_size: Option<&Bound<'_, PyAny>>,
        blocks_to_preallocate: i64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let block = opt_size_arg(block_size, "block_size")?.unwrap_or(1 << 20);
        if block == 0 {
            return Err(PyValueError::new_err("block_size must be positive"));
        }
        if blocks_to_preallocate <= 0 {
            return Err(PyValueError::new_err(format!(
                "blocks_to_preallocate must be positive, got {blocks_to_preallocate}"
            )));
        }
        let opts = FixedSizeOptions::default()
            .block_size(block)
            .blocks_to_preallocate(blocks_to_preallocate as usize);
        let mr = FixedSizeMemoryResource::new(upstream, opts).py_err()?;
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyFixedSize { mr }))
    }

    /// The block size in bytes.
    #[getter]
    fn block_size(&self) -> usize {
        self.mr.block_size()
    }

    /// Bytes held from the upstream.
    fn pool_size(&self) -> usize {
        self.mr.pool_size()
    }
}

/// Requests routed by size to bins (`rmm.mr.BinningMemoryResource`).
///
/// Bins are added before the resource is used: `add_bin` on a resource
/// that is already shared (set as a current resource, used as an
/// upstream, or holding live buffers) raises `RMMError`.
#[pyclass(extends = PyResource, subclass, module = "rmm_rs.mr", name = "_BinningMemoryResource")]
pub(crate) struct PyBinning {
    mr: Arc<BinningMemoryResource>,
    bins: Vec<(usize, Py<PyAny>)>,
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
        let py = slf.py();
        if size == 0 {
            return Err(PyValueError::new_err("allocation_size must be positive"));
        }
        let rounded = size.div_ceil(ALIGNMENT) * ALIGNMENT;
        if slf.borrow().bins.iter().any(|(s, _)| *s == rounded) {
            return Ok(());
        }
        let bin_obj: Py<PyAny> = match bin_resource {
            Some(r) if !r.is_none() => r.clone().unbind(),
            _ => {
                let upstream = slf
                    .borrow()
                    .as_super()
                    .upstream
                    .as_ref()
                    .map(|u| u.clone_ref(py))
                    .ok_or_else(|| PyValueError::new_err("binning resource without upstream"))?;
                py.get_type::<PyFixedSize>().call1((upstream, rounded))?.unbind()
            }
        };
        let bin_shared = resource_arg(bin_obj.bind(py), "bin_resource")?;
        let mut me = slf.borrow_mut();
        // Take the erased handle away so that the Arc is unique if nothing
        // else (a buffer, the registry, another resource) holds it.
        let held = me.as_super().inner.take();
        drop(held);
        let result = match Arc::get_mut(&mut me.mr) {
            Some(b) => b.add_bin(rounded, Some(bin_shared)).map_err(to_py),
            None => Err(crate::errors::RMMError::new_err(
                "BinningMemoryResource.add_bin: the resource is already in use (a current resource, an \
                 upstream, or live buffers hold it); add bins before using it",
            )),
        };
        let erased: Arc<dyn MemoryResource> = me.mr.clone();
        me.as_super().inner = Some(SharedResource::from_arc(erased));
        result?;
        let at = me.bins.partition_point(|(s, _)| *s < rounded);
        me.bins.insert(at, (rounded, bin_obj));
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
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
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
        Ok(base(SharedResource::from_arc(erased), Some(upstream_mr))
            .add_subclass(PyBinning { mr, bins: Vec::new() }))
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
    /// `bin_resource`, or by a new `FixedSizeMemoryResource` of that block
    /// size over the upstream.
    #[pyo3(signature = (allocation_size, bin_resource=None))]
    fn add_bin(
        slf: &Bound<'_, Self>,
        allocation_size: &Bound<'_, PyAny>,
        bin_resource: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let size = size_arg(allocation_size, "allocation_size")?;
        Self::add_bin_impl(slf, size, bin_resource)
    }

    /// The bin resources, by increasing size.
    #[getter]
    fn bin_mrs(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.bins.iter().map(|(_, r)| r.clone_ref(py)).collect()
    }

    /// The bin sizes, increasing.
    #[getter]
    fn bin_sizes(&self) -> Vec<usize> {
        self.mr.bin_sizes()
    }
}

/// Per-thread and per-stream arenas (`rmm.mr.ArenaMemoryResource`).
/// `dump_log_on_failure` is accepted for compatibility; failures are
/// reported through the debug log either way.
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "ArenaMemoryResource")]
pub(crate) struct PyArena {
    mr: ArenaMemoryResource,
}

#[pymethods]
impl PyArena {
    #[new]
    #[pyo3(signature = (upstream_mr, arena_size=None, dump_log_on_failure=false))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        arena_size: Option<&Bound<'_, PyAny>>,
        dump_log_on_failure: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let _ = dump_log_on_failure;
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let mut opts = ArenaOptions::default();
        match opt_size_arg(arena_size, "arena_size")? {
            Some(n) => opts = opts.arena_size(n),
            None => {
                if upstream.is_simulated() {
                    let d = default_initial_pool(&upstream)?;
                    if d == 0 {
                        return Err(PyValueError::new_err(
                            "arena_size is required over this simulated upstream",
                        ));
                    }
                    opts = opts.arena_size(d);
                }
            }
        }
        let mr = ArenaMemoryResource::new(upstream, opts).py_err()?;
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyArena { mr }))
    }

    /// The size of the arena's one upstream allocation.
    fn arena_size(&self) -> usize {
        self.mr.arena_size()
    }

    /// Returns free superblocks to the global arena.
    fn defragment(&self) {
        self.mr.defragment()
    }
}

// ---------------------------------------------------------------------------
// Adaptors

/// Caps the bytes outstanding (`rmm.mr.LimitingResourceAdaptor`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "LimitingResourceAdaptor")]
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
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let limit = size_arg(allocation_limit, "allocation_limit")?;
        let mr = LimitingAdaptor::new(upstream, limit);
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyLimiting { mr }))
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

/// A CSV log of every allocation and free (`rmm.mr.LoggingResourceAdaptor`),
/// in RMM's format (readable by `rmm_rs.replay_log` and RMM's replay tool).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "LoggingResourceAdaptor")]
pub(crate) struct PyLogging {
    mr: LoggingAdaptor,
}

#[pymethods]
impl PyLogging {
    #[new]
    #[pyo3(signature = (upstream_mr, log_file_name=None))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        log_file_name: Option<PathBuf>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let path = match log_file_name {
            Some(p) => p,
            None => match rmm::env::log_file() {
                Some(p) => p,
                None => {
                    return Err(PyValueError::new_err(
                        "RMM log file must be specified either using log_file_name= argument or \
                         RMM_LOG_FILE environment variable",
                    ))
                }
            },
        };
        let mr = LoggingAdaptor::to_file(upstream, &path, false).py_err()?;
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyLogging { mr }))
    }

    /// Writes buffered log lines to the file.
    fn flush(&self) -> PyResult<()> {
        self.mr.flush().py_err()
    }

    /// The log file's name.
    fn get_file_name(&self) -> Option<String> {
        self.mr.path().map(|p| p.to_string_lossy().into_owned())
    }
}

/// Counters as RMM's dict.
fn counts_dict<'py>(
    py: Python<'py>,
    bytes: rmm::mr::Counter,
    allocs: rmm::mr::Counter,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("current_bytes", bytes.value)?;
    d.set_item("current_count", allocs.value)?;
    d.set_item("peak_bytes", bytes.peak)?;
    d.set_item("peak_count", allocs.peak)?;
    d.set_item("total_bytes", bytes.total)?;
    d.set_item("total_count", allocs.total)?;
    Ok(d)
}

/// Byte and allocation counters with a stack of scopes
/// (`rmm.mr.StatisticsResourceAdaptor`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "StatisticsResourceAdaptor")]
pub(crate) struct PyStatistics {
    mr: StatisticsAdaptor,
}

#[pymethods]
impl PyStatistics {
    #[new]
    fn py_new(upstream_mr: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let mr = StatisticsAdaptor::new(upstream);
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyStatistics { mr }))
    }

    /// The counters of the current scope: `current_bytes`, `current_count`,
    /// `peak_bytes`, `peak_count`, `total_bytes`, `total_count`.
    #[getter]
    fn allocation_counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        counts_dict(py, self.mr.bytes_counter(), self.mr.allocations_counter())
    }

    /// Starts a new scope of zeroed counters; returns the counters of the
    /// scope below it.
    fn push_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (b, a) = self.mr.push_counters();
        counts_dict(py, b, a)
    }

    /// Ends the current scope (merged into the one below); returns its
    /// counters. `IndexError` when no scope was pushed.
    fn pop_counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (b, a) = self.mr.pop_counters().py_err()?;
        counts_dict(py, b, a)
    }

    /// Scopes pushed and not popped.
    #[getter]
    fn depth(&self) -> usize {
        self.mr.depth()
    }
}

/// Every outstanding allocation (`rmm.mr.TrackingResourceAdaptor`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "TrackingResourceAdaptor")]
pub(crate) struct PyTracking {
    mr: TrackingAdaptor,
}

#[pymethods]
impl PyTracking {
    #[new]
    #[pyo3(signature = (upstream_mr, capture_stacks=false))]
    fn py_new(upstream_mr: &Bound<'_, PyAny>, capture_stacks: bool) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let mr = TrackingAdaptor::new(upstream, capture_stacks);
        Ok(base(SharedResource::new(mr.clone()), Some(upstream_mr)).add_subclass(PyTracking { mr }))
    }

    /// Sum of the sizes of the outstanding allocations.
    fn get_allocated_bytes(&self) -> usize {
        self.mr.allocated_bytes()
    }

    /// One line per outstanding allocation (with its stack when captured).
    fn get_outstanding_allocations_str(&self) -> String {
        self.mr.outstanding_allocations_str()
    }

    /// Writes the outstanding allocations to the debug log (debug level).
    fn log_outstanding_allocations(&self) {
        self.mr.log_outstanding_allocations()
    }
}

/// Retries allocations when `callback(nbytes)` returns True after an
/// out-of-memory failure (`rmm.mr.FailureCallbackResourceAdaptor`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "FailureCallbackResourceAdaptor")]
pub(crate) struct PyFailureCallback;

#[pymethods]
impl PyFailureCallback {
    #[new]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        callback: Bound<'_, PyAny>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
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
                        log::error!("FailureCallbackResourceAdaptor: callback raised {e}; not retrying");
                        false
                    }
                },
            )
        });
        Ok(base(SharedResource::new(mr), Some(upstream_mr)).add_subclass(PyFailureCallback))
    }
}

/// Prefetches managed memory to the current device after allocation
/// (`rmm.mr.PrefetchResourceAdaptor`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "PrefetchResourceAdaptor")]
pub(crate) struct PyPrefetch;

#[pymethods]
impl PyPrefetch {
    #[new]
    fn py_new(upstream_mr: &Bound<'_, PyAny>) -> PyResult<PyClassInitializer<Self>> {
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let mr = PrefetchAdaptor::new(upstream);
        Ok(base(SharedResource::new(mr), Some(upstream_mr)).add_subclass(PyPrefetch))
    }
}

/// Alignments above 256 bytes for allocations of at least
/// `alignment_threshold` bytes (`rmm.mr.AlignedResourceAdaptor`).
#[pyclass(extends = PyResource, module = "rmm_rs.mr", name = "AlignedResourceAdaptor")]
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
        let upstream = resource_arg(upstream_mr, "upstream_mr")?;
        let threshold = opt_size_arg(alignment_threshold, "alignment_threshold")?.unwrap_or(65536);
        let mr = AlignedAdaptor::new(upstream, alignment, threshold).py_err()?;
        Ok(base(SharedResource::new(mr), Some(upstream_mr)).add_subclass(PyAligned))
    }
}

// ---------------------------------------------------------------------------
// The per-device registry (the Python side keeps the Python objects)

/// The current device (device 0 without a GPU, as the registry does).
#[pyfunction]
fn _current_device() -> i32 {
    rmm::device::current_device().map(|d| d.0).unwrap_or(0)
}

/// Makes `device` current on this thread.
#[pyfunction]
fn _set_current_device(device: i32) -> PyResult<()> {
    rmm::device::set_current_device(DeviceId(device)).py_err()
}

/// Sets the Rust registry's resource of `device` (what buffers without
/// `mr=` and the PyTorch hook use).
#[pyfunction]
fn _set_per_device_resource(device: i32, mr: &Bound<'_, PyAny>) -> PyResult<()> {
    if device < 0 {
        return Err(PyValueError::new_err(format!(
            "device must be non-negative, got {device}"
        )));
    }
    let shared = resource_arg(mr, "mr")?;
    rmm::mr::set_per_device_resource(DeviceId(device), shared).py_err()?;
    Ok(())
}

/// A Python object for the registry's initial resource of `device`.
#[pyfunction]
fn _initial_resource(py: Python<'_>, device: i32) -> PyResult<Py<PyAny>> {
    let shared = rmm::mr::per_device_resource(DeviceId(device));
    wrap_default(py, shared)
}

/// Gives `device` its initial (cuda) resource back in the Rust registry.
#[pyfunction]
fn _reset_per_device_resource(device: i32) {
    rmm::mr::reset_per_device_resource(DeviceId(device));
}

/// `(free, total)` bytes of the current device.
#[pyfunction]
fn available_device_memory() -> PyResult<(usize, usize)> {
    rmm::device::available_device_memory().py_err()
}

/// Number of GPUs (0 without a usable driver).
#[pyfunction]
fn device_count() -> usize {
    rmm::device::device_count()
}

/// Why no GPU can be used (the missing driver library, no device...), or
/// None when the driver loads and sees at least one GPU.
#[pyfunction]
fn gpu_unavailable_reason() -> Option<String> {
    match rmm::device::init_driver() {
        Err(e) => Some(e.to_string()),
        Ok(()) if rmm::device::device_count() == 0 => Some("the CUDA driver reports no GPU".into()),
        Ok(()) => None,
    }
}

/// Replays a memory-event log (ours or RMM's CSV) against `mr`; returns a
/// dict of what the replay measured.
#[pyfunction]
fn replay_log<'py>(
    py: Python<'py>,
    log_file_name: PathBuf,
    mr: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    let shared = resource_arg(mr, "mr")?;
    let file = std::fs::File::open(&log_file_name)
        .map_err(|e| to_py(Error::io(format!("cannot open {}", log_file_name.display()), &e)))?;
    let events = rmm_replay::parse_log(std::io::BufReader::new(file)).py_err()?;
    let report = py.detach(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            rmm_replay::replay(&events, &shared)
        }))
    });
    let report = report.map_err(|_| PyRuntimeError::new_err("the replay panicked (see the debug log)"))?;
    let d = PyDict::new(py);
    d.set_item("events", report.events)?;
    d.set_item("threads", report.threads)?;
    d.set_item("elapsed_s", report.elapsed.as_secs_f64())?;
    d.set_item("peak_bytes", report.peak_bytes)?;
    d.set_item("failed_allocations", report.failed_allocations)?;
    d.set_item("logged_failures", report.logged_failures)?;
    d.set_item("unmatched_frees", report.unmatched_frees)?;
    d.set_item("leaked_allocations", report.leaked_allocations)?;
    d.set_item("leaked_bytes", report.leaked_bytes)?;
    d.set_item(
        "fragmentation_at_peak",
        report.free_blocks_at_peak.map(|s| s.fragmentation()),
    )?;
    d.set_item("report", report.to_string())?;
    Ok(d)
}

/// Parses a memory-event log into a list of `(thread, action, pointer,
/// size, stream)` tuples (`action` is "allocate", "allocate failure" or
/// "free").
#[pyfunction]
fn read_log<'py>(py: Python<'py>, log_file_name: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let file = std::fs::File::open(&log_file_name)
        .map_err(|e| to_py(Error::io(format!("cannot open {}", log_file_name.display()), &e)))?;
    let events = rmm_replay::parse_log(std::io::BufReader::new(file)).py_err()?;
    let out = PyList::empty(py);
    for e in events {
        let action = match e.action {
            rmm_replay::Action::Allocate => "allocate",
            rmm_replay::Action::AllocateFailure => "allocate failure",
            rmm_replay::Action::Free => "free",
        };
        out.append((e.thread, action, e.pointer, e.size, e.stream))?;
    }
    Ok(out)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyResource>()?;
    m.add_class::<PyCuda>()?;
    m.add_class::<PyManaged>()?;
    m.add_class::<PyPinned>()?;
    m.add_class::<PyCudaAsync>()?;
    m.add_class::<PyCudaAsyncManaged>()?;
    m.add_class::<PySystem>()?;
    m.add_class::<PySamHeadroom>()?;
    m.add_class::<PySimulated>()?;
    m.add_class::<PyCallback>()?;
    m.add_class::<PyPool>()?;
    m.add_class::<PyFixedSize>()?;
    m.add_class::<PyBinning>()?;
    m.add_class::<PyArena>()?;
    m.add_class::<PyLimiting>()?;
    m.add_class::<PyLogging>()?;
    m.add_class::<PyStatistics>()?;
    m.add_class::<PyTracking>()?;
    m.add_class::<PyFailureCallback>()?;
    m.add_class::<PyPrefetch>()?;
    m.add_class::<PyAligned>()?;
    m.add_function(wrap_pyfunction!(_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_set_current_device, m)?)?;
    m.add_function(wrap_pyfunction!(_set_per_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(_initial_resource, m)?)?;
    m.add_function(wrap_pyfunction!(_reset_per_device_resource, m)?)?;
    m.add_function(wrap_pyfunction!(available_device_memory, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(replay_log, m)?)?;
    m.add_function(wrap_pyfunction!(read_log, m)?)?;
    Ok(())
}
