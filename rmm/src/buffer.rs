//! [`DeviceBuffer`]: untyped, uninitialized, stream-ordered device memory
//! (`rmm::device_buffer`).
//!
//! A buffer owns `capacity` bytes from a [`MemoryResource`] of which the first
//! `size` are in use. It remembers its resource, its stream (the stream of
//! the last allocation, copy or [`set_stream`](DeviceBuffer::set_stream),
//! kept alive by the buffer through a [`StreamRef`], so dropping the
//! caller's [`CudaStream`](crate::CudaStream) first is fine),
//! its alignment and the device that was current when it was made. Every
//! allocation, free and copy runs with that device current (through a
//! [`DeviceGuard`]), so a buffer made on device 0 may be dropped while device
//! 1 is current. Dropping frees the memory on the buffer's stream.
//!
//! # Streams
//! Calls that take a `stream` other than the buffer's own order the two with
//! events: the work on `stream` waits for the buffer's stream, and the
//! buffer's stream (where it will eventually be freed) waits for the work.
//! Calls that read into or write from host memory synchronise `stream`
//! before they return, so that borrowed host slices are never read or written
//! after the call.
//!
//! # Your own device work
//! [`DeviceBuffer::access`] (one buffer) and [`DeviceBuffer::access_all`]
//! (several, e.g. the two sides of a copy) run a closure that enqueues
//! device work of yours (a kernel launched through [`crate::launch`], a raw
//! copy or memset) with the same protocol the buffer's own methods use: the
//! buffer must have real memory, its device is made current, and the work's
//! stream is joined with the buffer's stream before and after. This is the
//! public way to order work on a container's memory; the event join itself
//! is not public.
//!
//! # Simulated resources
//! Over a resource whose [`is_simulated`](MemoryResource::is_simulated) is
//! true (no GPU behind it) the buffer never calls the driver: sizes,
//! capacities, `resize`/`reserve`/`shrink_to_fit` and deep copies work on
//! addresses alone (there are no contents to carry over), and anything that
//! must move real bytes to or from the host is an [`Error::Logic`].

use crate::align::{is_pow2, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::{current_device, DeviceGuard, DeviceId};
use crate::driver;
use crate::error::{Error, Result};
use crate::mr::{current_device_resource, MemoryResource, SharedResource};
use crate::pod::DevicePod;
use crate::ptr::DevicePtr;
use crate::stream::{run_ordered, stream_wait, CudaStreamView, StreamRef};

/// Largest value [`DeviceBuffer::write_value_async`] writes with memsets
/// (at most 16 calls); larger ones take a synchronous copy.
pub(crate) const MAX_ASYNC_VALUE_BYTES: usize = 64;

/// One memset of [`memset_runs`]: `count` elements of `width` bytes (1 or 4)
/// set to `value` at `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemsetRun {
    dst: u64,
    value: u32,
    width: usize,
    count: usize,
}

/// Splits a write of `src` to device address `dst` into memsets: single
/// bytes up to 4-byte alignment and at the tail, 4-byte words between, with
/// equal neighbours of the same width merged into one run.
fn memset_runs(dst: u64, src: &[u8]) -> Vec<MemsetRun> {
    let mut runs: Vec<MemsetRun> = Vec::new();
    let mut push = |dst: u64, value: u32, width: usize| match runs.last_mut() {
        Some(last)
            if last.width == width
                && last.value == value
                && last.dst + (last.count * width) as u64 == dst =>
        {
            last.count += 1
        }
        _ => runs.push(MemsetRun {
            dst,
            value,
            width,
            count: 1,
        }),
    };
    let mut i = 0;
    while i < src.len() {
        let at = dst + i as u64;
        if at.is_multiple_of(4) && src.len() - i >= 4 {
            let word = u32::from_ne_bytes([src[i], src[i + 1], src[i + 2], src[i + 3]]);
            push(at, word, 4);
            i += 4;
        } else {
            push(at, u32::from(src[i]), 1);
            i += 1;
        }
    }
    runs
}

/// Checks a buffer alignment: a power of two (else [`Error::InvalidArgument`])
/// no larger than 256 (else [`Error::BadAlloc`]).
fn check_alignment(alignment: usize) -> Result<()> {
    if !is_pow2(alignment) {
        return Err(Error::InvalidArgument(format!(
            "buffer alignment {alignment} is not a power of two"
        )));
    }
    if alignment > CUDA_ALLOCATION_ALIGNMENT {
        return Err(Error::BadAlloc(format!(
            "buffer alignment {alignment} exceeds {CUDA_ALLOCATION_ALIGNMENT}"
        )));
    }
    Ok(())
}

