//! Execution policy for device algorithms (RMM's `rmm::exec_policy`) and a
//! stream-ordered typed allocator (RMM's `polymorphic_allocator<T>` and
//! `stream_allocator_adaptor`).
//!
//! An [`ExecPolicy`] names the stream an algorithm runs on and the resource
//! its temporaries come from. Algorithms take `&ExecPolicy` and draw every
//! temporary through [`ExecPolicy::scratch`]; a [`Scratch`] frees itself
//! stream-ordered (on the policy's stream, through the policy's resource)
//! when dropped, so the memory may be reused by work ordered after the
//! algorithm without a synchronisation.
//!
//! ```
//! use rmm::exec_policy::ExecPolicy;
//! use rmm::mr::SimulatedMemoryResource;
//! use rmm::CudaStreamView;
//! // Runs without a GPU: the simulated resource hands out addresses only.
//! let sim = SimulatedMemoryResource::new(1 << 20);
//! let policy = ExecPolicy::new(CudaStreamView::DEFAULT, sim.clone());
//! {
//!     let tmp = policy.scratch::<u64>(1000)?;
//!     assert_eq!(tmp.len(), 1000);
//!     assert!(sim.allocated_bytes() >= 8000);
//! }
//! assert_eq!(sim.allocated_bytes(), 0);
//! # Ok::<(), rmm::Error>(())
//! ```

use std::fmt;
use std::marker::PhantomData;

use crate::align::CUDA_ALLOCATION_ALIGNMENT;
use crate::dry_run::{DryRun, DryRunScope};
use crate::error::{Error, Result};
use crate::mr::{current_device_resource, MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::span::{DeviceSpan, DeviceSpanMut, SpanInfo};
use crate::stream::{run_ordered, CudaStreamView, StreamRef};

/// Bytes for `n` elements of `T`, or an error naming the overflow.
fn bytes_for<T>(n: usize, what: &str) -> Result<usize> {
    n.checked_mul(std::mem::size_of::<T>())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{what}: {n} elements of {} bytes overflow the address space",
                std::mem::size_of::<T>()
            ))
        })
}

/// Alignment used for typed allocations: the CUDA allocation alignment (256),
/// which every base resource provides and which covers every element type.
fn alignment_for<T>() -> usize {
    std::mem::align_of::<T>().max(CUDA_ALLOCATION_ALIGNMENT)
}

/// Where and with what memory a device algorithm runs: a stream and a
/// resource for its temporaries (RMM's `exec_policy`).
///
/// Cloning is cheap (the resource is a shared handle).
///
/// A policy may be a *dry run* ([`ExecPolicy::dry_run`],
/// [`ExecPolicy::with_dry_run`]): algorithms then take their scratch as on
/// the GPU and enqueue nothing (see [`crate::dry_run`]).
#[derive(Clone, Debug)]
pub struct ExecPolicy {
    stream: StreamRef,
    resource: SharedResource,
    dry_run: Option<DryRun>,
}

impl Default for ExecPolicy {
    /// The default stream and the current device's resource.
    fn default() -> Self {
        ExecPolicy {
            stream: StreamRef::default(),
            resource: current_device_resource(),
            dry_run: None,
        }
    }
}

impl ExecPolicy {
    /// A policy on `stream` whose temporaries come from `resource` (any
    /// resource, or a [`SharedResource`] handle, which is not wrapped twice).
    /// The policy keeps the stream alive (see [`StreamRef`]).
    pub fn new<R: MemoryResource>(stream: CudaStreamView, resource: R) -> Self {
        ExecPolicy {
            stream: StreamRef::from(stream),
            resource: SharedResource::new(resource),
            dry_run: None,
        }
    }

