//! `rmm_rs.pylibrmm.stream.Stream`: a CUDA stream, ours or a foreign one
//! (CuPy, PyTorch, Numba, or anything with `__cuda_stream__`).

use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::exceptions::{PyNotImplementedError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;

use rmm::{CudaStream, CudaStreamView};

use crate::errors::IntoPy;

enum Kind {
    /// A stream made here; the `Arc` inside keeps it alive as long as any
    /// buffer ordered on it.
    Owned(CudaStream),
    /// A raw handle: the special streams (0 default, 1 legacy, 2 per-thread)
    /// or a foreign stream, whose Python object is kept alive here.
    Raw { handle: usize, owner: Option<Py<PyAny>> },
}

/// A CUDA stream (`rmm.pylibrmm.stream.Stream`).
///
/// `Stream()` makes a new stream; `Stream(obj)` wraps a CuPy, PyTorch or
/// Numba stream, or any object with `__cuda_stream__`, keeping `obj` alive.
#[pyclass(module = "rmm_rs.pylibrmm.stream", name = "Stream", frozen)]
pub(crate) struct PyStream {
    kind: Kind,
}

impl PyStream {
    /// A stream of a raw handle without an owner (the special streams).
    pub(crate) fn special(handle: usize) -> Self {
        PyStream {
            kind: Kind::Raw { handle, owner: None },
        }
    }

    /// The raw handle.
    pub(crate) fn handle(&self) -> usize {
        match &self.kind {
            Kind::Owned(s) => s.view().as_raw(),
            Kind::Raw { handle, .. } => *handle,
        }
    }

    /// A view of the stream, valid while `self` is.
    #[allow(unsafe_code)]
    pub(crate) fn view(&self) -> CudaStreamView<'_> {
        match &self.kind {
            Kind::Owned(s) => s.view(),
            // SAFETY: a raw handle is one of the special handles 0, 1, 2, or
            // came from a foreign stream object's `__cuda_stream__` (or
            // `.ptr` / `.cuda_stream` / `.handle`), which `owner` keeps
            // alive for as long as `self`; like RMM, the package trusts
            // such objects to name a live stream of the current context.
            // Buffers that store the view also keep this `Stream` alive.
            Kind::Raw { handle, .. } => unsafe { CudaStreamView::from_raw(*handle) },
        }
    }
}

impl PyStream {
    /// A `Stream` for an existing stream object: another `Stream` (same
    /// stream, same owner) or a foreign one.
    fn wrap(o: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(s) = o.cast::<PyStream>() {
            let s = s.get();
            return Ok(match &s.kind {
                Kind::Owned(c) => PyStream {
                    kind: Kind::Owned(c.clone()),
                },
                Kind::Raw { handle, owner } => PyStream {
                    kind: Kind::Raw {
                        handle: *handle,
                        owner: owner.as_ref().map(|p| p.clone_ref(o.py())),
                    },
                },
            });
        }
        match foreign_handle(o)? {
            Some(handle) => Ok(PyStream {
                kind: Kind::Raw {
                    handle,
                    owner: Some(o.clone().unbind()),
                },
            }),
            None => Err(PyTypeError::new_err(format!(
                "{} is not a CUDA stream (expected rmm_rs Stream, a CuPy/PyTorch/Numba stream \
                 or an object with __cuda_stream__)",
                o.get_type().name()?
            ))),
        }
    }

    /// A stream of `handle` that keeps `owner` (what owns the stream) alive.
    fn owned_by(handle: usize, owner: Py<PyAny>) -> Self {
        PyStream {
            kind: Kind::Raw {
                handle,
                owner: Some(owner),
            },
        }
    }
}

/// Stream creation flags (`rmm.pylibrmm.stream.CudaStreamFlags`):
/// `SYNC_DEFAULT` (0) synchronises with the legacy default stream,
/// `NON_BLOCKING` (1) does not. `int(flag)` gives the value.
#[pyclass(
    eq,
    eq_int,
    hash,
    frozen,
    module = "rmm_rs.pylibrmm.stream",
    name = "CudaStreamFlags"
)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub(crate) enum PyCudaStreamFlags {
    SYNC_DEFAULT = 0,
    NON_BLOCKING = 1,
}

/// The flags of a `flags` argument: a `CudaStreamFlags`, an int 0 or 1
/// (or an `IntEnum` of those), or None for `SYNC_DEFAULT`.
fn flags_arg(flags: Option<&Bound<'_, PyAny>>) -> PyResult<PyCudaStreamFlags> {
    let Some(f) = flags else {
        return Ok(PyCudaStreamFlags::SYNC_DEFAULT);
    };
    if let Ok(f) = f.cast::<PyCudaStreamFlags>() {
        return Ok(*f.get());
    }
    match f.extract::<i64>() {
        Ok(0) => Ok(PyCudaStreamFlags::SYNC_DEFAULT),
        Ok(1) => Ok(PyCudaStreamFlags::NON_BLOCKING),
        _ => Err(PyValueError::new_err(format!(
            "flags must be a CudaStreamFlags (SYNC_DEFAULT or NON_BLOCKING), not {f}"
        ))),
    }
}

