//! # rmm: a Rust-native GPU memory manager
//!
//! Stream-ordered device memory in the spirit of NVIDIA's RAPIDS Memory
//! Manager: memory resources, adaptors, containers, streams, the per-device
//! current resource and an execution policy for device algorithms.
//!
//! | Concept | Where |
//! |---|---|
//! | A resource: stream-ordered `allocate` / `deallocate` | [`mr::MemoryResource`] |
//! | Type-erased owning handle | [`mr::SharedResource`] |
//! | Base resources (cuda, managed, cuda_async, pinned, callback, simulated) | [`mr`] |
//! | Adaptors (aligned, failure callback, limiting, logging, prefetch, statistics, thread safe, tracking) | [`mr::adaptors`] |
//! | Debug log through the `log` facade | [`logger`] |
//! | Replaying a memory-event log | [`replay`] (the `rmm-replay` program is in `tools/`) |
//! | Current resource per device | [`mr::per_device`] |
//! | Containers: untyped bytes, typed vector, one value | [`DeviceBuffer`], [`DeviceUvector`], [`DeviceScalar`] |
//! | Element types of the typed containers (every bit pattern valid) | [`DevicePod`] |
//! | Streams: shared owner, borrowed view, owned reference, pool | [`CudaStream`], [`CudaStreamView`], [`StreamRef`], [`CudaStreamPool`] |
//! | Devices | [`device`] |
//! | Kernel modules, launches, timing events, raw copies (the driver layer is private) | [`launch`] |
//! | Addresses | [`DevicePtr`] |
//! | Errors | [`Error`], [`Result`] |
//! | Execution policy, scratch, typed stream-ordered allocators | [`exec_policy`] |
//!
//! ```
//! use rmm::mr::{MemoryResource, SimulatedMemoryResource};
//! use rmm::CudaStreamView;
//! // Runs without a GPU: the simulated resource hands out addresses only.
//! let mr = SimulatedMemoryResource::new(1 << 30);
//! let p = mr.allocate(1 << 20, 256, CudaStreamView::DEFAULT)?;
//! assert!(p.is_aligned(256));
//! unsafe { mr.deallocate(p, 1 << 20, 256, CudaStreamView::DEFAULT) };
//! # Ok::<(), rmm::Error>(())
//! ```

pub mod align;
pub mod buffer;
pub mod device;
pub(crate) mod driver;
pub mod error;
pub mod exec_policy;
pub mod launch;
pub mod logger;
pub mod mr;
pub mod peer;
pub mod pod;
mod ptr;
pub mod replay;
pub mod scalar;
pub mod span;
pub mod stream;
pub mod testing;
pub mod uvector;

pub use buffer::DeviceBuffer;
pub use error::{Error, Result};
pub use pod::DevicePod;
pub use ptr::DevicePtr;
pub use scalar::DeviceScalar;
pub use span::{DeviceSpan, DeviceSpanMut, SpanInfo};
pub use stream::{CudaStream, CudaStreamPool, CudaStreamView, StreamRef};
pub use uvector::DeviceUvector;