    /// A dry-run policy on the default stream whose scratch comes from
    /// `resource` (usually a [`SimulatedMemoryResource`](crate::mr::SimulatedMemoryResource),
    /// perhaps under a statistics adaptor or a pool), standing for the
    /// device of [`DryRun::default`]: algorithms run their real code path,
    /// take every scratch allocation as on the GPU, and enqueue no kernel
    /// and make no driver call. See [`crate::dry_run`] for the helpers that
    /// answer "peak scratch" and "smallest pool".
    ///
    /// ```
    /// use rmm::exec_policy::ExecPolicy;
    /// use rmm::mr::{SimulatedMemoryResource, StatisticsAdaptor};
    /// let stats = StatisticsAdaptor::new(SimulatedMemoryResource::new(usize::MAX));
    /// let policy = ExecPolicy::dry_run(stats.clone());
    /// assert!(policy.is_dry_run());
    /// drop(policy.scratch::<u64>(1000)?);
    /// assert_eq!(stats.bytes_counter().peak, 8000);
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn dry_run<R: MemoryResource>(resource: R) -> Self {
        ExecPolicy::new(CudaStreamView::DEFAULT, resource).with_dry_run(DryRun::default())
    }

    /// This policy as a dry run standing for the device `dry_run` describes
    /// (its stream is kept; in a dry run it is only passed to the resource).
    pub fn with_dry_run(mut self, dry_run: DryRun) -> Self {
        self.dry_run = Some(dry_run);
        self
    }