/// Untyped, uninitialized device memory (`rmm::device_buffer`).
///
/// Move only: a deep copy is explicit ([`try_clone_on`](Self::try_clone_on)),
/// because it needs a stream and a resource and can fail.
///
/// Thread safety: `Send + Sync`. Shared references only read metadata or
/// enqueue reads of the memory; mutation needs `&mut self`.
///
/// ```no_run
/// use rmm::{CudaStream, DeviceBuffer};
/// let s = CudaStream::new()?;
/// let mut buf = DeviceBuffer::from_host(b"hello device", s.view(), rmm::mr::current_device_resource())?;
/// buf.resize(20, s.view())?; // grows, keeps the 12 bytes
/// assert_eq!(&buf.to_host(s.view())?[..12], b"hello device");
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceBuffer {
    ptr: DevicePtr,
    size: usize,
    capacity: usize,
    alignment: usize,
    /// Keeps the stream alive (a clone of its `CudaStream`) until the
    /// memory has been freed on it.
    stream: StreamRef,
    resource: SharedResource,
    device: DeviceId,
}

impl DeviceBuffer {
    /// `size` uninitialized bytes from the current device's resource, on `stream`.
    ///
    /// # Errors
    /// The resource's allocation error; the driver's error when no device is usable.
    pub fn new(size: usize, stream: CudaStreamView) -> Result<Self> {
        Self::with_resource(size, stream, current_device_resource())
    }

    /// `size` uninitialized bytes from `resource`, on `stream`, 256-byte aligned.
    ///
    /// # Errors
    /// As [`with_alignment`](Self::with_alignment).
    pub fn with_resource<R: MemoryResource>(
        size: usize,
        stream: CudaStreamView,
        resource: R,
    ) -> Result<Self> {
        Self::with_alignment(size, CUDA_ALLOCATION_ALIGNMENT, stream, resource)
    }

    /// `size` uninitialized bytes aligned to `alignment` from `resource`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `alignment` is not a power of two,
    /// [`Error::BadAlloc`] when it exceeds 256; the resource's allocation
    /// error; the driver's error when the current device cannot be read
    /// (real resources only).
    ///
    /// ```
    /// use rmm::mr::SimulatedMemoryResource;
    /// use rmm::{CudaStreamView, DeviceBuffer, Error};
    /// let sim = SimulatedMemoryResource::new(1 << 20);
    /// let b = DeviceBuffer::with_alignment(100, 64, CudaStreamView::DEFAULT, sim.clone())?;
    /// assert_eq!((b.size(), b.capacity(), b.alignment()), (100, 100, 64));
    /// let e = DeviceBuffer::with_alignment(100, 512, CudaStreamView::DEFAULT, sim.clone());
    /// assert!(matches!(e, Err(Error::BadAlloc(_))));
    /// let e = DeviceBuffer::with_alignment(100, 48, CudaStreamView::DEFAULT, sim);
    /// assert!(matches!(e, Err(Error::InvalidArgument(_))));
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn with_alignment<R: MemoryResource>(
        size: usize,
        alignment: usize,
        stream: CudaStreamView,
        resource: R,
    ) -> Result<Self> {
        check_alignment(alignment)?;
        let resource = SharedResource::new(resource);
        let device = if resource.is_simulated() {
            resource.device().unwrap_or(DeviceId(0))
        } else {
            current_device()?
        };
        let mut buf = DeviceBuffer {
            ptr: DevicePtr::NULL,
            size: 0,
            capacity: 0,
            alignment,
            stream: StreamRef::from(stream),
            resource,
            device,
        };
        buf.ptr = buf.allocate(size, stream)?;
        buf.size = size;
        buf.capacity = size;
        Ok(buf)
    }

    /// A buffer holding a copy of `bytes` (host memory), from `resource`, on
    /// `stream`. Synchronises `stream` before returning.
    ///
    /// # Errors
    /// As [`with_resource`](Self::with_resource); the driver's copy error;
    /// [`Error::Logic`] for a non-empty copy into a simulated resource.
    pub fn from_host<R: MemoryResource>(bytes: &[u8], stream: CudaStreamView, resource: R) -> Result<Self> {
        let mut buf = Self::with_resource(bytes.len(), stream, resource)?;
        buf.copy_from_host(bytes, stream)?;
        Ok(buf)
    }

    /// A buffer holding a copy of `size` bytes at `src` (device, managed or
    /// host memory: the driver infers the direction), copied on `stream`
    /// without synchronising.
    ///
    /// # Safety
    /// `[src, src + size)` is memory the driver can copy from (device memory
    /// of any device, managed memory, pinned host memory, or pageable host
    /// memory) and stays valid and unchanged until the copy has run in
    /// `stream` order.
    ///
    /// # Errors
    /// As [`with_resource`](Self::with_resource); the driver's copy error;
    /// [`Error::Logic`] for a non-empty copy into a simulated resource.
    pub unsafe fn from_device<R: MemoryResource>(
        src: DevicePtr,
        size: usize,
        stream: CudaStreamView,
        resource: R,
    ) -> Result<Self> {
        let buf = Self::with_resource(size, stream, resource)?;
        // SAFETY: forwarded contract; `buf` was just made with `size` bytes.
        unsafe { Self::from_device_into(buf, src, size, stream) }
    }

