//! Devices: the current device, device count, a set-and-restore guard and
//! free/total memory (`rmm/cuda_device.hpp`).
#![forbid(unsafe_code)]

use crate::align::{align_down, CUDA_ALLOCATION_ALIGNMENT};
use crate::driver;
use crate::error::{Error, Result};

/// A CUDA device ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId(pub i32);

impl DeviceId {
    /// The ordinal as an `i32`, as the driver takes it.
    pub const fn value(self) -> i32 {
        self.0
    }
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "device {}", self.0)
    }
}

/// Loads the CUDA driver library and initialises the driver (once per
/// process; later calls return the first answer). Every call that needs the
/// driver does this itself; call it to learn *why* no GPU is usable.
///
/// # Errors
/// [`Error::DriverUnavailable`] when the driver library (`libcuda.so.1`)
/// cannot be loaded or lacks an entry point `rmm` uses; the driver's error
/// (e.g. `CUDA_ERROR_NO_DEVICE`) when it loads but cannot initialise.
///
/// ```
/// // Runs anywhere: without a driver this says which library is missing.
/// if let Err(e) = rmm::device::init_driver() {
///     println!("no usable GPU: {e}");
/// }
/// ```
pub fn init_driver() -> Result<()> {
    driver::init()
}

/// True once this process has called into the CUDA driver, or tried to
/// (every driver call of `rmm` first loads and initialises the driver, which
/// this reports); false while nothing has: e.g. after work on simulated
/// resources only, or a dry run ([`crate::dry_run`]).
///
/// ```
/// use rmm::mr::{MemoryResource, SimulatedMemoryResource};
/// let sim = SimulatedMemoryResource::new(1 << 20);
/// let p = sim.allocate(256, 256, rmm::CudaStreamView::DEFAULT)?;
/// unsafe { sim.deallocate(p, 256, 256, rmm::CudaStreamView::DEFAULT) };
/// assert!(!rmm::device::driver_called()); // simulated memory needs no driver
/// let _ = rmm::device::device_count();
/// assert!(rmm::device::driver_called());
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn driver_called() -> bool {
    driver::init_attempted()
}

/// True when the driver loads and reports at least one GPU.
///
/// ```
/// // Runs anywhere: on a machine without a GPU this is simply false.
/// let _ = rmm::device::is_available();
/// ```
pub fn is_available() -> bool {
    driver::device_count() > 0
}

/// Number of CUDA devices (0 without a usable driver or GPU).
pub fn device_count() -> usize {
    driver::device_count()
}

/// The device current on this thread (device 0 until another is set).
///
/// # Errors
/// The driver's error when no GPU is usable.
pub fn current_device() -> Result<DeviceId> {
    driver::current_device().map(DeviceId)
}

/// True when `device` is device 0 and the only visible device: every
/// context is then its context, so a resource of it needs no device check.
#[inline]
fn is_only_device(device: DeviceId) -> bool {
    device == DeviceId(0) && driver::device_count() == 1
}

/// Reports `what`, a resource of `device`, used while another device is
/// current.
///
/// With one visible device every context is that device's, so the check
/// cannot fail and asks the driver nothing: not `cuCtxGetDevice`, which
/// `cuda_async` would pay on every allocate and deallocate
/// (`benches/cuda_async_parts.rs` measures it), and not whether a context
/// is current either. The driver calls that follow make one current where
/// the thread has none (`driver::ensure_context`, `driver::with_context`).
///
/// # Errors
/// [`Error::Logic`] naming both devices; the driver's
/// error when no GPU is usable.
#[inline]
pub(crate) fn ensure_current(what: &str, device: DeviceId) -> Result<()> {
    if is_only_device(device) {
        return Ok(());
    }
    ensure_current_of_several(what, device)
}

/// [`ensure_current`] with more than one visible device: asks the driver.
#[cold]
fn ensure_current_of_several(what: &str, device: DeviceId) -> Result<()> {
    let current = current_device()?;
    if current != device {
        return Err(crate::Error::Logic(format!(
            "{what} belongs to {device} but {current} is current: make its device current first"
        )));
    }
    Ok(())
}

/// Makes `device` current on this thread (like `cudaSetDevice`).
///
/// # Errors
/// [`Error::InvalidArgument`] for a device that does not exist.
pub fn set_current_device(device: DeviceId) -> Result<()> {
    driver::set_current_device(device.0)
}

/// `(free, total)` memory of the current device, in bytes.
pub fn available_device_memory() -> Result<(usize, usize)> {
    driver::mem_get_info()
}

/// `percent`% of the current device's free memory, rounded down to 256 bytes.
///
/// # Errors
/// [`Error::InvalidArgument`] when `percent` exceeds 100.
pub fn percent_of_free_device_memory(percent: u32) -> Result<usize> {
    if percent > 100 {
        return Err(Error::InvalidArgument(format!("percent {percent} > 100")));
    }
    let (free, _) = available_device_memory()?;
    let bytes = (free as u128 * percent as u128 / 100) as usize;
    Ok(align_down(bytes, CUDA_ALLOCATION_ALIGNMENT))
}

/// Blocks until all work on the current device has finished
/// (`cuCtxSynchronize`).
///
/// # Errors
/// The driver's error (no GPU, an earlier kernel fault).
pub fn synchronize() -> Result<()> {
    driver::device_synchronize()
}

