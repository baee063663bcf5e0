//! The current resource of each device (`rmm/mr/per_device_resource.hpp`).
//!
//! A process-wide map from device id to [`SharedResource`], guarded by a
//! mutex: every function here is thread safe. A device with no entry uses a
//! [`CudaMemoryResource`]. On a machine without a GPU the "current device"
//! is device 0, so the registry still works over simulated resources.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

use super::{CudaMemoryResource, MemoryResource, SharedResource};
use crate::device::{current_device, DeviceId};
use crate::error::{Error, Result};

fn registry() -> MutexGuard<'static, HashMap<DeviceId, SharedResource>> {
    static MAP: OnceLock<Mutex<HashMap<DeviceId, SharedResource>>> = OnceLock::new();
    MAP.get_or_init(|| Mutex::new(HashMap::new()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

fn initial_resource() -> SharedResource {
    static INITIAL: OnceLock<SharedResource> = OnceLock::new();
    INITIAL
        .get_or_init(|| SharedResource::new(CudaMemoryResource::new()))
        .clone()
}

fn current_or_zero() -> DeviceId {
    current_device().unwrap_or(DeviceId(0))
}

/// The resource of `device` (the cuda resource when none was set).
pub fn per_device_resource(device: DeviceId) -> SharedResource {
    registry().entry(device).or_insert_with(initial_resource).clone()
}

/// Makes `resource` the resource of `device`; returns the previous one so
/// that the caller can restore it.
///
/// # Errors
/// [`Error::Logic`] when `resource` is bound to another device (it was
/// created while another device was current).
///
/// ```
/// use rmm::device::DeviceId;
/// use rmm::mr::{per_device_resource, set_per_device_resource, SharedResource, SimulatedMemoryResource};
/// let sim = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
/// let old = set_per_device_resource(DeviceId(7), sim.clone())?;
/// assert!(per_device_resource(DeviceId(7)).ptr_eq(&sim));
/// set_per_device_resource(DeviceId(7), old)?;
/// # Ok::<(), rmm::Error>(())
/// ```
pub fn set_per_device_resource(device: DeviceId, resource: SharedResource) -> Result<SharedResource> {
    if let Some(bound) = resource.device() {
        if bound != device {
            return Err(Error::Logic(format!(
                "a resource created for {bound} cannot be the resource of {device}"
            )));
        }
    }
    let mut map = registry();
    let previous = map.insert(device, resource);
    Ok(previous.unwrap_or_else(initial_resource))
}

/// Restores the initial cuda resource for `device`; returns the previous one.
pub fn reset_per_device_resource(device: DeviceId) -> SharedResource {
    registry()
        .insert(device, initial_resource())
        .unwrap_or_else(initial_resource)
}

/// The resource of the current device.
pub fn current_device_resource() -> SharedResource {
    per_device_resource(current_or_zero())
}

/// Sets the resource of the current device; returns the previous one.
///
/// # Errors
/// As [`set_per_device_resource`].
pub fn set_current_device_resource(resource: SharedResource) -> Result<SharedResource> {
    set_per_device_resource(current_or_zero(), resource)
}

/// Restores the cuda resource for the current device; returns the previous one.
pub fn reset_current_device_resource() -> SharedResource {
    reset_per_device_resource(current_or_zero())
}

/// True when `resource` is the initial (cuda) resource.
pub fn is_initial_resource(resource: &dyn MemoryResource) -> bool {
    resource.downcast_ref::<CudaMemoryResource>().is_some()
}