/// A new stream with `flags`.
fn new_stream(flags: PyCudaStreamFlags) -> PyResult<CudaStream> {
    match flags {
        PyCudaStreamFlags::SYNC_DEFAULT => CudaStream::new(),
        PyCudaStreamFlags::NON_BLOCKING => CudaStream::non_blocking(),
    }
    .py_err()
}

/// A fixed ring of streams handed out round robin
/// (`rmm.pylibrmm.cuda_stream_pool.CudaStreamPool`). The `Stream`s it
/// hands out keep the pool, and so their stream, alive.
#[pyclass(frozen, module = "rmm_rs.pylibrmm.cuda_stream_pool", name = "CudaStreamPool")]
pub(crate) struct PyCudaStreamPool {
    streams: Vec<CudaStream>,
    next: AtomicUsize,
}

#[pymethods]
impl PyCudaStreamPool {
    /// `CudaStreamPool(pool_size=16, flags=CudaStreamFlags.SYNC_DEFAULT)`.
    #[new]
    #[pyo3(signature = (pool_size=16, flags=None))]
    fn py_new(py: Python<'_>, pool_size: usize, flags: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        if pool_size == 0 {
            return Err(crate::errors::RMMError::new_err(
                "Stream pool size must be greater than zero",
            ));
        }
        let flags = flags_arg(flags.filter(|f| !f.is_none()))?;
        let streams = py.detach(|| {
            (0..pool_size)
                .map(|_| new_stream(flags))
                .collect::<PyResult<Vec<_>>>()
        })?;
        Ok(PyCudaStreamPool {
            streams,
            next: AtomicUsize::new(0),
        })
    }

    /// The next stream, round robin, or stream number `stream_id %
    /// pool_size` when given.
    #[pyo3(signature = (stream_id=None))]
    fn get_stream(slf: &Bound<'_, Self>, stream_id: Option<usize>) -> PyResult<Py<PyStream>> {
        let me = slf.get();
        let i = match stream_id {
            Some(id) => id % me.streams.len(),
            None => me.next.fetch_add(1, Ordering::Relaxed) % me.streams.len(),
        };
        let handle = me.streams[i].view().as_raw();
        Py::new(
            slf.py(),
            PyStream::owned_by(handle, slf.clone().into_any().unbind()),
        )
    }

    /// Number of streams in the pool.
    fn get_pool_size(&self) -> usize {
        self.streams.len()
    }
}

/// The raw handle of a foreign stream object, if it looks like one.
fn foreign_handle(obj: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    let to_handle = |v: Bound<'_, PyAny>| -> PyResult<Option<usize>> {
        if v.is_none() {
            return Ok(Some(0));
        }
        if let Ok(t) = v.cast::<PyTuple>() {
            // The protocol: (version, handle); version 0 is the one there is.
            if t.len() == 2 {
                let version = t.get_item(0)?;
                if !version.eq(0)? {
                    return Err(PyNotImplementedError::new_err(format!(
                        "CUDA stream protocol: only version 0 is supported, got version: '{version}'"
                    )));
                }
                return Ok(Some(t.get_item(1)?.extract::<usize>()?));
            }
            return Err(PyTypeError::new_err(
                "__cuda_stream__ must return (version, handle)",
            ));
        }
        if let Ok(n) = v.extract::<usize>() {
            return Ok(Some(n));
        }
        // ctypes.c_void_p and friends.
        if v.hasattr("value")? {
            let inner = v.getattr("value")?;
            if inner.is_none() {
                return Ok(Some(0));
            }
            return Ok(Some(inner.extract::<usize>()?));
        }
        // cuda-python handles (CUstream) convert with int().
        if let Ok(n) = v.call_method0("__int__").and_then(|n| n.extract::<usize>()) {
            return Ok(Some(n));
        }
        Ok(None)
    };
    if obj.hasattr("__cuda_stream__")? {
        let attr = obj.getattr("__cuda_stream__")?;
        let value = if attr.is_callable() { attr.call0()? } else { attr };
        return to_handle(value);
    }
    // PyTorch: .cuda_stream; CuPy: .ptr; Numba: .handle.
    for name in ["cuda_stream", "ptr", "handle"] {
        if obj.hasattr(name)? {
            if let Some(h) = to_handle(obj.getattr(name)?)? {
                return Ok(Some(h));
            }
        }
    }
    Ok(None)
}

