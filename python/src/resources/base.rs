//! The two base classes: `DeviceMemoryResource` (every resource) and
//! `UpstreamResourceAdaptor` (every adaptor and sub-allocator), and the
//! helpers the resource classes share.

use std::collections::HashMap;
use std::sync::Mutex;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use rmm::mr::{MemoryResource, SharedResource};
use rmm::{CudaStreamView, DevicePtr};

use crate::errors::{self, IntoPy};
use crate::sizes::size_arg;
use crate::stream::StreamParam;

/// The alignment every allocation of the Python API asks for.
pub(crate) const ALIGNMENT: usize = 256;

/// Base class of every memory resource (`rmm.mr.DeviceMemoryResource`).
///
/// `allocate(nbytes, stream)` returns an int pointer; `deallocate(ptr,
/// nbytes, stream)` frees it. Pointers handed out by `allocate` are
/// remembered per resource object, so freeing a pointer this object did
/// not hand out, freeing twice, or freeing with another size is a
/// `ValueError` instead of memory corruption.
#[pyclass(subclass, module = "rmm_rs.mr", name = "DeviceMemoryResource")]
pub(crate) struct PyResource {
    pub(super) inner: Option<SharedResource>,
    pub(super) upstream: Option<Py<PyAny>>,
    /// Live raw allocations made through `allocate`: address -> bytes.
    live: Mutex<HashMap<u64, usize>>,
}