    /// Copies `size` bytes at `src` into the fresh buffer `buf` (of exactly
    /// `size` bytes, ordered on `stream`).
    ///
    /// # Safety
    /// As [`from_device`](Self::from_device).
    pub(crate) unsafe fn from_device_into(
        buf: DeviceBuffer,
        src: DevicePtr,
        size: usize,
        stream: CudaStreamView,
    ) -> Result<Self> {
        if size > 0 {
            buf.check_range(0, size)?;
            buf.access("from_device", stream, |s| {
                // SAFETY: the destination lies inside the buffer (checked
                // above) and stays allocated until the copy has run (`access`
                // joins the buffer's stream after `s`); the caller guarantees
                // the source; `s` is a live view.
                unsafe { driver::memcpy_async(buf.ptr.addr(), src.addr(), size, s.handle()) }
            })?;
        }
        Ok(buf)
    }

    /// A deep copy of the first `size()` bytes into a new buffer from
    /// `resource`, copied on `stream` (ordered after this buffer's stream).
    /// The copy's capacity equals its size; the alignment is kept.
    ///
    /// # Errors
    /// The allocation error; the driver's copy or event error;
    /// [`Error::Logic`] when exactly one side is simulated and there are bytes
    /// to copy.
    pub fn try_clone_on<R: MemoryResource>(&self, stream: CudaStreamView, resource: R) -> Result<Self> {
        let resource = SharedResource::new(resource);
        // The copy is made on this buffer's device.
        let copy = {
            let _g = self.guard()?;
            Self::with_alignment(self.size, self.alignment, stream, resource)?
        };
        if self.size == 0 {
            return Ok(copy);
        }
        match (self.is_simulated(), copy.is_simulated()) {
            (true, true) => return Ok(copy),
            (false, false) => {}
            _ => {
                return Err(Error::Logic(
                    "try_clone_on: cannot copy bytes between simulated and real memory".into(),
                ))
            }
        }
        self.access("try_clone_on", stream, |s| {
            // SAFETY: both ranges are live allocations of at least `size`
            // bytes; the source outlives the copy because `access` makes its
            // stream wait for `s` before it can be freed, and the copy is
            // ordered on `s`, its own stream, a live view.
            unsafe { driver::memcpy_async(copy.ptr.addr(), self.ptr.addr(), self.size, s.handle()) }
        })?;
        Ok(copy)
    }

    /// Number of bytes in use.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Number of bytes allocated.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// True when `size() == 0`.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// The alignment every allocation of this buffer uses.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// Address of the first byte (null when the capacity is 0).
    pub fn data(&self) -> DevicePtr {
        self.ptr
    }

    /// The address as a cust pointer, for `launch!` arguments (`cust` feature).
    #[cfg(feature = "cust")]
    pub fn as_cust<T: cust::memory::DeviceCopy>(&self) -> cust::memory::DevicePointer<T> {
        self.ptr.as_cust()
    }

