//! `rmm_rs.DeviceBuffer`: untyped device memory from a resource, with host
//! copies, `__cuda_array_interface__` (version 3) and pickling.
//!
//! The copies between a buffer and host or device memory given by Python
//! objects live here; `pointer_copies` has RMM's functions over raw
//! addresses.

use pyo3::exceptions::{PyAttributeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyTuple};

use rmm::device::DeviceId;
use rmm::mr::MemoryResource;
use rmm::{CudaStreamView, DevicePtr};

use crate::errors::{self, IntoPy, RMMError};
use crate::resources::resource_arg;
use crate::sizes::size_arg;
use crate::stream::{stream_arg, PyStream, StreamParam};

/// Untyped, uninitialized device memory (`rmm.DeviceBuffer`).
#[pyclass(module = "rmm_rs", name = "DeviceBuffer")]
pub(crate) struct PyDeviceBuffer {
    buf: rmm::DeviceBuffer,
    /// The buffer's stream object (keeps a foreign stream's owner alive).
    stream: Py<PyStream>,
    /// The Python resource object, when one was given.
    mr: Option<Py<PyAny>>,
}

fn simulated_error(what: &str) -> PyErr {
    RMMError::new_err(format!(
        "{what}: this buffer is simulated memory (SimulatedMemoryResource): it has addresses but no \
         contents to copy"
    ))
}

/// Copies `n` bytes from `src` to `dst` on `stream`, after the work of
/// `buf`'s stream, with `buf`'s device current, and waits for the copy.
///
/// # Safety
/// `[src, src + n)` is readable and `[dst, dst + n)` writable memory
/// (device, managed, pinned or pageable host) for the whole call; neither
/// range is freed before the call returns (it synchronises `stream`).
#[allow(unsafe_code)]
unsafe fn copy_sync(
    buf: &rmm::DeviceBuffer,
    dst: u64,
    src: u64,
    n: usize,
    stream: CudaStreamView<'_>,
) -> rmm::Result<()> {
    if n == 0 {
        return Ok(());
    }
    // `access` makes the buffer's device current and joins `stream` with
    // the buffer's stream on both sides of the copy.
    buf.access("DeviceBuffer copy", stream, |s| {
        // SAFETY: forwarded contract; the synchronisation below ends the
        // copy before either range can be freed.
        unsafe { rmm::launch::memcpy_async(DevicePtr::new(dst), DevicePtr::new(src), n, s) }
    })?;
    stream.synchronize()
}

/// The `data` entry of an object's `__array_interface__` (NumPy and alike)
/// and whether the array is C-contiguous; None for objects without one.
fn array_interface<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<(Bound<'py, PyAny>, bool)>> {
    let Ok(iface) = obj.getattr("__array_interface__") else {
        return Ok(None);
    };
    let Ok(iface) = iface.cast_into::<PyDict>() else {
        return Ok(None);
    };
    let Some(data) = iface.get_item("data")? else {
        return Ok(None);
    };
    let contiguous = match iface.get_item("strides")? {
        Some(strides) if !strides.is_none() => obj.getattr("flags")?.getattr("c_contiguous")?.is_truthy()?,
        _ => true,
    };
    Ok(Some((data, contiguous)))
}

/// A host array's writable data pointer and byte size, for objects with a
/// C-contiguous `__array_interface__` (NumPy), else None.
fn host_array_target(obj: &Bound<'_, PyAny>) -> PyResult<Option<(u64, usize)>> {
    let Some((data, contiguous)) = array_interface(obj)? else {
        return Ok(None);
    };
    let (ptr, readonly): (u64, bool) = data.extract()?;
    if readonly {
        return Err(PyValueError::new_err(
            "copy_to_host: the target array is read-only",
        ));
    }
    if !contiguous {
        return Err(PyValueError::new_err(
            "copy_to_host: the target array is not C-contiguous",
        ));
    }
    let nbytes: usize = obj.getattr("nbytes")?.extract()?;
    Ok(Some((ptr, nbytes)))
}

