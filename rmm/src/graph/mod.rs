//! CUDA graph capture: record the work submitted to a stream once, replay
//! it many times.
//!
//! A captured graph replays a whole pipeline (copies, memsets, kernels,
//! allocations) with one launch: a kernel launch costs about 2.8 us on the
//! H200, a node of a replayed graph far less. Memory is the hard part: a
//! replay writes again every address captured, so memory a graph uses must
//! stay reserved for it. rmm's resources see captures (through the
//! [registry](self#detection)) and keep what is allocated during a capture
//! for that graph.
//!
//! | Concept | Where |
//! |---|---|
//! | Is a stream capturing? | [`CudaStreamView::capture_status`](crate::CudaStreamView::capture_status), [`CaptureStatus`] |
//! | Begin a capture (a guard), end it into a graph | [`begin_capture`], [`begin_capture_in`], [`Capture`], [`Capture::end`] |
//! | What other threads may do meanwhile | [`CaptureMode`] |
//! | A captured graph, its executable instance, a replay | [`Graph`], [`Graph::instantiate`], [`GraphExec`], [`GraphExec::launch`] |
//! | Capture a policy's work in one call | [`ExecPolicy::capture`](crate::exec_policy::ExecPolicy::capture), [`capture_in`](crate::exec_policy::ExecPolicy::capture_in) |
//! | Which graphs share a private pool | [`GraphPool`] |
//! | How resources detect captures | [`CaptureDetection`], [`set_capture_detection`] |
//!
//! # Capturing a copy and a memset, replaying it
//! ```no_run
//! use rmm::graph::{begin_capture, CaptureMode};
//! use rmm::{CudaStream, DeviceBuffer};
//! let s = CudaStream::non_blocking()?;
//! let mut input = DeviceBuffer::new(1024, s.view())?;
//! let output = DeviceBuffer::new(2048, s.view())?;
//! let capture = begin_capture(s.view(), CaptureMode::Global)?;
//! // SAFETY: both buffers are live device memory of these sizes, and stay
//! // alive for every launch below.
//! unsafe {
//!     rmm::launch::memset_async(output.data(), 0xff, 1, 2048, capture.stream())?;
//!     rmm::launch::memcpy_async(output.data(), input.data(), 1024, capture.stream())?;
//! }
//! let exec = capture.end()?.instantiate()?;
//! for round in 0..100u8 {
//!     // New input, written in stream order outside the graph.
//!     input.copy_from_host(&[round; 1024], s.view())?;
//!     // SAFETY: `input` and `output` are alive for the launch.
//!     unsafe { exec.launch(s.view())? };
//!     let host = output.to_host(s.view())?;
//!     assert!(host[..1024].iter().all(|&b| b == round));
//!     assert!(host[1024..].iter().all(|&b| b == 0xff));
//! }
//! # Ok::<(), rmm::Error>(())
//! ```
//!
//! # Memory under capture
//! * `cuda_async` and `cuda_async_managed` use the driver's own graph
//!   memory nodes (see [`CudaAsyncMemoryResource`](crate::mr::CudaAsyncMemoryResource)).
//! * Graphs are instantiated with `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`:
//!   driver-pool memory a graph allocates and does not free is freed at its
//!   next launch.
//! * Memory allocated *before* the capture and used by it must outlive every
//!   launch: that is the contract of the `unsafe` [`GraphExec::launch`].
//!
//! # Detection
//! Captures begun here are registered in a process-wide registry; captures
//! begun by other libraries (CuPy, PyTorch, cudarc) are found by asking the
//! driver ([`CaptureDetection::Driver`], the default) and adopted: every
//! stream joined to one capture gets the same private pool. With nothing
//! registered, the registry answers after one atomic load.
//!
//! # Rules of capture (measured on the H200, 2026-12-02)
//! * The legacy default stream cannot be captured; the per-thread default
//!   stream can.
//! * **Capture on a non-blocking stream** ([`CudaStream::non_blocking`](crate::CudaStream::non_blocking)).
//!   A stream that synchronises with the legacy default stream
//!   ([`CudaStream::new`](crate::CudaStream::new), the per-thread default
//!   stream) is caught by work on the legacy default stream from *any*
//!   thread of the process while it captures: that work fails with
//!   `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT` and the capture is invalidated
//!   (seen on the H200, 2026-12-02, with rmm's unit tests running beside
//!   a capture).
//! * In global and thread-local mode, synchronous calls (`cuMemAlloc`,
//!   `cuMemFree`, `cuMemHostAlloc`, synchronising another stream) fail and
//!   invalidate the capture; the capture then ends with [`Error::Capture`](crate::Error::Capture).
//! * A stream that waits on an event recorded inside a capture joins it
//!   (same capture id); it must be joined back before the capture ends.

mod capture;
mod detection;
mod exec;
mod mode;
mod policy;
mod pool;
// The crate-private API the resources' graph-private pools use.
mod lifetime;
mod registry;
mod registry_book;
mod relaxed;
mod side_stream;

pub use capture::{begin_capture, begin_capture_in, Capture};
pub use detection::{capture_detection, set_capture_detection, CaptureDetection};
pub use exec::{Graph, GraphExec};
pub use mode::{CaptureMode, CaptureStatus};
pub use pool::GraphPool;

pub(crate) use lifetime::{attach_lifetime, GraphLifetime};
pub(crate) use pool::GraphPoolId;
pub(crate) use registry::{
    capture_of, captures_registered, registered_capture_of, wait_for_other_captures, ActiveCapture,
};
pub(crate) use relaxed::RelaxedCaptureMode;
pub(crate) use side_stream::side_stream;