    /// The stream the buffer is ordered on (and will be freed on). The
    /// buffer keeps it alive.
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.stream.view()
    }

    /// The resource that owns the memory.
    pub fn resource(&self) -> &SharedResource {
        &self.resource
    }

    /// The device that was current when the buffer was made.
    pub fn device(&self) -> DeviceId {
        self.device
    }

    /// Makes `stream` the buffer's stream. The new stream first waits (on the
    /// GPU) for the work of the old one, so a later free on it is ordered
    /// after everything submitted so far.
    ///
    /// # Errors
    /// The driver's event error (the stream is then left unchanged).
    pub fn set_stream(&mut self, stream: CudaStreamView) -> Result<()> {
        if stream == self.stream.view() {
            return Ok(());
        }
        if !self.is_simulated() {
            let _g = self.guard()?;
            stream_wait(stream, self.stream.view())?;
        }
        self.stream = StreamRef::from(stream);
        Ok(())
    }

    /// Runs `work`, which enqueues device work of yours on `stream` over this
    /// buffer's memory (a kernel launched through [`crate::launch`], a raw
    /// copy or memset), inside the protocol the buffer's own methods use:
    ///
    /// 1. a buffer over a simulated resource is refused before any driver
    ///    call ([`Error::Logic`] naming `what`): there is no memory behind
    ///    its address;
    /// 2. the buffer's device is made current for the call ([`DeviceGuard`]),
    ///    so `work` launches into the right context;
    /// 3. `stream` waits (an event, when the two differ) for the work already
    ///    queued on the buffer's stream, so `work` sees its writes;
    /// 4. `work` runs with `stream` and enqueues;
    /// 5. the buffer's stream waits for `stream`, so the buffer's later work,
    ///    and its free, come after `work`'s. This step also runs when `work`
    ///    fails part way.
    ///
    /// Use [`data`](Self::data) and [`size`](Self::size) for the address and
    /// extent; a [`DeviceUvector`](crate::DeviceUvector) (and a
    /// [`DeviceScalar`](crate::DeviceScalar) through its vector) reaches this
    /// method through [`as_buffer`](crate::DeviceUvector::as_buffer). The buffer stays borrowed during the call, so it cannot be
    /// resized or dropped while `work` enqueues, and step 5 keeps the memory
    /// allocated until the enqueued work has run: what a launch inside
    /// `work` still promises in its `unsafe` block is only what the kernel
    /// itself does (parameter types, the range it touches, and, for writes,
    /// that no other work uses the memory concurrently, e.g. because the
    /// caller holds the buffer or its container by `&mut`).
    ///
    /// An empty buffer is not special: skip it before calling where zero
    /// elements must not touch the driver.
    ///
    /// Thread safety: callable from any thread; the device switch is per
    /// thread and undone before returning.
    ///
    /// # Errors
    /// [`Error::Logic`] for simulated memory; the driver's error when the
    /// device cannot be made current or an event fails; `work`'s error.
    ///
    /// ```
    /// use rmm::mr::SimulatedMemoryResource;
    /// use rmm::{CudaStreamView, DeviceBuffer, Error};
    /// // Runs without a GPU: simulated memory is refused before any driver call.
    /// let sim = SimulatedMemoryResource::new(1 << 20);
    /// let buf = DeviceBuffer::with_resource(64, CudaStreamView::DEFAULT, sim)?;
    /// let e = buf.access("my_kernel", CudaStreamView::DEFAULT, |_| Ok(())).unwrap_err();
    /// assert!(matches!(e, Error::Logic(m) if m.contains("my_kernel")));
    /// # Ok::<(), rmm::Error>(())
    /// ```
    ///
    /// A kernel `scale(data: *mut f32, n: u64)` and a memset on a worker
    /// stream, over a buffer that lives on another stream:
    ///
    /// ```no_run
    /// use rmm::launch::{memset_async, Function};
    /// use rmm::{CudaStream, DeviceBuffer};
    /// # fn demo(scale: Function) -> rmm::Result<()> {
    /// let (owner, worker) = (CudaStream::new()?, CudaStream::new()?);
    /// let n = 1024usize;
    /// let buf = DeviceBuffer::new(n * 4, owner.view())?;
    /// buf.access("scale", worker.view(), |stream| {
    ///     // SAFETY: the buffer's `n * 4` bytes are 4-byte aligned device
    ///     // memory, kept allocated by `access` until the memset has run.
    ///     unsafe { memset_async(buf.data(), 1.0f32.to_bits(), 4, n, stream)? };
    ///     let (mut data, mut count) = (buf.data().addr(), n as u64);
    ///     let mut params = [(&mut data as *mut u64).cast(), (&mut count as *mut u64).cast()];
    ///     // SAFETY: the parameters match the kernel's `(*mut f32, u64)`; it
    ///     // touches the `n` floats at `data`, ordered as above.
    ///     unsafe { scale.launch((n.div_ceil(256) as u32, 1, 1), (256, 1, 1), 0, stream, &mut params) }
    /// })?;
    /// // Work on the buffer's own stream runs after the kernel.
    /// let bytes = buf.to_host(owner.view())?;
    /// # Ok(()) }
    /// ```
    pub fn access<R>(
        &self,
        what: &str,
        stream: CudaStreamView<'_>,
        work: impl FnOnce(CudaStreamView<'_>) -> Result<R>,
    ) -> Result<R> {
        Self::access_all(what, &[self], stream, work)
    }

    /// [`access`](Self::access) for work over several buffers at once, such
    /// as the two sides of a copy: every buffer is checked, their device is
    /// made current once, `stream` waits for each buffer's stream before
    /// `work` and each buffer's stream waits for `stream` after it (a stream
    /// shared by several buffers is joined once). With no buffers `work`
    /// just runs.
    ///
    /// # Errors
    /// [`Error::Logic`] naming `what` when a buffer is simulated or the
    /// buffers live on different devices (device work runs on one; copy
    /// across devices with [`try_clone_on`](Self::try_clone_on) or
    /// [`crate::peer`]); otherwise as [`access`](Self::access).
    ///
    /// ```no_run
    /// use rmm::launch::memcpy_async;
    /// use rmm::{CudaStream, DeviceBuffer};
    /// let s = CudaStream::new()?;
    /// let src = DeviceBuffer::from_host(&[7u8; 256], s.view(), rmm::mr::current_device_resource())?;
    /// let mut dst = DeviceBuffer::new(256, s.view())?;
    /// DeviceBuffer::access_all("copy", &[&dst, &src], s.view(), |stream| {
    ///     // SAFETY: both buffers hold 256 bytes, are distinct, and stay
    ///     // allocated until the copy has run (`access_all` joins their streams).
    ///     unsafe { memcpy_async(dst.data(), src.data(), 256, stream) }
    /// })?;
    /// assert_eq!(dst.to_host(s.view())?, [7u8; 256]);
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn access_all<R>(
        what: &str,
        buffers: &[&DeviceBuffer],
        stream: CudaStreamView<'_>,
        work: impl FnOnce(CudaStreamView<'_>) -> Result<R>,
    ) -> Result<R> {
        let Some(first) = buffers.first() else {
            return work(stream);
        };
        for b in buffers {
            b.check_real(what)?;
        }
        if let Some(other) = buffers.iter().find(|b| b.device != first.device) {
            return Err(Error::Logic(format!(
                "{what}: the buffers live on {} and {}; device work runs on one device \
                 (copy across devices with DeviceBuffer::try_clone_on or rmm::peer)",
                first.device, other.device
            )));
        }
        let _g = DeviceGuard::new(first.device)?;
        run_ordered(what, stream, buffers.iter().map(|b| b.stream()), work)
    }

    /// Sets the size to `new_size` bytes and the stream to `stream`. Within
    /// the capacity only the size changes (the memory stays); beyond it a new
    /// allocation of exactly `new_size` bytes receives the old contents and
    /// the old memory is freed on `stream`. New bytes are uninitialized.
    ///
    /// # Errors
    /// The allocation, copy or event error; the buffer is then unchanged
    /// except possibly for its stream.
    ///
    /// ```
    /// use rmm::{mr::SimulatedMemoryResource, CudaStreamView, DeviceBuffer};
    /// let s = CudaStreamView::DEFAULT;
    /// let mut b = DeviceBuffer::with_resource(100, s, SimulatedMemoryResource::new(1 << 20))?;
    /// b.resize(50, s)?;
    /// assert_eq!((b.size(), b.capacity()), (50, 100));
    /// b.resize(300, s)?;
    /// assert_eq!((b.size(), b.capacity()), (300, 300));
    /// b.shrink_to_fit(s)?;
    /// b.resize(0, s)?;
    /// b.shrink_to_fit(s)?;
    /// assert_eq!((b.size(), b.capacity()), (0, 0));
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn resize(&mut self, new_size: usize, stream: CudaStreamView) -> Result<()> {
        self.set_stream(stream)?;
        if new_size <= self.capacity {
            self.size = new_size;
            return Ok(());
        }
        self.reallocate(new_size)?;
        self.size = new_size;
        Ok(())
    }

    /// Grows the capacity to at least `new_capacity` bytes (a no-op when it
    /// is already that large), keeping the contents; sets the stream.
    ///
    /// # Errors
    /// As [`resize`](Self::resize).
    pub fn reserve(&mut self, new_capacity: usize, stream: CudaStreamView) -> Result<()> {
        self.set_stream(stream)?;
        if new_capacity > self.capacity {
            self.reallocate(new_capacity)?;
        }
        Ok(())
    }

    /// Reallocates so that the capacity equals the size, keeping the
    /// contents; sets the stream.
    ///
    /// # Errors
    /// As [`resize`](Self::resize).
    pub fn shrink_to_fit(&mut self, stream: CudaStreamView) -> Result<()> {
        self.set_stream(stream)?;
        if self.size != self.capacity {
            self.reallocate(self.size)?;
        }
        Ok(())
    }

    /// Copies the buffer's bytes to a new host vector on `stream` (ordered
    /// after the buffer's stream) and synchronises `stream`.
    ///
    /// # Errors
    /// The driver's copy, event or synchronisation error; [`Error::Logic`]
    /// for a non-empty simulated buffer.
    pub fn to_host(&self, stream: CudaStreamView) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.size];
        // SAFETY: `out` is `size` writable bytes.
        unsafe { self.read_raw(0, out.as_mut_ptr(), self.size, stream)? };
        Ok(out)
    }

    /// Overwrites the buffer with `bytes` (which must have exactly `size()`
    /// bytes) on `stream` and synchronises `stream`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] on a length mismatch; as [`to_host`](Self::to_host).
    pub fn copy_from_host(&mut self, bytes: &[u8], stream: CudaStreamView) -> Result<()> {
        if bytes.len() != self.size {
            return Err(Error::InvalidArgument(format!(
                "copy_from_host: {} host bytes into a buffer of {} bytes",
                bytes.len(),
                self.size
            )));
        }
        // SAFETY: `bytes` is `size` readable bytes.
        unsafe { self.write_raw(0, bytes.as_ptr(), bytes.len(), stream) }
    }

    /// Gives the raw parts up without freeing: `(ptr, size, capacity,
    /// alignment, stream, resource, device)`. The caller becomes responsible
    /// for freeing `ptr` (`capacity` bytes, `alignment`) through `resource`.
    pub fn into_raw_parts(self) -> RawBufferParts {
        let me = std::mem::ManuallyDrop::new(self);
        RawBufferParts {
            ptr: me.ptr,
            size: me.size,
            capacity: me.capacity,
            alignment: me.alignment,
            // SAFETY: `me` is never dropped, so the stream and resource
            // handles are moved out exactly once.
            stream: unsafe { std::ptr::read(&me.stream) },
            // SAFETY: as above.
            resource: unsafe { std::ptr::read(&me.resource) },
            device: me.device,
        }
    }

    /// Rebuilds a buffer from [`into_raw_parts`](Self::into_raw_parts).
    ///
    /// # Safety
    /// The parts describe live memory owned by nobody else: `ptr` came from
    /// `resource.allocate(capacity, alignment, _)` on `device` (or is null
    /// with `capacity == 0`), `size <= capacity`, `alignment` is a supported
    /// power of two, and `stream` is a stream of `device` (live: a
    /// [`StreamRef`] made from a safe view keeps its stream alive).
    pub unsafe fn from_raw_parts(parts: RawBufferParts) -> Self {
        DeviceBuffer {
            ptr: parts.ptr,
            size: parts.size,
            capacity: parts.capacity,
            alignment: parts.alignment,
            stream: parts.stream,
            resource: parts.resource,
            device: parts.device,
        }
    }

    // -- crate-internal helpers used by the typed containers ---------------

    /// True when the memory is simulated (no driver calls are ever made).
    pub(crate) fn is_simulated(&self) -> bool {
        self.resource.is_simulated()
    }

    /// Makes the buffer's device current for the guard's lifetime (nothing
    /// for simulated memory).
    pub(crate) fn guard(&self) -> Result<Option<DeviceGuard>> {
        if self.is_simulated() {
            Ok(None)
        } else {
            DeviceGuard::new(self.device).map(Some)
        }
    }

    fn check_real(&self, what: &str) -> Result<()> {
        if self.is_simulated() {
            Err(Error::Logic(format!(
                "{what}: simulated memory has no contents to read or write"
            )))
        } else {
            Ok(())
        }
    }

    /// Copies `bytes` bytes between byte `offset` of the buffer and host
    /// address `host` (to the host when `to_host`) on `stream`, then
    /// synchronises `stream`. The host-copy form of
    /// [`access`](Self::access): checked, with the device current and
    /// `stream` waiting for the buffer's stream, but synchronised instead of
    /// joined back (host memory is involved, so the copy must be complete
    /// before returning, which also orders it before any later free). Zero
    /// bytes never call the driver.
    ///
    /// # Safety
    /// `host` is valid for `bytes` writes (`to_host`) or reads.
    unsafe fn host_copy(
        &self,
        offset: usize,
        host: u64,
        bytes: usize,
        to_host: bool,
        stream: CudaStreamView,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.check_range(offset, bytes)?;
        self.check_real(if to_host { "copy to host" } else { "copy from host" })?;
        let device = self.ptr.offset(offset).addr();
        let (dst, src) = if to_host { (host, device) } else { (device, host) };
        let _g = DeviceGuard::new(self.device)?;
        stream_wait(stream, self.stream.view())?;
        // SAFETY: the device side lies inside the allocation (checked above);
        // the caller guarantees the host side; the stream is synchronised
        // before return, so neither is used afterwards; `stream` is a live view.
        unsafe { driver::memcpy_async(dst, src, bytes, stream.handle())? };
        stream.synchronize()
    }

    /// Copies `bytes` bytes at byte `offset` of the buffer to host `dst` on
    /// `stream` and synchronises `stream`. Zero bytes never call the driver.
    ///
    /// # Safety
    /// `dst` is valid for `bytes` writes.
    pub(crate) unsafe fn read_raw(
        &self,
        offset: usize,
        dst: *mut u8,
        bytes: usize,
        stream: CudaStreamView,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.host_copy(offset, dst as u64, bytes, true, stream) }
    }

    /// Copies `bytes` bytes from host `src` to byte `offset` of the buffer on
    /// `stream` and synchronises `stream`. Zero bytes never call the driver.
    ///
    /// # Safety
    /// `src` is valid for `bytes` reads.
    pub(crate) unsafe fn write_raw(
        &self,
        offset: usize,
        src: *const u8,
        bytes: usize,
        stream: CudaStreamView,
    ) -> Result<()> {
        // SAFETY: forwarded contract.
        unsafe { self.host_copy(offset, src as u64, bytes, false, stream) }
    }

    /// `cuMemsetD{8,16,32}Async` of `count` elements of `width` bytes at byte
    /// `offset`, on `stream`, ordered both ways with the buffer's stream.
    pub(crate) fn memset(
        &self,
        offset: usize,
        value: u32,
        width: usize,
        count: usize,
        stream: CudaStreamView,
    ) -> Result<()> {
        let bytes = width
            .checked_mul(count)
            .ok_or_else(|| Error::InvalidArgument("memset: size overflows".into()))?;
        if bytes == 0 {
            return Ok(());
        }
        self.check_range(offset, bytes)?;
        if !self.ptr.offset(offset).is_aligned(width) {
            return Err(Error::InvalidArgument(format!(
                "memset: offset {offset} is not aligned to {width} bytes"
            )));
        }
        self.access("memset", stream, |s| {
            // SAFETY: the range lies inside the allocation (checked above),
            // which outlives the memset because `access` makes its stream
            // wait for `s`, a live view.
            unsafe { driver::memset_async(self.ptr.offset(offset).addr(), value, width, count, s.handle()) }
        })
    }

    /// Writes `value` to byte `offset` in `stream` order without blocking
    /// and without host memory that outlives the call: the bytes travel as
    /// memset arguments (`cuMemsetD32Async` for aligned 4-byte words, runs of
    /// equal words in one call, `cuMemsetD8Async` for the rest). Values over
    /// [`MAX_ASYNC_VALUE_BYTES`] are copied and the stream is synchronised.
    /// No host function is enqueued: host functions took part in every
    /// two-GPU stall of the container tests (repro/README.md).
    /// Ordered both ways with the buffer's stream.
    pub(crate) fn write_value_async<T: DevicePod>(
        &self,
        offset: usize,
        value: T,
        stream: CudaStreamView,
    ) -> Result<()> {
        let bytes = std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        if bytes > MAX_ASYNC_VALUE_BYTES {
            // SAFETY: `value` lives on this frame for the whole call, and
            // write_raw synchronises the stream before returning.
            return unsafe { self.write_raw(offset, (&value as *const T).cast(), bytes, stream) };
        }
        self.check_range(offset, bytes)?;
        // SAFETY: `T: DevicePod` has no padding, so all its bytes are
        // initialised; the slice borrows `value` for this call only.
        let src = unsafe { std::slice::from_raw_parts((&value as *const T).cast::<u8>(), bytes) };
        let runs = memset_runs(self.ptr.offset(offset).addr(), src);
        self.access("set element", stream, |s| {
            for run in runs {
                // SAFETY: every run lies inside `offset..offset + bytes`,
                // which is inside the allocation (checked above); the
                // allocation outlives the memsets because `access` makes its
                // stream wait for `s`, a live view.
                unsafe { driver::memset_async(run.dst, run.value, run.width, run.count, s.handle())? };
            }
            Ok(())
        })
    }

    fn check_range(&self, offset: usize, bytes: usize) -> Result<()> {
        match offset.checked_add(bytes) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::OutOfRange(format!(
                "bytes {offset}..{offset}+{bytes} of a buffer of {} bytes",
                self.size
            ))),
        }
    }

    /// Allocates `bytes` from the resource with the buffer's device current.
    fn allocate(&self, bytes: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        let _g = self.guard()?;
        self.resource.allocate(bytes, self.alignment, stream)
    }

    /// Replaces the allocation by one of `new_capacity` bytes holding the
    /// first `min(size, new_capacity)` bytes; frees the old one on the
    /// buffer's stream.
    fn reallocate(&mut self, new_capacity: usize) -> Result<()> {
        let new_ptr = self.allocate(new_capacity, self.stream.view())?;
        let keep = self.size.min(new_capacity);
        if keep > 0 && !self.is_simulated() {
            let copied = self.guard().and_then(|_g| {
                // SAFETY: both ranges are live allocations of at least `keep`
                // bytes, ordered on the buffer's stream, which its StreamRef
                // keeps alive.
                unsafe {
                    driver::memcpy_async(new_ptr.addr(), self.ptr.addr(), keep, self.stream.view().handle())
                }
            });
            if let Err(e) = copied {
                // SAFETY: allocated just above with these arguments; the
                // failed copy enqueued no work that uses it.
                unsafe { self.free(new_ptr, new_capacity) };
                return Err(e);
            }
        }
        let (old_ptr, old_capacity) = (self.ptr, self.capacity);
        self.ptr = new_ptr;
        self.capacity = new_capacity;
        // SAFETY: the old allocation is no longer referenced; its last use
        // (the copy) is ordered before the free on the same stream.
        unsafe { self.free(old_ptr, old_capacity) };
        Ok(())
    }

    /// Frees `ptr` (`capacity` bytes) on the buffer's stream with its device
    /// current. Never panics; errors are logged.
    ///
    /// # Safety
    /// `ptr` came from this buffer's resource with `capacity` bytes and the
    /// buffer's alignment and is not used by work ordered after this call.
    unsafe fn free(&self, ptr: DevicePtr, capacity: usize) {
        if capacity == 0 || ptr.is_null() {
            return;
        }
        let guard = match self.guard() {
            Ok(g) => g,
            Err(e) => {
                log::error!(
                    "DeviceBuffer: could not make {} current to free {ptr}: {e}; freeing anyway",
                    self.device
                );
                None
            }
        };
        // SAFETY: forwarded contract.
        unsafe {
            self.resource
                .deallocate(ptr, capacity, self.alignment, self.stream.view())
        };
        drop(guard);
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let (ptr, capacity) = (self.ptr, self.capacity);
        self.ptr = DevicePtr::NULL;
        self.capacity = 0;
        self.size = 0;
        // SAFETY: the buffer owns the allocation; all of its uses were
        // ordered on (or joined into) its stream, on which it is freed.
        unsafe { self.free(ptr, capacity) };
    }
}