/// A host array's data pointer and byte size, for objects with a
/// C-contiguous `__array_interface__` (NumPy), read-only ones included.
fn host_array_source(obj: &Bound<'_, PyAny>) -> PyResult<Option<(u64, usize)>> {
    let Some((data, contiguous)) = array_interface(obj)? else {
        return Ok(None);
    };
    let Ok((ptr, _readonly)) = data.extract::<(u64, bool)>() else {
        return Ok(None);
    };
    if !contiguous {
        return Ok(None); // copied through memoryview.tobytes() instead
    }
    let nbytes: usize = obj.getattr("nbytes")?.extract()?;
    Ok(Some((ptr, nbytes)))
}

/// Host bytes to copy from: a NumPy-like array in place (no host copy), or
/// the bytes of any other buffer-like object.
pub(crate) enum HostSource<'py> {
    Array {
        ptr: u64,
        len: usize,
        _owner: Bound<'py, PyAny>,
    },
    Bytes(Bound<'py, PyBytes>),
}

/// A host buffer as RMM's `unsigned char[::1]` takes it, as a flat
/// `memoryview`: one dimension of bytes (format `B`), C-contiguous, and
/// writable when `writable`.
///
/// # Errors
/// `TypeError` for objects without the buffer protocol (None included),
/// `ValueError` for other element types, more dimensions, strides or a
/// read-only target, as RMM's typed memoryviews raise.
pub(crate) fn byte_view<'py>(
    obj: &Bound<'py, PyAny>,
    what: &str,
    writable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mv = memoryview(obj, |ty| {
        format!("{what} has incorrect type (expected bytes-like, got {ty})")
    })?;
    let format: String = mv.getattr("format")?.extract()?;
    if format != "B" {
        return Err(PyValueError::new_err(format!(
            "{what}: Buffer dtype mismatch, expected 'unsigned char' but got format {format:?}"
        )));
    }
    let ndim: usize = mv.getattr("ndim")?.extract()?;
    if ndim != 1 {
        return Err(PyValueError::new_err(format!(
            "{what}: Buffer has wrong number of dimensions (expected 1, got {ndim})"
        )));
    }
    if !mv.getattr("c_contiguous")?.is_truthy()? {
        return Err(PyValueError::new_err(format!(
            "{what}: the buffer is not C-contiguous"
        )));
    }
    if writable && mv.getattr("readonly")?.is_truthy()? {
        return Err(PyValueError::new_err(format!("{what}: the buffer is read-only")));
    }
    Ok(mv)
}

impl HostSource<'_> {
    /// The bytes of `obj`, a one-dimensional contiguous buffer of bytes
    /// (see [`byte_view`]).
    pub(crate) fn of<'py>(obj: &Bound<'py, PyAny>) -> PyResult<HostSource<'py>> {
        byte_view(obj, "the host buffer", false)?;
        if !obj.is_instance_of::<PyBytes>() {
            if let Some((ptr, len)) = host_array_source(obj)? {
                return Ok(HostSource::Array {
                    ptr,
                    len,
                    _owner: obj.clone(),
                });
            }
        }
        Ok(HostSource::Bytes(host_bytes(obj)?))
    }

    /// `(address, length)`, valid while `self` lives.
    pub(crate) fn span(&self) -> (u64, usize) {
        match self {
            HostSource::Array { ptr, len, .. } => (*ptr, *len),
            HostSource::Bytes(b) => (b.as_bytes().as_ptr() as u64, b.as_bytes().len()),
        }
    }
}

/// `memoryview(obj)`; an object without the buffer protocol is a
/// `TypeError` whose text `message` makes from the object's type name.
fn memoryview<'py>(
    obj: &Bound<'py, PyAny>,
    message: impl FnOnce(&str) -> String,
) -> PyResult<Bound<'py, PyAny>> {
    obj.py()
        .import("builtins")?
        .getattr("memoryview")?
        .call1((obj,))
        .map_err(|_| {
            let ty = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            PyTypeError::new_err(message(&ty))
        })
}