    /// True for a dry-run policy: algorithms take their scratch and then
    /// enqueue nothing.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.is_some()
    }

    /// The device a dry-run policy stands for; `None` for a real policy.
    pub fn dry_run_device(&self) -> Option<DryRun> {
        self.dry_run
    }

    /// A policy on `stream` over the current device's resource.
    pub fn on_stream(stream: CudaStreamView) -> Self {
        ExecPolicy {
            stream: StreamRef::from(stream),
            resource: current_device_resource(),
            dry_run: None,
        }
    }

    /// The stream algorithms run on.
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.stream.view()
    }

    /// Runs `launch`, which enqueues device work on the policy's stream (its
    /// argument) over the memory of `spans`, ordered with the spans' owners:
    ///
    /// 1. refuses (before any GPU work) spans of simulated memory and a
    ///    policy whose resource is simulated: there is no device memory
    ///    behind their addresses;
    /// 2. makes the policy's stream wait for the work already queued on each
    ///    span's stream (an event), so the kernels see the owner's writes;
    /// 3. runs `launch`;
    /// 4. makes each span's stream wait for the policy's stream, so the
    ///    owner's later work (and its eventual free) comes after the kernels.
    ///    This step runs even when `launch` fails part way.
    ///
    /// Spans without a stream (made by `from_raw_parts`) are ordered by their
    /// maker.
    ///
    /// In a dry run ([`ExecPolicy::is_dry_run`]) spans of simulated memory
    /// and a simulated resource are accepted, no event or other driver call
    /// orders anything, and `launch` is called with the policy's stream to
    /// take its scratch from the policy and then enqueue nothing: a launch
    /// closure checks [`is_dry_run`](Self::is_dry_run) after its last
    /// [`scratch`](Self::scratch) and returns there (`rmm-suite`'s
    /// launchers do). A kernel launch, memset or copy of
    /// [`crate::launch`] made on this thread while such a closure runs is
    /// refused with [`Error::Logic`] instead of reaching the driver.
    ///
    /// Under stream capture (the policy's stream capturing, e.g. inside
    /// [`ExecPolicy::capture`]): a span of the policy's own stream, or of a
    /// stream joined to the same capture, is ordered as above; a span of a
    /// stream outside the capture has that stream synchronised on the host
    /// instead of step 2 (so every launch of the graph comes after the work
    /// queued on it so far) and no step 4: keeping such memory allocated
    /// and unused by other work while the graph may run is the caller's
    /// part, as [`GraphExec::launch`](crate::graph::GraphExec::launch) says.
    /// A span of a capturing stream used from a policy whose stream is not
    /// in that capture is refused with [`Error::Capture`] before any work. Device algorithms (`rmm-suite`) go through this function. The
    /// current device is left as it is (a span does not record its device);
    /// for work on whole containers, with their device made current, see
    /// [`DeviceBuffer::access`](crate::DeviceBuffer::access), which shares
    /// steps 2 to 4.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming `what` for simulated memory (not in
    /// a dry run); [`Error::Capture`] as above; the driver's event error;
    /// `launch`'s error.
    ///
    /// ```
    /// use rmm::exec_policy::ExecPolicy;
    /// use rmm::mr::SimulatedMemoryResource;
    /// use rmm::{CudaStreamView, DeviceUvector, Error};
    /// let sim = SimulatedMemoryResource::new(1 << 20);
    /// let v = DeviceUvector::<u32>::with_resource(10, CudaStreamView::DEFAULT, sim)?;
    /// let policy = ExecPolicy::new(CudaStreamView::DEFAULT, rmm::mr::SimulatedMemoryResource::new(1 << 20));
    /// let e = policy.launch_ordered("sum", &[v.as_span().info()], |_| Ok(())).unwrap_err();
    /// assert!(matches!(e, Error::InvalidArgument(m) if m.contains("simulated")));
    /// // A dry run accepts simulated memory; the closure takes its scratch
    /// // and enqueues nothing.
    /// let dry = ExecPolicy::dry_run(rmm::mr::SimulatedMemoryResource::new(1 << 20));
    /// let skipped = dry.launch_ordered("sum", &[v.as_span().info()], |_| Ok(dry.is_dry_run()))?;
    /// assert!(skipped);
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn launch_ordered<R>(
        &self,
        what: &str,
        spans: &[SpanInfo<'_>],
        launch: impl FnOnce(CudaStreamView<'_>) -> Result<R>,
    ) -> Result<R> {
        if self.is_dry_run() {
            let _net = DryRunScope::enter();
            return launch(self.stream.view());
        }
        if spans.iter().any(|s| s.simulated) {
            return Err(Error::InvalidArgument(format!(
                "{what}: a span of simulated memory has no device memory behind it; kernels cannot run on it"
            )));
        }
        if self.resource.is_simulated() {
            return Err(Error::InvalidArgument(format!(
                "{what}: the policy's resource is simulated; kernels cannot use its scratch memory"
            )));
        }
        run_ordered(
            what,
            self.stream.view(),
            spans.iter().filter_map(|s| s.stream),
            launch,
        )
    }

    /// The resource temporaries come from.
    pub fn resource(&self) -> &SharedResource {
        &self.resource
    }

    /// Allocates uninitialised temporary storage for `n` elements of `T`,
    /// usable in the policy's stream order; it is freed stream-ordered when
    /// the [`Scratch`] drops.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `n * size_of::<T>()` overflows; the
    /// resource's error (e.g. [`Error::OutOfMemory`]) otherwise.
    pub fn scratch<T: Copy>(&self, n: usize) -> Result<Scratch<T>> {
        let bytes = bytes_for::<T>(n, "scratch")?;
        let alignment = alignment_for::<T>();
        let ptr = self.resource.allocate(bytes, alignment, self.stream.view())?;
        Ok(Scratch {
            ptr,
            len: n,
            bytes,
            alignment,
            stream: self.stream.clone(),
            resource: self.resource.clone(),
            _type: PhantomData,
        })
    }

    /// A typed allocator over this policy's resource.
    pub fn allocator<T>(&self) -> PolymorphicAllocator<T> {
        PolymorphicAllocator::new(self.resource.clone())
    }
}

/// Temporary device storage for `len` elements of `T` from an
/// [`ExecPolicy`]; freed stream-ordered on the policy's stream when dropped.
///
/// The contents are uninitialised.
pub struct Scratch<T> {
    ptr: DevicePtr,
    len: usize,
    bytes: usize,
    alignment: usize,
    stream: StreamRef,
    resource: SharedResource,
    _type: PhantomData<T>,
}

// SAFETY: `Scratch` owns a device allocation (an address) and a shared,
// thread-safe resource handle; `T` values are never touched on the host.
unsafe impl<T> Send for Scratch<T> {}
// SAFETY: as above; `&Scratch` only exposes the address.
unsafe impl<T> Sync for Scratch<T> {}

impl<T> fmt::Debug for Scratch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scratch")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("stream", &self.stream)
            .finish()
    }
}