/// The parts of a [`DeviceBuffer`] given up by
/// [`DeviceBuffer::into_raw_parts`]; whoever holds them owns the memory.
#[derive(Debug)]
pub struct RawBufferParts {
    /// Address of the first byte (null when `capacity` is 0).
    pub ptr: DevicePtr,
    /// Bytes in use.
    pub size: usize,
    /// Bytes allocated.
    pub capacity: usize,
    /// Alignment the memory was allocated with.
    pub alignment: usize,
    /// The stream the memory is ordered on (kept alive while held).
    pub stream: StreamRef,
    /// The resource that must free the memory.
    pub resource: SharedResource,
    /// The device the memory was allocated on.
    pub device: DeviceId,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::SimulatedMemoryResource;

    const S: CudaStreamView<'static> = CudaStreamView::DEFAULT;

    /// Replays memset runs on a host image, the way the device applies them.
    fn apply(runs: &[MemsetRun], base: u64, len: usize) -> Vec<u8> {
        let mut img = vec![0xEEu8; len];
        for r in runs {
            for k in 0..r.count {
                let at = (r.dst - base) as usize + k * r.width;
                let b = r.value.to_ne_bytes();
                img[at..at + r.width].copy_from_slice(&b[..r.width]);
            }
        }
        img
    }