/// Whether `device` supports concurrent access to managed memory (needed to
/// prefetch it).
///
/// # Errors
/// The driver's error (no such device).
pub fn supports_concurrent_managed_access(device: DeviceId) -> Result<bool> {
    driver::supports_concurrent_managed_access(device.0)
}

/// Whether `device` can access pageable host memory (plain `malloc`
/// memory): `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`, needed by
/// [`SystemMemoryResource`](crate::mr::SystemMemoryResource) and
/// [`SamHeadroomMemoryResource`](crate::mr::SamHeadroomMemoryResource).
/// True with address translation services (Grace Hopper) or Linux HMM.
///
/// # Errors
/// The driver's error (no such device).
pub fn supports_pageable_memory_access(device: DeviceId) -> Result<bool> {
    driver::supports_pageable_memory_access(device.0)
}

/// Whether `device` can export driver pools as POSIX file descriptors, for
/// sharing them with other processes ([`crate::mr::ImportedPool`]).
///
/// # Errors
/// The driver's error (no such device).
pub fn supports_pool_export_posix_fd(device: DeviceId) -> Result<bool> {
    driver::supports_posix_fd_pools(device.0)
}

pub use crate::driver::PointerKind;

/// What the driver knows about the address `ptr` (any value: unknown
/// addresses are [`PointerKind::Unknown`]).
///
/// # Errors
/// The driver's error (no GPU).
pub fn pointer_kind(ptr: u64) -> Result<PointerKind> {
    driver::pointer_kind(ptr)
}

/// The device that `[ptr, ptr + bytes)` of managed memory was last
/// prefetched to: a device ordinal, `-1` for the host, `-2` when never
/// prefetched or prefetched to different places. A query only.
///
/// # Errors
/// The driver's error (e.g. a range that is not managed memory).
pub fn last_prefetch_location(ptr: crate::DevicePtr, bytes: usize) -> Result<i32> {
    driver::mem_range_last_prefetch_location(ptr, bytes)
}

/// Prefetches `[ptr, ptr + bytes)` of managed memory to `device` on
/// `stream` (`cuMemPrefetchAsync`), as RMM's `rmm::prefetch`. A no-op for
/// memory that is not managed, for zero bytes, and on devices without
/// concurrent managed access (where the driver cannot prefetch).
///
/// # Errors
/// The driver's error (no GPU, a bad device ordinal).
///
/// ```no_run
/// use rmm::device::{prefetch, DeviceId};
/// use rmm::mr::{ManagedMemoryResource, MemoryResource};
/// use rmm::CudaStreamView;
/// let mr = ManagedMemoryResource::new();
/// let p = mr.allocate(1 << 20, 256, CudaStreamView::DEFAULT)?;
/// prefetch(p, 1 << 20, DeviceId(0), CudaStreamView::DEFAULT)?;
/// unsafe { mr.deallocate(p, 1 << 20, 256, CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn prefetch(
    ptr: crate::DevicePtr,
    bytes: usize,
    device: DeviceId,
    stream: crate::CudaStreamView<'_>,
) -> Result<()> {
    if bytes == 0 || ptr.is_null() || !supports_concurrent_managed_access(device)? {
        return Ok(());
    }
    match stream.prefetch(ptr, bytes, device.0) {
        // Not managed memory: nothing to prefetch.
        Err(Error::Cuda { code: 1, .. }) => Ok(()),
        other => other,
    }
}

/// Makes a device current for its lifetime and restores the previous one on
/// drop (`cuda_set_device_raii`). Not `Send`: the current device is a
/// per-thread setting.
///
/// ```no_run
/// use rmm::device::{current_device, DeviceGuard, DeviceId};
/// let before = current_device()?;
/// {
///     let _g = DeviceGuard::new(DeviceId(0))?;
///     assert_eq!(current_device()?, DeviceId(0));
/// }
/// assert_eq!(current_device()?, before);
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct DeviceGuard {
    previous: DeviceId,
    switched: bool,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl DeviceGuard {
    /// Switches to `device` (a no-op when it is already current).
    ///
    /// # Errors
    /// The driver's error, or [`Error::InvalidArgument`] for a bad ordinal.
    pub fn new(device: DeviceId) -> Result<Self> {
        let previous = current_device()?;
        let switched = previous != device;
        if switched {
            set_current_device(device)?;
        }
        Ok(DeviceGuard {
            previous,
            switched,
            _not_send: std::marker::PhantomData,
        })
    }
}

impl Drop for DeviceGuard {
    fn drop(&mut self) {
        if self.switched {
            if let Err(e) = set_current_device(self.previous) {
                log::error!("DeviceGuard could not restore {}: {e}", self.previous);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_check_passes_the_current_device_and_names_another() {
        crate::require_gpu!();
        set_current_device(DeviceId(0)).unwrap();
        // Device 0 on one visible device takes the check's fast path; on
        // two it asks the driver. Device 1 always asks (and is not current).
        ensure_current("TestResource", DeviceId(0)).unwrap();
        let e = ensure_current("TestResource", DeviceId(1)).unwrap_err();
        assert!(
            matches!(e, Error::Logic(_)) && e.to_string().contains("TestResource belongs to"),
            "{e}"
        );
    }
}
