//! Interop with cudarc 0.19's safe driver API (feature `cudarc`): Rust GPU
//! code written with cudarc runs on rmm's memory, streams and scratch.
//!
//! cudarc has no allocator hook (a `CudaSlice` always frees itself), but
//! its copies, kernel launches and cuBLAS calls are generic over its
//! traits `DeviceSlice` / `DevicePtr` / `DevicePtrMut` and `PushKernelArg`.
//! This module implements them for views of rmm memory, and bridges the
//! streams. cudarc stays loaded at run time (`dynamic-loading`): building
//! needs no CUDA, and a program without a GPU gets errors, not a crash.
//!
//! | Concept | Where |
//! |---|---|
//! | An rmm stream that keeps cudarc's `Arc<CudaStream>` alive | [`CudaStream::from_cudarc`](crate::CudaStream::from_cudarc), [`StreamRef::from_cudarc`](crate::StreamRef::from_cudarc) |
//! | cudarc's stream back; an rmm stream lent to cudarc (`unsafe`) | [`CudaStream::cudarc`](crate::CudaStream::cudarc), [`CudaStreamView::to_cudarc_borrowed`](crate::CudaStreamView::to_cudarc_borrowed) |
//! | rmm memory where cudarc reads / writes device memory | [`CudarcView`], [`CudarcViewMut`]; `cudarc_view` / `cudarc_view_mut` on [`DeviceUvector`](crate::DeviceUvector), [`DeviceBuffer`](crate::DeviceBuffer), [`DeviceScalar`](crate::DeviceScalar) |
//! | Kernel arguments | `launch_builder(&f).arg(&view).arg(&mut view_mut)` |
//! | Scratch for device algorithms on a cudarc stream | [`ExecPolicy::new`](crate::exec_policy::ExecPolicy::new) with the view of a stream from `from_cudarc` |
//!
//! # The rules
//! * **One context per device.** rmm allocates, frees and records events
//!   in each device's primary context; cudarc's `CudaContext::new` uses the
//!   same one. A stream or context of any other context (e.g.
//!   `CudaContext::new_non_primary`) is refused with
//!   [`Error::Logic`](crate::Error::Logic), and so is a stream of another
//!   device than the memory's.
//! * **Stream order, as [`DeviceBuffer::access`](crate::DeviceBuffer::access).**
//!   Making a view orders cudarc's stream after the container's stream;
//!   dropping it orders the container's stream after everything cudarc
//!   queued through the view, so the memory is not freed or reused before
//!   cudarc's work on it has run. cudarc work on a *different* cudarc stream
//!   than the view's waits for the view's stream, and the host waits for it
//!   before the call returns. A kernel launched with a view as argument is
//!   ordered when it runs on the view's stream (cudarc's `launch` is
//!   `unsafe`: other streams are the caller's to order).
//! * **Borrows.** A view borrows its container, so the container cannot be
//!   dropped, resized or written through rmm while cudarc may use it.
//! * **Real memory only.** Simulated memory is refused with
//!   [`Error::InvalidArgument`](crate::Error::InvalidArgument).
//!
//! ```no_run
//! use cudarc::driver::CudaContext;
//! use rmm::mr::{CudaMemoryResource, PoolMemoryResource, PoolOptions};
//! use rmm::{CudaStream, DeviceUvector};
//!
//! let ctx = CudaContext::new(0).expect("a GPU");
//! let cu_stream = ctx.new_stream().expect("a stream");
//! // rmm allocates and frees on cudarc's stream, from a pool.
//! let stream = CudaStream::from_cudarc(cu_stream.clone())?;
//! let pool = PoolMemoryResource::new(CudaMemoryResource::new(), PoolOptions::default())?;
//! let mut v = DeviceUvector::<f32>::with_resource(1024, stream.view(), pool)?;
//! {
//!     let mut view = v.cudarc_view_mut(&cu_stream)?;
//!     cu_stream.memset_zeros(&mut view).expect("memset");
//!     cu_stream.memcpy_htod(&[1.0f32, 2.0, 3.0], &mut view).expect("copy");
//! }
//! let back = cu_stream.clone_dtoh(&v.cudarc_view(&cu_stream)?).expect("copy back");
//! assert_eq!(&back[..4], &[1.0, 2.0, 3.0, 0.0]);
//! # Ok::<(), rmm::Error>(())
//! ```
//!
//! # What the types forbid
//! A view cannot outlive its container:
//! ```compile_fail,E0597
//! # fn f(s: &std::sync::Arc<cudarc::driver::CudaStream>) -> rmm::Result<()> {
//! let view = {
//!     let v = rmm::DeviceUvector::<f32>::new(4, rmm::CudaStreamView::DEFAULT)?;
//!     v.cudarc_view(s)?
//! }; // `v` freed here, while cudarc could still read it
//! # drop(view); Ok(()) }
//! ```
//! rmm cannot write the memory while a cudarc view of it lives:
//! ```compile_fail,E0502
//! # fn f(s: &std::sync::Arc<cudarc::driver::CudaStream>) -> rmm::Result<()> {
//! let mut v = rmm::DeviceUvector::<f32>::new(4, rmm::CudaStreamView::DEFAULT)?;
//! let view = v.cudarc_view(s)?;
//! v.copy_from_host(&[1.0; 4], rmm::CudaStreamView::DEFAULT)?;
//! # drop(view); Ok(()) }
//! ```
//! Nor can two views alias when one writes:
//! ```compile_fail,E0502
//! # fn f(s: &std::sync::Arc<cudarc::driver::CudaStream>) -> rmm::Result<()> {
//! let mut v = rmm::DeviceUvector::<f32>::new(4, rmm::CudaStreamView::DEFAULT)?;
//! let read = v.cudarc_view(s)?;
//! let write = v.cudarc_view_mut(s)?;
//! # drop((read, write)); Ok(()) }
//! ```
//! A read-only view is no destination for cudarc's writes:
//! ```compile_fail,E0277
//! # fn f(s: &std::sync::Arc<cudarc::driver::CudaStream>) -> rmm::Result<()> {
//! let v = rmm::DeviceUvector::<f32>::new(4, rmm::CudaStreamView::DEFAULT)?;
//! s.memset_zeros(&mut v.cudarc_view(s)?).unwrap();
//! # Ok(()) }
//! ```
//! A stream made from cudarc's cannot outlive the borrow of a view of it:
//! ```compile_fail,E0597
//! # fn f(s: std::sync::Arc<cudarc::driver::CudaStream>) -> rmm::Result<()> {
//! let view = {
//!     let stream = rmm::CudaStream::from_cudarc(s)?;
//!     stream.view()
//! };
//! # drop(view); Ok(()) }
//! ```

mod containers;
mod context;
mod error;
mod launch_arg;
mod order;
mod stream;
mod view;

pub use view::{CudarcView, CudarcViewMut};
