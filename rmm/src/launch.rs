//! Kernel modules, launches, timing events and raw stream-ordered copies for
//! sibling crates (the kernels of `rmm-suite`, benchmarks, tests).
//!
//! The raw driver layer of `rmm` is private; this is the public surface
//! over it. Handles are typed and owned ([`Module`], [`Function`],
//! [`Event`]), streams are [`CudaStreamView`]s (which cannot outlive their
//! stream), and every call that touches memory through a raw address is
//! `unsafe` with a `# Safety` contract.
//!
//! Work on the memory of a container goes inside
//! [`DeviceBuffer::access`](crate::DeviceBuffer::access) (or
//! [`access_all`](crate::DeviceBuffer::access_all) for several buffers),
//! which refuses simulated memory, makes the buffer's device current and
//! orders the work with the buffer's stream both ways, so the memory stays
//! allocated until the work has run; work on spans goes inside
//! [`ExecPolicy::launch_ordered`](crate::exec_policy::ExecPolicy::launch_ordered).
//!
//! The driver layer itself cannot be named from outside:
//!
//! ```compile_fail
//! let _ = rmm::driver::device_synchronize();
//! ```
//!
//! and a raw copy needs `unsafe`:
//!
//! ```compile_fail
//! let s = rmm::CudaStreamView::DEFAULT;
//! rmm::launch::memcpy_async(rmm::DevicePtr::new(0x1000), rmm::DevicePtr::new(0x2000), 8, s).unwrap();
//! ```

use std::ffi::{c_void, CStr};

use crate::device::DeviceId;
use crate::driver::{self, EventHandle, FunctionHandle, ModuleHandle};
use crate::error::Result;
use crate::graph::RelaxedCaptureMode;
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// A module loaded into the current context (`cuModuleLoadData`). Modules
/// are never unloaded (they live as long as the primary context, i.e. the
/// process), so the [`Function`]s looked up in them stay valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Module(ModuleHandle);

impl Module {
    /// Loads a PTX (or cubin) image, which must end with a NUL byte, into
    /// the current device's primary context. The driver compiles PTX for
    /// the device here (seconds for a large module); a cubin loads as is.
    ///
    /// Safe while a stream captures: the load runs in the driver's relaxed
    /// capture mode (`cuThreadExchangeStreamCaptureMode`), so a capture in global or
    /// thread-local mode neither refuses it nor is invalidated by it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) without the
    /// NUL; the driver's error (no GPU, an invalid image).
    pub fn load(image_nul_terminated: &[u8]) -> Result<Module> {
        let _relaxed = RelaxedCaptureMode::enter()?;
        driver::module_load_data(image_nul_terminated).map(Module)
    }

    /// The kernel named `name` (its unmangled symbol). With the driver's
    /// lazy loading this loads the kernel's code; like [`load`](Self::load)
    /// it runs in relaxed capture mode.
    ///
    /// # Errors
    /// The driver's error when no such kernel exists.
    pub fn function(&self, name: &CStr) -> Result<Function> {
        let _relaxed = RelaxedCaptureMode::enter()?;
        // SAFETY: a Module is made only by `load` and modules are never
        // unloaded, so its handle is live.
        unsafe { driver::module_get_function(self.0, name) }.map(Function)
    }
}

/// A kernel of a [`Module`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Function(FunctionHandle);

impl Function {
    /// How many blocks of `block_size` threads (with `dynamic_shared` bytes
    /// of dynamic shared memory) fit on one multiprocessor at once.
    ///
    /// # Errors
    /// The driver's error.
    pub fn max_active_blocks(self, block_size: u32, dynamic_shared: usize) -> Result<i32> {
        // SAFETY: a Function is made only by `Module::function`, from a
        // module that is never unloaded, so its handle is live.
        unsafe { driver::occupancy_max_active_blocks(self.0, block_size, dynamic_shared) }
    }

    /// Launches the kernel on `stream` (`cuLaunchKernel`).
    ///
    /// # Safety
    /// `params` holds one pointer per kernel parameter, each pointing to a
    /// value of exactly the parameter's type, and every memory access of the
    /// kernel is valid for the whole time it runs in `stream` order (the
    /// memory is allocated, of the right type, not written concurrently by
    /// other work, and not freed before the kernel has run). The current
    /// context is the module's.
    ///
    /// # Errors
    /// [`Error::Logic`](crate::Error::Logic) inside a dry run's launch
    /// closure ([`crate::dry_run`]); the driver's launch error.
    pub unsafe fn launch(
        self,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        shared_bytes: u32,
        stream: CudaStreamView<'_>,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        crate::dry_run::refuse_in_dry_run("a kernel launch")?;
        // SAFETY: forwarded contract; the function is live (its module is
        // never unloaded) and the stream is live for the borrow.
        unsafe { driver::launch_kernel(self.0, grid, block, shared_bytes, stream.handle(), params) }
    }
}

