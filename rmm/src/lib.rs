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
//! | Base resources (cuda, managed, cuda_async, pinned, system, SAM headroom, callback, simulated) | [`mr`] |
//! | Adaptors (aligned, failure callback, limiting, logging, prefetch, statistics, thread safe, tracking) | [`mr::adaptors`] |
//! | Debug log through the `log` facade | [`logger`] |
//! | Environment variables the library reads | [`env`](mod@env) |
//! | Current resource per device | [`mr::per_device`] |
//! | Containers: untyped bytes, typed vector, one value | [`DeviceBuffer`], [`DeviceUvector`], [`DeviceScalar`] |
//! | Element types of the typed containers (every bit pattern valid) | [`DevicePod`] |
//! | Streams: shared owner, borrowed view, owned reference, pool | [`CudaStream`], [`CudaStreamView`], [`StreamRef`], [`CudaStreamPool`] |
//! | rmm memory and streams under cudarc (feature `cudarc`) | [`interop`] |
//! | Devices | [`device`] |
//! | Kernel modules, launches, timing events, raw copies (the driver layer is private) | [`launch`] |
//! | Your own device work on a container's memory, ordered with its stream | [`DeviceBuffer::access`], [`DeviceBuffer::access_all`]; spans: [`exec_policy::ExecPolicy::launch_ordered`] |
//! | Addresses | [`DevicePtr`] |
//! | Errors | [`Error`], [`Result`] |
//! | Sub-allocations compute-sanitizer can see (NVTX memory annotations) | [`nvtx`] |
//! | Execution policy, scratch, typed stream-ordered allocators | [`exec_policy`] |
//! | CUDA graph capture: capture once, replay many times | [`graph`] |
//! | Dry runs: an algorithm's scratch peak and smallest pool, without a GPU | [`dry_run`] |
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
//!
//! # The driver
//! The CUDA driver library (`libcuda.so.1`) is loaded at run time, at the
//! first call that needs it: building needs nothing of CUDA, and a program
//! starts on a machine without the NVIDIA driver. There every call that
//! needs the driver returns [`Error::DriverUnavailable`] (naming the missing
//! library), [`device::device_count`] is 0, and the simulated resource works.
//!
//! # Features
//! * `cust`: interop with Rust-CUDA's `cust` 0.3 (stream and pointer
//!   conversions such as `CudaStream::as_cust` / `into_cust`, the
//!   `DeviceCopy`-typed `as_cust_ptr`, `DeviceUvector::from_cust` /
//!   `into_cust`). cust links `libcuda` at build time (set
//!   `CUDA_LIBRARY_PATH`), so binaries built with it need the driver to
//!   start. Off by default; without it no type of the public API comes from
//!   a driver binding.
//! * `cudarc`: interop with cudarc 0.19's safe driver API
//!   (`rmm::interop::cudarc`): streams made from cudarc's `Arc<CudaStream>`,
//!   containers and spans as cudarc device memory (`DevicePtr`,
//!   `DevicePtrMut`, kernel arguments), stream-ordered with rmm's streams.
//!   cudarc stays loaded at run time; nothing of its safe API is in rmm's
//!   public API without the feature.
//! * `fault-injection` (tests only): `rmm::fault` fails chosen driver calls
//!   before they are made and wraps resources in a failing upstream. Off by
//!   default and compiled out; rmm's own tests turn it on (a
//!   dev-dependency on itself).

pub mod align;
pub mod buffer;
pub mod device;
pub(crate) mod driver;
pub mod dry_run;
pub mod env;
pub mod error;
pub mod exec_policy;
#[cfg(feature = "fault-injection")]
pub mod fault;
pub mod graph;
pub mod interop;
pub mod launch;
pub mod logger;
pub mod mr;
pub mod nvtx;
pub mod peer;
pub mod pod;
mod ptr;
pub mod scalar;
pub mod span;
pub mod stream;
pub mod uvector;

pub use buffer::DeviceBuffer;
pub use error::{Error, Result};
pub use pod::DevicePod;
pub use ptr::DevicePtr;
pub use scalar::DeviceScalar;
pub use span::{DeviceSpan, DeviceSpanMut, SpanInfo};
pub use stream::{CudaStream, CudaStreamPool, CudaStreamView, StreamRef};
pub use uvector::DeviceUvector;

// The unit tests skip without a GPU through rmm-testing, the skip logic of
// every other test: its macros ask `::rmm::device`, which is this crate here.
// rmm-testing does not depend on rmm, so no second copy of rmm comes in.
#[cfg(test)]
extern crate self as rmm;
#[cfg(test)]
pub(crate) use crate::gpu_turn::require_gpu;

/// The unit tests that use the GPU take turns ([`require_gpu`] holds the
/// turn until the end of the test): a capture in one test is invalidated by
/// a device-wide synchronisation in another, and that synchronisation is
/// refused (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`) while the capture
/// lasts. Under compute-sanitizer, which slows every call, a pool test's
/// `cuCtxSynchronize` and a capture test met that way (H200, 2026-12-02).
#[cfg(test)]
mod gpu_turn {
    use std::sync::{Mutex, MutexGuard};

    static TURN: Mutex<()> = Mutex::new(());

    /// This test's turn on the GPU (a failed test's poisoned turn is
    /// taken over: the turn guards no data).
    pub(crate) fn take() -> MutexGuard<'static, ()> {
        TURN.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `rmm_testing::require_gpu!()`, then the GPU turn, held until the
    /// end of the enclosing test.
    macro_rules! require_gpu {
        () => {
            rmm_testing::require_gpu!();
            let _gpu_turn = $crate::gpu_turn::take();
        };
    }
    pub(crate) use require_gpu;
}