/// The bytes of a host buffer-like object (bytes, bytearray, memoryview,
/// NumPy array, ...), as `bytes`.
fn host_bytes<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.clone());
    }
    let mv = memoryview(obj, |ty| format!("expected a bytes-like host buffer, not {ty}"))?;
    let flat = mv.call_method1("cast", ("B",))?;
    Ok(flat.call_method0("tobytes")?.cast_into::<PyBytes>()?)
}

/// `(ptr, nbytes, stream)` of a device array: a DeviceBuffer or an object
/// with a C-contiguous `__cuda_array_interface__`.
fn device_source(obj: &Bound<'_, PyAny>) -> PyResult<(u64, usize, Option<usize>)> {
    if let Ok(b) = obj.cast::<PyDeviceBuffer>() {
        let b = b.borrow();
        if b.buf.resource().is_simulated() && b.buf.size() > 0 {
            return Err(simulated_error("copy_from_device"));
        }
        return Ok((b.buf.data().addr(), b.buf.size(), Some(b.buf.stream().as_raw())));
    }
    let iface = obj.getattr("__cuda_array_interface__").map_err(|_| {
        PyTypeError::new_err(format!(
            "expected a DeviceBuffer or an object with __cuda_array_interface__, not {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })?;
    let iface = iface.cast_into::<PyDict>()?;
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        iface
            .get_item(k)?
            .ok_or_else(|| PyValueError::new_err(format!("__cuda_array_interface__ has no {k:?}")))
    };
    let (ptr, _ro): (u64, bool) = get("data")?.extract()?;
    let shape: Vec<usize> = get("shape")?.extract()?;
    let typestr: String = get("typestr")?.extract()?;
    let itemsize: usize = typestr
        .get(2..)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| PyValueError::new_err(format!("bad typestr {typestr:?}")))?;
    let count: usize = shape.iter().product();
    let nbytes = count * itemsize;
    if let Some(strides) = iface.get_item("strides")? {
        if !strides.is_none() {
            let strides: Vec<isize> = strides.extract()?;
            let mut expect = itemsize as isize;
            for (dim, stride) in shape.iter().zip(&strides).rev() {
                if *dim > 1 && *stride != expect {
                    return Err(PyValueError::new_err(
                        "copy_from_device: the source is not C-contiguous",
                    ));
                }
                expect *= *dim as isize;
            }
        }
    }
    let stream = match iface.get_item("stream")? {
        Some(s) if !s.is_none() => Some(s.extract::<usize>()?),
        _ => None,
    };
    Ok((ptr, nbytes, stream))
}

impl PyDeviceBuffer {
    fn check_real(&self, what: &str) -> PyResult<()> {
        if self.buf.resource().is_simulated() && self.buf.size() > 0 {
            return Err(simulated_error(what));
        }
        Ok(())
    }

    fn make(
        py: Python<'_>,
        size: usize,
        stream: Py<PyStream>,
        mr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (shared, mr_obj) = match mr {
            Some(m) if !m.is_none() => (resource_arg(m, "mr")?, Some(m.clone().unbind())),
            _ => (rmm::mr::current_device_resource(), None),
        };
        let view = stream.get().view();
        errors::clear_callback_error();
        // Without the GIL: a pool may wait for its lock, a callback resource
        // takes the GIL back itself.
        let buf = py
            .detach(|| rmm::DeviceBuffer::with_resource(size, view, shared))
            .map_err(errors::alloc_to_py)?;
        Ok(PyDeviceBuffer {
            buf,
            stream,
            mr: mr_obj,
        })
    }

    /// Copies host bytes into the start of the buffer.
    #[allow(unsafe_code)]
    fn write_host(&self, py: Python<'_>, src: &HostSource<'_>, stream: &PyStream) -> PyResult<()> {
        let (ptr, len) = src.span();
        if !self.copy_into_needed("copy_from_host", len)? {
            return Ok(());
        }
        let (buf, view) = (&self.buf, stream.view());
        py.detach(|| {
            // SAFETY: `src` (a bytes object or an array whose owner it
            // references, borrowed for the whole call) holds `len` readable
            // bytes at `ptr`; the destination is the first `len <= size`
            // bytes of the live buffer; `copy_sync` waits for the copy.
            unsafe { copy_sync(buf, buf.data().addr(), ptr, len, view) }
        })
        .py_err()
    }

    fn read_host(&self, py: Python<'_>, stream: &PyStream) -> PyResult<Vec<u8>> {
        self.check_real("copy_to_host")?;
        let (buf, view) = (&self.buf, stream.view());
        py.detach(|| buf.to_host(view)).py_err()
    }

    /// Checks a copy of `n` bytes into the start of the buffer: refuses
    /// bytes that do not fit and simulated memory; false when `n` is 0
    /// (nothing to copy).
    fn copy_into_needed(&self, what: &str, n: usize) -> PyResult<bool> {
        if n > self.buf.size() {
            return Err(PyValueError::new_err(format!(
                "{what}: {n} bytes do not fit into a buffer of {} bytes",
                self.buf.size()
            )));
        }
        if n == 0 {
            return Ok(false);
        }
        self.check_real(what)?;
        Ok(true)
    }

    /// Runs `op` (a resize or reserve) on `stream` without the GIL; the
    /// buffer's stream becomes `stream`.
    fn regrow(
        &mut self,
        py: Python<'_>,
        stream: StreamParam<'_>,
        op: impl FnOnce(&mut rmm::DeviceBuffer, CudaStreamView<'_>) -> rmm::Result<()> + Send,
    ) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let (buf, view) = (&mut self.buf, stream.get().view());
        errors::clear_callback_error();
        py.detach(|| op(buf, view)).map_err(errors::alloc_to_py)?;
        self.stream = stream;
        Ok(())
    }
}

/// A buffer of no bytes over a simulated resource: what a dropped
/// `DeviceBuffer` leaves behind while its memory is freed without the GIL.
fn placeholder() -> Option<rmm::DeviceBuffer> {
    static EMPTY: std::sync::OnceLock<rmm::mr::SimulatedMemoryResource> = std::sync::OnceLock::new();
    let sim = EMPTY
        .get_or_init(|| rmm::mr::SimulatedMemoryResource::new(0))
        .clone();
    rmm::DeviceBuffer::with_resource(0, CudaStreamView::DEFAULT, sim).ok()
}

impl Drop for PyDeviceBuffer {
    /// Frees the memory with the GIL released, as every allocation and
    /// copy does: a pool shared with another thread that is growing through
    /// a Python callback (which needs the GIL) is never waited for while
    /// holding it.
    fn drop(&mut self) {
        if self.buf.capacity() == 0 {
            return;
        }
        if let Some(empty) = placeholder() {
            let buf = std::mem::replace(&mut self.buf, empty);
            Python::attach(|py| py.detach(move || drop(buf)));
        }
    }
}

#[pymethods]
impl PyDeviceBuffer {
    /// `DeviceBuffer(*, ptr=None, size=0, stream=DEFAULT_STREAM, mr=None)`:
    /// `size` bytes from `mr` (default: the current device's resource);
    /// with `ptr`, a copy of the `size` bytes there (device or host).
    #[new]
    #[pyo3(signature = (*, ptr=None, size=None, stream=StreamParam::Omitted, mr=None))]
    fn py_new(
        py: Python<'_>,
        ptr: Option<u64>,
        size: Option<&Bound<'_, PyAny>>,
        stream: StreamParam<'_>,
        mr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let size = match size {
            Some(s) => size_arg(s, "size")?,
            None => 0,
        };
        let stream = stream.resolve(py)?;
        let me = Self::make(py, size, stream, mr)?;
        if let Some(src) = ptr.filter(|&p| p != 0) {
            if size > 0 {
                me.check_real("DeviceBuffer(ptr=...)")?;
                let (buf, view) = (&me.buf, me.stream.get().view());
                #[allow(unsafe_code)]
                let copied = py.detach(|| {
                    // SAFETY: as RMM's `DeviceBuffer(ptr=, size=)`, the caller
                    // names `size` readable bytes at `ptr` (device or host); the
                    // destination is the new buffer; `copy_sync` waits for the copy.
                    unsafe { copy_sync(buf, buf.data().addr(), src, size, view) }
                });
                copied.py_err()?;
            }
        }
        Ok(me)
    }

    /// Bytes in use.
    #[getter]
    fn size(&self) -> usize {
        self.buf.size()
    }

    /// Same as `size`.
    #[getter]
    fn nbytes(&self) -> usize {
        self.buf.size()
    }

    /// The device address as an int (0 for an empty buffer).
    #[getter]
    fn ptr(&self) -> u64 {
        self.buf.data().addr()
    }

    /// The device the buffer was made on.
    #[getter]
    fn device(&self) -> i32 {
        self.buf.device().0
    }

    /// The stream the buffer is ordered on.
    #[getter]
    fn stream(&self, py: Python<'_>) -> Py<PyStream> {
        self.stream.clone_ref(py)
    }

    /// The memory resource the buffer came from.
    #[getter]
    fn mr(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if let Some(m) = &self.mr {
            return Ok(m.clone_ref(py));
        }
        let reg = py.import("rmm_rs.mr")?.getattr("get_per_device_resource")?;
        Ok(reg.call1((self.buf.device().0,))?.unbind())
    }

    /// Bytes allocated.
    fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    fn __len__(&self) -> usize {
        self.buf.size()
    }

    /// The size in bytes, as RMM reports it (not the capacity).
    fn __sizeof__(&self) -> usize {
        self.buf.size()
    }

    /// The contents as `bytes` (`tobytes()` on the default stream).
    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.read_host(py, self.stream.get())?;
        Ok(PyBytes::new(py, &data))
    }

    /// A deep copy: a new buffer of the same size from the same resource,
    /// on the same stream, holding the same bytes (a simulated buffer's
    /// copy is a simulated buffer of the same size).
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        let stream = self.stream.clone_ref(py);
        let (buf, view) = (&self.buf, stream.get().view());
        let resource = buf.resource().clone();
        errors::clear_callback_error();
        let copy = py
            .detach(|| buf.try_clone_on(view, resource))
            .map_err(errors::alloc_to_py)?;
        if !copy.resource().is_simulated() {
            // As `DeviceBuffer(ptr=, size=)`: the copy is done when this returns.
            py.detach(|| view.synchronize()).py_err()?;
        }
        Ok(PyDeviceBuffer {
            buf: copy,
            stream,
            mr: self.mr.as_ref().map(|m| m.clone_ref(py)),
        })
    }

    /// Same as `copy()`.
    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        self.copy(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "<rmm_rs.DeviceBuffer size={} capacity={} ptr={:#x}>",
            self.buf.size(),
            self.buf.capacity(),
            self.buf.data().addr()
        )
    }

    /// Sets the size; beyond the capacity the memory is reallocated and the
    /// contents kept. The buffer's stream becomes `stream`.
    #[pyo3(signature = (new_size, stream=StreamParam::Omitted))]
    fn resize(
        &mut self,
        py: Python<'_>,
        new_size: &Bound<'_, PyAny>,
        stream: StreamParam<'_>,
    ) -> PyResult<()> {
        let n = size_arg(new_size, "new_size")?;
        self.regrow(py, stream, |buf, view| buf.resize(n, view))
    }

    /// Grows the capacity to at least `new_capacity`, keeping the contents.
    #[pyo3(signature = (new_capacity, stream=StreamParam::Omitted))]
    fn reserve(
        &mut self,
        py: Python<'_>,
        new_capacity: &Bound<'_, PyAny>,
        stream: StreamParam<'_>,
    ) -> PyResult<()> {
        let n = size_arg(new_capacity, "new_capacity")?;
        self.regrow(py, stream, |buf, view| buf.reserve(n, view))
    }

    /// Copies the buffer to host memory: into `ary` (a writable,
    /// one-dimensional, C-contiguous buffer of bytes of at least `size`
    /// bytes, as RMM takes it) or into a new NumPy uint8 array (a bytearray
    /// without NumPy); returns it.
    #[pyo3(signature = (ary=None, stream=StreamParam::Omitted))]
    fn copy_to_host<'py>(
        &self,
        py: Python<'py>,
        ary: Option<&Bound<'py, PyAny>>,
        stream: StreamParam<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let stream = stream.resolve(py)?;
        let n = self.buf.size();
        let target = match ary {
            Some(a) if !a.is_none() => {
                byte_view(a, "copy_to_host: ary", true)?;
                a.clone()
            }
            _ => match py.import("numpy") {
                // Bytes, as RMM returns (numpy's default dtype is float64).
                Ok(np) => np.call_method1("empty", ((n,), "uint8"))?.into_any(),
                Err(_) => PyByteArray::new(py, &vec![0u8; n]).into_any(),
            },
        };
        if let Some((ptr, nbytes)) = host_array_target(&target)? {
            if nbytes < n {
                return Err(PyValueError::new_err(format!(
                    "copy_to_host: the target holds {nbytes} bytes, the buffer {n}"
                )));
            }
            if n > 0 {
                self.check_real("copy_to_host")?;
                let (buf, view) = (&self.buf, stream.get().view());
                #[allow(unsafe_code)]
                let copied = py.detach(|| {
                    // SAFETY: `target` (referenced here for the whole call) is a
                    // writable, C-contiguous host array of at least `n` bytes at
                    // `ptr`; the source is the live buffer; `copy_sync` waits.
                    unsafe { copy_sync(buf, ptr, buf.data().addr(), n, view) }
                });
                copied.py_err()?;
            }
            return Ok(target);
        }
        let data = self.read_host(py, stream.get())?;
        let mv = py.import("builtins")?.getattr("memoryview")?.call1((&target,))?;
        let flat = mv.call_method1("cast", ("B",))?;
        let len: usize = flat.len()?;
        if len < n {
            return Err(PyValueError::new_err(format!(
                "copy_to_host: the target holds {len} bytes, the buffer {n}"
            )));
        }
        let slice = py.import("builtins")?.getattr("slice")?.call1((0, n))?;
        flat.set_item(slice, PyBytes::new(py, &data))?;
        Ok(target)
    }

    /// Copies host bytes (any bytes-like object of at most `size` bytes)
    /// to the start of the buffer.
    #[pyo3(signature = (ary, stream=StreamParam::Omitted))]
    fn copy_from_host(
        &self,
        py: Python<'_>,
        ary: &Bound<'_, PyAny>,
        stream: StreamParam<'_>,
    ) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let src = HostSource::of(ary)?;
        self.write_host(py, &src, stream.get())
    }

    /// Copies device memory (a DeviceBuffer or anything with a C-contiguous
    /// `__cuda_array_interface__`, at most `size` bytes) to the start of the
    /// buffer.
    #[pyo3(signature = (cuda_ary, stream=StreamParam::Omitted))]
    fn copy_from_device(
        &self,
        py: Python<'_>,
        cuda_ary: &Bound<'_, PyAny>,
        stream: StreamParam<'_>,
    ) -> PyResult<()> {
        let stream = stream.resolve(py)?;
        let (src, n, src_stream) = device_source(cuda_ary)?;
        if !self.copy_into_needed("copy_from_device", n)? {
            return Ok(());
        }
        let view = stream.get().view();
        if let Some(s) = src_stream.filter(|&s| s != view.as_raw()) {
            // The producer's pending work on the source comes first (the
            // CUDA Array Interface's `stream`): wait for it on the host, as
            // the copy itself is synchronous anyway.
            #[allow(unsafe_code)]
            // SAFETY: the producer's stream, named by its array interface
            // (or the source DeviceBuffer, which the caller's reference keeps
            // alive), is live while the producer's array is.
            let producer = unsafe { CudaStreamView::from_raw(s) };
            py.detach(|| producer.synchronize()).py_err()?;
        }
        let buf = &self.buf;
        #[allow(unsafe_code)]
        let copied = py.detach(|| {
            // SAFETY: `cuda_ary` (referenced for the whole call) describes `n`
            // readable contiguous bytes at `src`; the destination is the first
            // `n <= size` bytes of this buffer; `copy_sync` waits for the copy.
            unsafe { copy_sync(buf, buf.data().addr(), src, n, view) }
        });
        copied.py_err()
    }

    /// A new buffer holding a copy of the host bytes `b`.
    #[staticmethod]
    #[pyo3(signature = (b, stream=StreamParam::Omitted, mr=None))]
    pub(crate) fn to_device(
        py: Python<'_>,
        b: &Bound<'_, PyAny>,
        stream: StreamParam<'_>,
        mr: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let stream = stream.resolve(py)?;
        let src = HostSource::of(b)?;
        let me = Self::make(py, src.span().1, stream, mr)?;
        me.write_host(py, &src, me.stream.get())?;
        Ok(me)
    }

    /// The buffer's contents as `bytes`.
    #[pyo3(signature = (stream=StreamParam::Omitted))]
    fn tobytes<'py>(&self, py: Python<'py>, stream: StreamParam<'_>) -> PyResult<Bound<'py, PyBytes>> {
        let stream = stream.resolve(py)?;
        let data = self.read_host(py, stream.get())?;
        Ok(PyBytes::new(py, &data))
    }

    /// Prefetches managed memory to `device` (default: the current device)
    /// on `stream` (default: the buffer's); a no-op for other memory.
    #[pyo3(signature = (device=None, stream=None))]
    fn prefetch(
        &self,
        py: Python<'_>,
        device: Option<i32>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        if self.buf.resource().is_simulated() || self.buf.size() == 0 {
            return Ok(());
        }
        let stream = match stream {
            Some(s) if !s.is_none() => stream_arg(py, Some(s))?,
            _ => self.stream.clone_ref(py),
        };
        let device = match device {
            Some(d) => DeviceId(d),
            None => rmm::device::current_device().py_err()?,
        };
        rmm::device::prefetch(self.buf.data(), self.buf.size(), device, stream.get().view()).py_err()
    }

    /// The CUDA Array Interface, version 3 (`|u1`, one dimension; `stream`
    /// is the buffer's stream, 1 for the legacy default stream). Simulated
    /// buffers have none (no device memory behind their addresses).
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.buf.resource().is_simulated() {
            return Err(PyAttributeError::new_err(
                "a simulated DeviceBuffer has no __cuda_array_interface__ (no device memory behind it)",
            ));
        }
        let d = PyDict::new(py);
        d.set_item("data", (self.buf.data().addr(), false))?;
        d.set_item("shape", PyTuple::new(py, [self.buf.size()])?)?;
        d.set_item("strides", py.None())?;
        d.set_item("typestr", "|u1")?;
        d.set_item("version", 3)?;
        let s = self.buf.stream().as_raw();
        d.set_item("stream", if s == 0 { 1 } else { s })?;
        Ok(d)
    }

    /// Pickling copies the contents through the host, as RMM does:
    /// `to_device(copy_to_host())`, so that pickle protocol 5 carries the
    /// bytes out of band (a NumPy array).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyAny>,))> {
        let rebuild = py.import("rmm_rs._lib")?.getattr("to_device")?;
        let host = self.copy_to_host(py, None, StreamParam::Omitted).map_err(|e| {
            if self.buf.resource().is_simulated() {
                PyTypeError::new_err(format!("cannot pickle a simulated DeviceBuffer: {e}"))
            } else {
                e
            }
        })?;
        Ok((rebuild, (host,)))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDeviceBuffer>()?;
    Ok(())
}
