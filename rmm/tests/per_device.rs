//! The per-device current resource. Its own binary: it changes the
//! process-wide registry.

use std::sync::Mutex;

use rmm::device::DeviceId;
use rmm::mr::{
    current_device_resource, per_device, per_device_resource, reset_current_device_resource,
    reset_per_device_resource, set_current_device_resource, set_per_device_resource, CudaAsyncMemoryResource,
    CudaMemoryResource, MemoryResource, SharedResource, SimulatedMemoryResource,
};
use rmm::Error;

/// Tests here share the registry: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn default_is_the_cuda_resource() {
    let _l = lock();
    reset_current_device_resource();
    let r = current_device_resource();
    assert!(per_device::is_initial_resource(&r));
    assert!(r.is_equal(&CudaMemoryResource::new()));
}

#[test]
fn set_returns_previous_and_reset_restores() {
    let _l = lock();
    let sim = SharedResource::new(SimulatedMemoryResource::new(1 << 30));
    let previous = set_current_device_resource(sim.clone()).unwrap();
    assert!(current_device_resource().ptr_eq(&sim));
    let sim2 = SharedResource::new(SimulatedMemoryResource::new(1 << 30));
    let back = set_current_device_resource(sim2.clone()).unwrap();
    assert!(back.ptr_eq(&sim));
    let reset_prev = reset_current_device_resource();
    assert!(reset_prev.ptr_eq(&sim2));
    assert!(per_device::is_initial_resource(&current_device_resource()));
    set_current_device_resource(previous).unwrap();
}

#[test]
fn devices_are_isolated() {
    let _l = lock();
    let a = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
    let b = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
    set_per_device_resource(DeviceId(3), a.clone()).unwrap();
    set_per_device_resource(DeviceId(4), b.clone()).unwrap();
    assert!(per_device_resource(DeviceId(3)).ptr_eq(&a));
    assert!(per_device_resource(DeviceId(4)).ptr_eq(&b));
    assert!(per_device::is_initial_resource(&per_device_resource(DeviceId(5))));
    assert!(reset_per_device_resource(DeviceId(3)).ptr_eq(&a));
    assert!(per_device_resource(DeviceId(4)).ptr_eq(&b));
    reset_per_device_resource(DeviceId(4));
}

#[test]
fn eight_threads_set_and_get_concurrently() {
    let _l = lock();
    std::thread::scope(|s| {
        for t in 0..8 {
            s.spawn(move || {
                let id = DeviceId(100 + t);
                for _ in 0..200 {
                    let mine = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
                    set_per_device_resource(id, mine.clone()).unwrap();
                    assert!(
                        per_device_resource(id).ptr_eq(&mine),
                        "thread {t} saw another thread's resource"
                    );
                }
                reset_per_device_resource(id);
            });
        }
    });
}

#[test]
fn resource_bound_to_another_device_is_refused() {
    let _l = lock();
    rmm_testing::require_gpu!();
    // A driver-pool resource is bound to the device current at creation (0).
    let mr = SharedResource::new(CudaAsyncMemoryResource::new().unwrap());
    let r = set_per_device_resource(DeviceId(1), mr.clone());
    assert!(matches!(r, Err(Error::Logic(_))), "{r:?}");
    let prev = set_per_device_resource(DeviceId(0), mr.clone()).unwrap();
    let p = current_device_resource()
        .allocate(1 << 20, 256, rmm::CudaStreamView::DEFAULT)
        .unwrap();
    // SAFETY: allocated just above from the same resource.
    unsafe { mr.deallocate(p, 1 << 20, 256, rmm::CudaStreamView::DEFAULT) };
    set_per_device_resource(DeviceId(0), prev).unwrap();
}