    #[test]
    fn memset_runs_rebuild_every_value_at_every_alignment() {
        for len in 1..=MAX_ASYNC_VALUE_BYTES {
            let src: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
            for misalign in 0..4u64 {
                let base = 0x7f00_0000_1000 + misalign;
                let runs = memset_runs(base, &src);
                assert_eq!(apply(&runs, base, len), src, "len {len} misalign {misalign}");
                for r in &runs {
                    assert!(r.width == 1 || (r.width == 4 && r.dst % 4 == 0), "{r:?}");
                }
                assert!(runs.len() <= 3 + len / 4 + 3, "{len}: {} runs", runs.len());
            }
        }
    }

    #[test]
    fn memset_runs_merge_equal_neighbours() {
        let runs = memset_runs(0x1000, &[0u8; 64]);
        assert_eq!(
            runs,
            vec![MemsetRun {
                dst: 0x1000,
                value: 0,
                width: 4,
                count: 16
            }]
        );
        let runs = memset_runs(0x1001, &[9u8; 3]);
        assert_eq!(
            runs,
            vec![MemsetRun {
                dst: 0x1001,
                value: 9,
                width: 1,
                count: 3
            }]
        );
        // 1.5f64 = 0x3FF8_0000_0000_0000: two different words, no merge.
        assert_eq!(memset_runs(0x1000, &1.5f64.to_ne_bytes()).len(), 2);
    }