impl PyResource {
    fn of(inner: Option<SharedResource>, upstream: Option<Py<PyAny>>) -> Self {
        PyResource {
            inner,
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

/// The initializer of a resource without upstream.
pub(super) fn base(inner: SharedResource) -> PyClassInitializer<PyResource> {
    PyClassInitializer::from(PyResource::of(Some(inner), None))
}

/// The initializer of an adaptor or sub-allocator over `upstream_mr`.
pub(super) fn over(inner: SharedResource, upstream_mr: &Bound<'_, PyAny>) -> PyClassInitializer<PyUpstream> {
    PyClassInitializer::from(PyResource::of(Some(inner), Some(upstream_mr.clone().unbind())))
        .add_subclass(PyUpstream)
}

/// Refuses sizes that are not multiples of 256 (`ConfigurationError`: a
/// `ValueError`, and a `RuntimeError` as RMM's error for them).
pub(super) fn check_256(py: Python<'_>, value: Option<usize>, what: &str) -> PyResult<()> {
    match value {
        Some(v) if !v.is_multiple_of(ALIGNMENT) => Err(errors::config_error(
            py,
            format!("{what} must be a multiple of 256 bytes, got {v}"),
        )),
        _ => Ok(()),
    }
}

/// Makes sure the driver is there, naming the missing library otherwise.
pub(super) fn need_driver() -> PyResult<()> {
    rmm::device::init_driver().py_err()?;
    if rmm::device::device_count() == 0 {
        return Err(errors::DriverUnavailableError::new_err(
            "no usable GPU: the CUDA driver reports no device",
        ));
    }
    Ok(())
}

/// Frees a raw pointer handed out by [`PyResource::allocate`] through the
/// trait's checked path (the resources log and ignore a bad free instead
/// of trusting it).
///
/// The caller has checked against the object's record of live pointers
/// that `ptr` came from `mr.allocate(bytes, ALIGNMENT, _)` and removed it
/// from that record, so it is freed once.
#[allow(unsafe_code)]
fn free_recorded(mr: &SharedResource, ptr: DevicePtr, bytes: usize, stream: CudaStreamView<'_>) {
    // SAFETY: see above: a live pointer of this resource, with the size and
    // alignment it was allocated with, freed exactly once. Work the caller
    // still has on the memory is the caller's to order before `stream`, as
    // RMM's Python API requires.
    unsafe { mr.deallocate(ptr, bytes, ALIGNMENT, stream) }
}

#[pymethods]
impl PyResource {
    /// A bare base-class object holds no resource; use a subclass.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn py_new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        PyResource::of(None, None)
    }

    /// Allocates `nbytes` on `stream`; returns the address as an int.
    #[pyo3(signature = (nbytes, stream=StreamParam::Omitted))]
    fn allocate(&self, py: Python<'_>, nbytes: &Bound<'_, PyAny>, stream: StreamParam<'_>) -> PyResult<u64> {
        let bytes = size_arg(nbytes, "nbytes")?;
        let stream = stream.resolve(py)?;
        let mr = self.shared()?;
        let view = stream.get().view();
        errors::clear_callback_error();
        let p = py
            .detach(|| mr.allocate(bytes, ALIGNMENT, view))
            .map_err(errors::alloc_to_py)?;
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
    #[pyo3(signature = (ptr, nbytes, stream=StreamParam::Omitted))]
    fn deallocate(
        &self,
        py: Python<'_>,
        ptr: u64,
        nbytes: &Bound<'_, PyAny>,
        stream: StreamParam<'_>,
    ) -> PyResult<()> {
        let bytes = size_arg(nbytes, "nbytes")?;
        let stream = stream.resolve(py)?;
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
        let view = stream.get().view();
        py.detach(|| free_recorded(&mr, DevicePtr::new(ptr), bytes, view));
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

    /// What the resource keeps for CUDA graphs captured through it (CuPy's
    /// `Stream.begin_capture()`, `torch.cuda.graph`): a dict with `pools`
    /// (graph-private pools held), `reserved_bytes` (their chunks),
    /// `live_bytes` (blocks of them handed out and not freed),
    /// `graphs_alive` (pools a graph or executable still uses),
    /// `deferred_frees` (frees of shared memory made on a capturing stream,
    /// done once the graph is gone) and `bad_frees` (frees of graph memory
    /// refused as misuse, logged); None for a
    /// resource without private pools (cuda_async: the driver's graph
    /// memory nodes). Asking also releases the pools of deleted graphs.
    fn graph_memory<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mr = self.shared()?;
        let Some(stats) = py.detach(|| mr.graph_memory()) else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("pools", stats.pools)?;
        d.set_item("reserved_bytes", stats.reserved_bytes)?;
        d.set_item("live_bytes", stats.live_bytes)?;
        d.set_item("graphs_alive", stats.graphs_alive)?;
        d.set_item("deferred_frees", stats.deferred_frees)?;
        d.set_item("bad_frees", stats.bad_frees)?;
        Ok(Some(d))
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let name = slf.get_type().name()?;
        Ok(format!("<rmm_rs.mr.{name}>"))
    }
}

/// Parent class of every resource that keeps an upstream resource alive
/// (`rmm.mr.UpstreamResourceAdaptor`): the sub-allocators and adaptors.
///
/// Built directly (as RMM allows) it only holds `upstream_mr`: it has no
/// resource of its own to allocate from.
#[pyclass(extends = PyResource, subclass, module = "rmm_rs.mr", name = "UpstreamResourceAdaptor")]
pub(crate) struct PyUpstream;

#[pymethods]
impl PyUpstream {
    /// `UpstreamResourceAdaptor(upstream_mr, *args, **kwargs)`: `upstream_mr`
    /// must be a `DeviceMemoryResource` (not None).
    #[new]
    #[pyo3(signature = (upstream_mr, *_args, **_kwargs))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        upstream_arg(upstream_mr)?;
        Ok(
            PyClassInitializer::from(PyResource::of(None, Some(upstream_mr.clone().unbind())))
                .add_subclass(PyUpstream),
        )
    }
}

/// The `SharedResource` of an `upstream_mr` argument, with RMM's error for
/// `None` (a plain `Exception` there; a `TypeError` here, which is one).
pub(super) fn upstream_arg(upstream_mr: &Bound<'_, PyAny>) -> PyResult<SharedResource> {
    if upstream_mr.is_none() {
        return Err(PyTypeError::new_err("Argument `upstream_mr` must not be None"));
    }
    resource_arg(upstream_mr, "upstream_mr")
}