impl<T> Scratch<T> {
    /// Address of the first element ([`DevicePtr::NULL`] when `len` is 0 on
    /// resources that return null for empty requests).
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.bytes
    }
    /// The stream the memory is freed on.
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.stream.view()
    }
    /// A read-only view (recording the policy's stream).
    pub fn as_span(&self) -> DeviceSpan<'_, T> {
        // SAFETY: the allocation holds `len` elements, is aligned for `T`,
        // lives as long as `self`, which the span borrows, and is freed on
        // the recorded stream.
        unsafe { DeviceSpan::from_raw_parts_with(self.ptr, self.len, self.span_info()) }
    }
    /// A writable view (recording the policy's stream).
    pub fn as_span_mut(&mut self) -> DeviceSpanMut<'_, T> {
        let info = self.span_info();
        // SAFETY: as `as_span`; the unique borrow of `self` excludes other views.
        unsafe { DeviceSpanMut::from_raw_parts_with(self.ptr, self.len, info) }
    }
    fn span_info(&self) -> SpanInfo<'_> {
        SpanInfo {
            stream: Some(self.stream.view()),
            simulated: self.resource.is_simulated(),
        }
    }
}

impl<T> Drop for Scratch<T> {
    fn drop(&mut self) {
        // SAFETY: allocated by `ExecPolicy::scratch` from this resource with
        // these bytes, alignment and stream; freed once; work that used it was
        // ordered on `stream` before this point.
        unsafe {
            self.resource
                .deallocate(self.ptr, self.bytes, self.alignment, self.stream.view())
        }
    }
}

/// A stream-ordered allocator of `T`s over a shared resource (RMM's
/// `polymorphic_allocator<T>`). Allocators compare equal when their
/// resources do (memory from one may be freed through the other).
///
/// ```
/// use rmm::exec_policy::PolymorphicAllocator;
/// use rmm::mr::{SharedResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
/// let a = PolymorphicAllocator::<u32>::new(sim.clone());
/// let p = a.allocate(100, CudaStreamView::DEFAULT)?;
/// unsafe { a.deallocate(p, 100, CudaStreamView::DEFAULT) };
/// assert_eq!(a, PolymorphicAllocator::<u32>::new(sim));
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct PolymorphicAllocator<T> {
    resource: SharedResource,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for PolymorphicAllocator<T> {
    fn clone(&self) -> Self {
        PolymorphicAllocator {
            resource: self.resource.clone(),
            _type: PhantomData,
        }
    }
}

impl<T> fmt::Debug for PolymorphicAllocator<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolymorphicAllocator")
            .field("resource", &self.resource)
            .finish()
    }
}

impl<T> Default for PolymorphicAllocator<T> {
    /// An allocator over the current device's resource.
    fn default() -> Self {
        PolymorphicAllocator::new(current_device_resource())
    }
}

impl<T> PolymorphicAllocator<T> {
    /// An allocator over `resource`.
    pub fn new<R: MemoryResource>(resource: R) -> Self {
        PolymorphicAllocator {
            resource: SharedResource::new(resource),
            _type: PhantomData,
        }
    }

    /// The resource behind the allocator.
    pub fn resource(&self) -> &SharedResource {
        &self.resource
    }

    /// The same resource, allocating `U`s (C++'s `rebind`).
    pub fn rebind<U>(&self) -> PolymorphicAllocator<U> {
        PolymorphicAllocator {
            resource: self.resource.clone(),
            _type: PhantomData,
        }
    }

    /// Allocates `n` elements usable in `stream` order (256-byte aligned).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the byte count overflows; the
    /// resource's error otherwise.
    pub fn allocate(&self, n: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        let bytes = bytes_for::<T>(n, "polymorphic_allocator")?;
        self.resource.allocate(bytes, alignment_for::<T>(), stream)
    }