    #[test]
    fn alignment_errors_are_distinct() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        for bad in [0usize, 3, 48, 100] {
            let r = DeviceBuffer::with_alignment(8, bad, S, sim.clone());
            assert!(matches!(r, Err(Error::InvalidArgument(_))), "{bad}: {r:?}");
        }
        for big in [512usize, 4096] {
            let r = DeviceBuffer::with_alignment(8, big, S, sim.clone());
            assert!(matches!(r, Err(Error::BadAlloc(_))), "{big}: {r:?}");
        }
        for ok in [1usize, 2, 64, 256] {
            let b = DeviceBuffer::with_alignment(8, ok, S, sim.clone()).unwrap();
            assert!(b.data().is_aligned(ok));
        }
        assert_eq!(sim.live_allocations(), 0);
    }

    #[test]
    fn range_checks() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let b = DeviceBuffer::with_resource(10, S, sim).unwrap();
        assert!(b.check_range(0, 10).is_ok());
        assert!(matches!(b.check_range(5, 6), Err(Error::OutOfRange(_))));
        assert!(matches!(b.check_range(usize::MAX, 2), Err(Error::OutOfRange(_))));
        assert!(matches!(
            b.memset(0, 0, 4, usize::MAX, S),
            Err(Error::InvalidArgument(_))
        ));
    }
}