#[pymethods]
impl PyStream {
    /// `Stream(obj=None, flags=None)`: a new stream with `flags` (default
    /// `CudaStreamFlags.SYNC_DEFAULT`), or a wrapper of the stream `obj`
    /// (then `flags` must be None: `ValueError`).
    #[new]
    #[pyo3(signature = (obj=None, flags=None))]
    fn py_new(obj: Option<&Bound<'_, PyAny>>, flags: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let flags = flags.filter(|f| !f.is_none());
        match obj.filter(|o| !o.is_none()) {
            None => Ok(PyStream {
                kind: Kind::Owned(new_stream(flags_arg(flags)?)?),
            }),
            Some(o) => {
                if flags.is_some() {
                    return Err(PyValueError::new_err(
                        "flags may only be specified when obj is None; flags cannot be applied to an \
                         existing stream.",
                    ));
                }
                Self::wrap(o)
            }
        }
    }

    /// Waits for all work on the stream.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let handle = self.handle();
        let r = py.detach(|| {
            #[allow(unsafe_code)]
            // SAFETY: as in `view`: the handle names a live stream, kept
            // alive by `self`, which the caller's reference holds.
            let v = unsafe { CudaStreamView::from_raw(handle) };
            v.synchronize()
        });
        r.py_err()
    }

    /// True for the default stream (legacy or the null handle).
    fn is_default(&self) -> bool {
        self.handle() <= 1
    }

    /// The CUDA stream protocol: `(0, handle)`.
    fn __cuda_stream__(&self) -> (u32, usize) {
        (0, self.handle())
    }

    /// The raw handle (`cudaStream_t` as an int).
    #[getter]
    fn ptr(&self) -> usize {
        self.handle()
    }

    fn __int__(&self) -> usize {
        self.handle()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyStream>()
            .map(|o| o.get().handle() == self.handle())
            .unwrap_or(false)
    }

    fn __hash__(&self) -> u64 {
        self.handle() as u64
    }

    fn __repr__(&self) -> String {
        match self.handle() {
            0 => "Stream(default)".into(),
            1 => "Stream(legacy default)".into(),
            2 => "Stream(per-thread default)".into(),
            h => format!("Stream({h:#x})"),
        }
    }
}

/// A `stream=` parameter as RMM takes it: omitted (the default stream) or
/// a stream; an explicit `None` is a `TypeError`.
pub(crate) enum StreamParam<'py> {
    /// Not given: `DEFAULT_STREAM`.
    Omitted,
    /// What the caller passed.
    Given(Bound<'py, PyAny>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for StreamParam<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(StreamParam::Given(obj.to_owned()))
    }
}

impl StreamParam<'_> {
    /// The stream object: `DEFAULT_STREAM` when omitted, else as
    /// [`stream_arg`] takes it.
    ///
    /// # Errors
    /// `TypeError` for `None` ("stream argument cannot be None", as RMM)
    /// and for objects that are no stream.
    pub(crate) fn resolve(&self, py: Python<'_>) -> PyResult<Py<PyStream>> {
        match self {
            StreamParam::Omitted => default_stream(py),
            StreamParam::Given(o) if o.is_none() => Err(PyTypeError::new_err(
                "stream argument cannot be None: pass a Stream, or omit it for DEFAULT_STREAM",
            )),
            StreamParam::Given(o) => stream_arg(py, Some(o)),
        }
    }
}

/// A stream argument: `None` (the default stream) or anything `Stream()`
/// accepts.
pub(crate) fn stream_arg(py: Python<'_>, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyStream>> {
    match obj {
        None => default_stream(py),
        Some(o) if o.is_none() => default_stream(py),
        Some(o) => match o.cast::<PyStream>() {
            Ok(s) => Ok(s.clone().unbind()),
            Err(_) => Py::new(py, PyStream::wrap(o)?),
        },
    }
}

/// `DEFAULT_STREAM`, one object for the process.
fn default_stream(py: Python<'_>) -> PyResult<Py<PyStream>> {
    static DEFAULT: PyOnceLock<Py<PyStream>> = PyOnceLock::new();
    DEFAULT
        .get_or_try_init(py, || Py::new(py, PyStream::special(0)))
        .map(|s| s.clone_ref(py))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStream>()?;
    m.add_class::<PyCudaStreamFlags>()?;
    m.add_class::<PyCudaStreamPool>()?;
    m.add("DEFAULT_STREAM", default_stream(m.py())?)?;
    m.add("LEGACY_DEFAULT_STREAM", Py::new(m.py(), PyStream::special(1))?)?;
    m.add(
        "PER_THREAD_DEFAULT_STREAM",
        Py::new(m.py(), PyStream::special(2))?,
    )?;
    Ok(())
}