    /// Frees `n` elements at `ptr`, ordered after `stream`'s current work.
    ///
    /// # Safety
    /// `ptr` came from [`allocate`](Self::allocate) of an allocator equal to
    /// this one with the same `n`, is freed once, and is not used by work
    /// ordered after this call.
    pub unsafe fn deallocate(&self, ptr: DevicePtr, n: usize, stream: CudaStreamView) {
        // `allocate` succeeded for this `n`, so the product does not overflow.
        let bytes = n.wrapping_mul(std::mem::size_of::<T>());
        // SAFETY: forwarded contract.
        unsafe { self.resource.deallocate(ptr, bytes, alignment_for::<T>(), stream) }
    }
}

impl<T, U> PartialEq<PolymorphicAllocator<U>> for PolymorphicAllocator<T> {
    fn eq(&self, other: &PolymorphicAllocator<U>) -> bool {
        self.resource.is_equal(&other.resource)
    }
}

/// A [`PolymorphicAllocator`] bound to one stream (RMM's
/// `stream_allocator_adaptor`): `allocate(n)` / `deallocate(ptr, n)` without
/// a stream argument.
///
/// ```
/// use rmm::exec_policy::{PolymorphicAllocator, StreamAllocatorAdaptor};
/// use rmm::mr::SimulatedMemoryResource;
/// use rmm::CudaStreamView;
/// let a = PolymorphicAllocator::<f64>::new(SimulatedMemoryResource::new(1 << 20));
/// let s = StreamAllocatorAdaptor::new(a, CudaStreamView::DEFAULT);
/// let p = s.allocate(10)?;
/// unsafe { s.deallocate(p, 10) };
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct StreamAllocatorAdaptor<T> {
    allocator: PolymorphicAllocator<T>,
    stream: StreamRef,
}

impl<T> Clone for StreamAllocatorAdaptor<T> {
    fn clone(&self) -> Self {
        StreamAllocatorAdaptor {
            allocator: self.allocator.clone(),
            stream: self.stream.clone(),
        }
    }
}

impl<T> fmt::Debug for StreamAllocatorAdaptor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamAllocatorAdaptor")
            .field("allocator", &self.allocator)
            .field("stream", &self.stream)
            .finish()
    }
}

impl<T> StreamAllocatorAdaptor<T> {
    /// Binds `allocator` to `stream` (kept alive, see [`StreamRef`]).
    pub fn new(allocator: PolymorphicAllocator<T>, stream: CudaStreamView) -> Self {
        StreamAllocatorAdaptor {
            allocator,
            stream: StreamRef::from(stream),
        }
    }
    /// The bound stream.
    pub fn stream(&self) -> CudaStreamView<'_> {
        self.stream.view()
    }
    /// The allocator underneath.
    pub fn underlying_allocator(&self) -> &PolymorphicAllocator<T> {
        &self.allocator
    }
    /// The same allocator and stream, allocating `U`s.
    pub fn rebind<U>(&self) -> StreamAllocatorAdaptor<U> {
        StreamAllocatorAdaptor {
            allocator: self.allocator.rebind(),
            stream: self.stream.clone(),
        }
    }
    /// Allocates `n` elements on the bound stream.
    ///
    /// # Errors
    /// As [`PolymorphicAllocator::allocate`].
    pub fn allocate(&self, n: usize) -> Result<DevicePtr> {
        self.allocator.allocate(n, self.stream.view())
    }
    /// Frees `n` elements on the bound stream.
    ///
    /// # Safety
    /// As [`PolymorphicAllocator::deallocate`], with an adaptor equal to this one.
    pub unsafe fn deallocate(&self, ptr: DevicePtr, n: usize) {
        // SAFETY: forwarded contract.
        unsafe { self.allocator.deallocate(ptr, n, self.stream.view()) }
    }
}

impl<T, U> PartialEq<StreamAllocatorAdaptor<U>> for StreamAllocatorAdaptor<T> {
    fn eq(&self, other: &StreamAllocatorAdaptor<U>) -> bool {
        self.stream == other.stream && self.allocator == other.allocator
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr::{CallbackMemoryResource, SimulatedMemoryResource};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    fn stream(raw: usize) -> CudaStreamView<'static> {
        // SAFETY: the handle is only compared and passed to simulated
        // resources, never to the driver.
        unsafe { CudaStreamView::from_raw(raw) }
    }