/// Number of multiprocessors of `device`.
///
/// # Errors
/// The driver's error (no such device).
pub fn multiprocessor_count(device: DeviceId) -> Result<i32> {
    driver::multiprocessor_count(device.value())
}

/// Compute capability `(major, minor)` of `device` (9.0 for an H200).
///
/// # Errors
/// The driver's error (no such device).
pub fn compute_capability(device: DeviceId) -> Result<(i32, i32)> {
    driver::compute_capability(device.value())
}

/// An owned CUDA event with timing enabled, for measuring GPU time between
/// two points of a stream. Destroyed on drop.
#[derive(Debug)]
pub struct Event(EventHandle);

impl Event {
    /// A new timing event in the current context.
    ///
    /// # Errors
    /// The driver's error (no GPU).
    pub fn timing() -> Result<Event> {
        driver::event_create(true).map(Event)
    }

    /// Records the event at the current end of `stream`.
    ///
    /// # Errors
    /// The driver's error.
    pub fn record(&self, stream: CudaStreamView<'_>) -> Result<()> {
        // SAFETY: `self` owns the event (destroyed only on drop); the stream
        // is live for the borrow.
        unsafe { driver::event_record(self.0, stream.handle()) }
    }

    /// Blocks until the work recorded before the event has finished.
    ///
    /// # Errors
    /// The driver's error.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: `self` owns the event (destroyed only on drop).
        unsafe { driver::event_synchronize(self.0) }
    }

    /// Milliseconds from `start` to this event (both recorded and complete).
    ///
    /// # Errors
    /// The driver's error (e.g. an event not yet recorded).
    pub fn elapsed_ms_since(&self, start: &Event) -> Result<f32> {
        // SAFETY: both events are owned by live `Event`s (destroyed only on
        // drop).
        unsafe { driver::event_elapsed_ms(start.0, self.0) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event was created by `timing` and is owned by `self`.
        if let Err(e) = unsafe { driver::event_destroy(self.0) } {
            log::error!("cuEventDestroy failed: {e}");
        }
    }
}

/// `cuMemcpyAsync` of `bytes` bytes from `src` to `dst`, any two addresses
/// of the unified address space (device, managed, pinned or pageable host
/// memory; the driver infers the direction), on `stream`. Zero bytes do
/// nothing.
///
/// # Safety
/// `[src, src + bytes)` is readable and `[dst, dst + bytes)` writable memory
/// that stays valid (and, for `dst`, not otherwise accessed) until the copy
/// has run in `stream` order; host memory here means: synchronise `stream`
/// before the host memory is used or freed.
///
/// # Errors
/// [`Error::Logic`](crate::Error::Logic) inside a dry run's launch closure
/// ([`crate::dry_run`]); the driver's error.
pub unsafe fn memcpy_async(
    dst: DevicePtr,
    src: DevicePtr,
    bytes: usize,
    stream: CudaStreamView<'_>,
) -> Result<()> {
    crate::dry_run::refuse_in_dry_run("a copy")?;
    // SAFETY: forwarded contract; the stream is live for the borrow.
    unsafe { driver::memcpy_async(dst.addr(), src.addr(), bytes, stream.handle()) }
}

/// Fills `count` elements of `element_size` (1, 2 or 4) bytes at `dst` with
/// `value` (`cuMemsetD{8,16,32}Async`) on `stream`.
///
/// # Safety
/// `[dst, dst + element_size * count)` is device memory, aligned to
/// `element_size`, that stays valid and not otherwise accessed until the
/// memset has run in `stream` order.
///
/// # Errors
/// [`Error::InvalidArgument`](crate::Error::InvalidArgument) for another
/// element size; [`Error::Logic`](crate::Error::Logic) inside a dry run's
/// launch closure ([`crate::dry_run`]); the driver's error.
pub unsafe fn memset_async(
    dst: DevicePtr,
    value: u32,
    element_size: usize,
    count: usize,
    stream: CudaStreamView<'_>,
) -> Result<()> {
    crate::dry_run::refuse_in_dry_run("a memset")?;
    // SAFETY: forwarded contract; the stream is live for the borrow.
    unsafe { driver::memset_async(dst.addr(), value, element_size, count, stream.handle()) }
}