    #[test]
    fn scratch_allocates_typed_and_frees_on_drop() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let policy = ExecPolicy::new(CudaStreamView::DEFAULT, sim.clone());
        let a = policy.scratch::<u64>(100).unwrap();
        let b = policy.scratch::<u8>(3).unwrap();
        assert_eq!((a.len(), a.size_bytes()), (100, 800));
        assert_eq!((b.len(), b.size_bytes()), (3, 3));
        assert!(a.ptr().is_aligned(256) && b.ptr().is_aligned(256));
        assert_eq!(a.as_span().len(), 100);
        assert_eq!(sim.live_allocations(), 2);
        drop(a);
        assert_eq!(sim.live_allocations(), 1);
        drop(b);
        assert_eq!(
            (sim.live_allocations(), sim.allocated_bytes(), sim.bad_frees()),
            (0, 0, 0)
        );
    }

    /// Calls seen by a callback resource: (what, bytes, stream handle).
    type CallLog = Arc<Mutex<Vec<(&'static str, usize, usize)>>>;

    #[test]
    fn scratch_frees_on_the_policy_stream_through_its_resource() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let log: CallLog = Arc::default();
        let (s1, s2, l1, l2) = (sim.clone(), sim.clone(), log.clone(), log.clone());
        let mr = CallbackMemoryResource::new(
            move |bytes, align, s| {
                l1.lock().unwrap().push(("alloc", bytes, s.as_raw()));
                s1.allocate(bytes, align, s)
            },
            move |p, bytes, align, s| {
                l2.lock().unwrap().push(("free", bytes, s.as_raw()));
                // SAFETY: forwarded from the callback resource's contract.
                unsafe { s2.deallocate(p, bytes, align, s) }
            },
        )
        .without_gpu();
        let policy = ExecPolicy::new(stream(0x1234), mr);
        assert_eq!(policy.stream().as_raw(), 0x1234);
        let mut t = policy.scratch::<f32>(10).unwrap();
        assert_eq!(t.as_span_mut().size_bytes(), 40);
        drop(t);
        assert_eq!(
            *log.lock().unwrap(),
            vec![("alloc", 40, 0x1234), ("free", 40, 0x1234)]
        );
        assert_eq!(sim.allocated_bytes(), 0);
    }

    #[test]
    fn spans_record_their_owner_and_launches_are_ordered_or_refused() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let policy = ExecPolicy::new(stream(0x77), sim.clone());
        let mut t = policy.scratch::<u32>(8).unwrap();
        let mut whole = t.as_span_mut();
        let sub = whole.subspan_mut(2..4).unwrap().info();
        let sub = (sub.stream.map(|s| s.as_raw()), sub.simulated);
        assert_eq!(sub, (Some(0x77), true));
        let info = t.as_span().info();
        assert_eq!((info.stream.map(|s| s.as_raw()), info.simulated), sub);
        let e = policy.launch_ordered("k", &[info], |_| Ok(())).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidArgument(m) if m.contains("simulated")),
            "{e:?}"
        );
        // A real resource (never used here) and spans on the policy's own
        // stream or on none: no event is needed, `launch` runs on the
        // policy's stream without a driver call.
        let real = ExecPolicy::new(stream(0x77), crate::mr::CudaMemoryResource::new());
        let spans = [
            SpanInfo {
                stream: Some(stream(0x77)),
                simulated: false,
            },
            SpanInfo::default(),
        ];
        let seen = real.launch_ordered("k", &spans, |s| Ok(s.as_raw())).unwrap();
        assert_eq!(seen, 0x77);
        let e = real
            .launch_ordered("k", &spans, |_| Err::<(), _>(Error::Logic("boom".into())))
            .unwrap_err();
        assert!(matches!(e, Error::Logic(_)));
    }

    #[test]
    fn scratch_size_overflow_is_an_error_without_allocating() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let sim = SimulatedMemoryResource::new(1 << 20);
        let s1 = sim.clone();
        let mr = CallbackMemoryResource::new(
            move |b, a, s| {
                c.fetch_add(1, Ordering::Relaxed);
                s1.allocate(b, a, s)
            },
            |_, _, _, _| {},
        )
        .without_gpu();
        let policy = ExecPolicy::new(CudaStreamView::DEFAULT, mr);
        let e = policy.scratch::<u64>(usize::MAX / 4).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        assert_eq!(calls.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn scratch_out_of_memory_is_reported() {
        let sim = SimulatedMemoryResource::new(4096);
        let policy = ExecPolicy::new(CudaStreamView::DEFAULT, sim.clone());
        let _keep = policy.scratch::<u32>(512).unwrap();
        let e = policy.scratch::<u32>(1000).unwrap_err();
        assert!(e.is_out_of_memory(), "{e:?}");
        assert_eq!(sim.live_allocations(), 1);
    }

    #[test]
    fn empty_scratch_is_fine() {
        let sim = SimulatedMemoryResource::new(1024);
        let policy = ExecPolicy::new(CudaStreamView::DEFAULT, sim.clone());
        let t = policy.scratch::<u32>(0).unwrap();
        assert!(t.is_empty());
        drop(t);
        assert_eq!((sim.allocated_bytes(), sim.bad_frees()), (0, 0));
    }

    /// The only test here that consults the per-device registry (which asks
    /// the driver for the current device); the others use simulated
    /// resources only and never reach the driver.
    #[test]
    fn default_policy_uses_the_current_device_resource() {
        let p = ExecPolicy::default();
        assert!(p.stream().is_default());
        assert!(p.resource().is_equal(&current_device_resource()));
        let q = ExecPolicy::on_stream(stream(0x42));
        assert_eq!(q.stream().as_raw(), 0x42);
        assert!(q.resource().is_equal(p.resource()));
        let d = PolymorphicAllocator::<u8>::default();
        assert!(d.resource().is_equal(&current_device_resource()));
    }

    #[test]
    fn polymorphic_allocator_allocates_and_compares_by_resource() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let other = SimulatedMemoryResource::new(1 << 20);
        let a = PolymorphicAllocator::<u32>::new(sim.clone());
        let p = a.allocate(256, stream(7)).unwrap();
        assert!(p.is_aligned(256));
        assert_eq!(sim.allocated_bytes(), 1024);
        // SAFETY: `p` came from `a` with n = 256.
        unsafe { a.deallocate(p, 256, stream(7)) };
        assert_eq!((sim.allocated_bytes(), sim.bad_frees()), (0, 0));
        let b = PolymorphicAllocator::<u64>::new(sim.clone());
        assert!(a == b);
        assert!(a == a.rebind::<u8>());
        assert!(a != PolymorphicAllocator::<u32>::new(other));
        assert!(a.clone() == a);
        assert!(matches!(
            a.allocate(usize::MAX, CudaStreamView::DEFAULT),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn stream_allocator_adaptor_binds_its_stream() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s1, s2, k1, k2) = (sim.clone(), sim.clone(), seen.clone(), seen.clone());
        let mr = CallbackMemoryResource::new(
            move |b, a, s| {
                k1.lock().unwrap().push(s.as_raw());
                s1.allocate(b, a, s)
            },
            move |p, b, a, s| {
                k2.lock().unwrap().push(s.as_raw());
                // SAFETY: forwarded from the callback resource's contract.
                unsafe { s2.deallocate(p, b, a, s) }
            },
        )
        .without_gpu();
        let alloc = PolymorphicAllocator::<i16>::new(mr);
        let s = StreamAllocatorAdaptor::new(alloc.clone(), stream(0x99));
        assert_eq!(s.stream().as_raw(), 0x99);
        let p = s.allocate(50).unwrap();
        assert_eq!(sim.allocated_bytes(), 256);
        // SAFETY: `p` came from `s` with n = 50.
        unsafe { s.deallocate(p, 50) };
        assert_eq!(*seen.lock().unwrap(), vec![0x99, 0x99]);
        assert_eq!(sim.allocated_bytes(), 0);
        assert!(s == s.rebind::<u64>());
        assert!(s != StreamAllocatorAdaptor::new(alloc.clone(), stream(0x98)));
        assert!(s.underlying_allocator() == &alloc);
    }
}
