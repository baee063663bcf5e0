//! Driver memory pools are made once and recycled, never destroyed while the
//! process runs.
//!
//! Why: the CUDA driver (580.159.04 on H200, `repro/README.md`) deadlocks when
//! several threads create and destroy driver pools around work on the legacy
//! default stream (mixes `W`, `N` and `F` of `repro/driver_stall.c`: every
//! thread ends in `cuStreamSynchronize` or `cuMemFreeAsync` waiting for the
//! driver's own locks), while the same calls over pools that stay alive
//! (mixes `f`, `g`, and `r`, which recycles pools as this module does) run
//! without a stall. A [`CudaAsyncMemoryResource`](crate::mr::CudaAsyncMemoryResource)
//! is a cheap object that programs and tests make and drop freely, so its
//! pool outlives it here: when the last clone goes, the pool's unused memory
//! is given back to the driver (`cuMemPoolTrimTo(pool, 0)`), its settings
//! are reset to the driver's defaults, and it waits in a process-wide list
//! for the next resource of the same device and export handle type.
//!
//! The list holds at most as many pools as were ever alive at once. A pool
//! is trimmed when it is given back and again when it is taken, so memory
//! whose free was still in flight at the first trim is returned by the
//! second; between owners a pool holds at most that memory.
//!
//! Lock: `IDLE` is a leaf, held only to push or pop one entry; no driver call
//! is made under it.

use std::sync::Mutex;

use crate::device::{DeviceGuard, DeviceId};
use crate::driver::{self, PoolAttribute, PoolHandle};
use crate::error::Result;

/// A pool waiting for its next owner.
struct IdlePool {
    device: DeviceId,
    handle_types: u32,
    pool: PoolHandle,
}

static IDLE: Mutex<Vec<IdlePool>> = Mutex::new(Vec::new());

/// A pool of `device` whose memory can be exported as `handle_types`: a
/// recycled one if one waits, otherwise a new one (`cuMemPoolCreate`).
///
/// # Errors
/// The driver's error when a new pool cannot be made.
pub(crate) fn take(device: DeviceId, handle_types: u32) -> Result<PoolHandle> {
    let recycled = {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        idle.iter()
            .rposition(|p| p.device == device && p.handle_types == handle_types)
            .map(|i| idle.swap_remove(i).pool)
    };
    match recycled {
        Some(pool) => {
            let _guard = DeviceGuard::new(device)?;
            // SAFETY: a listed pool is live (pools in `IDLE` are never
            // destroyed) and now ours alone.
            unsafe { driver::mem_pool_trim_to(pool, 0)? };
            Ok(pool)
        }
        None => driver::mem_pool_create(device.0, handle_types),
    }
}

/// Takes back a pool whose last owner is gone. Never panics; a pool that
/// cannot be reset is logged and destroyed instead.
///
/// # Safety
/// `pool` came from [`take`] with these arguments, is live, and is not used
/// after by its owner.
pub(crate) unsafe fn give_back(device: DeviceId, handle_types: u32, pool: PoolHandle) {
    let reset = (|| -> Result<()> {
        let _guard = DeviceGuard::new(device)?;
        // SAFETY: the caller's contract: `pool` is live and ours alone.
        unsafe { driver::mem_pool_trim_to(pool, 0)? };
        // The driver's defaults, so that the next owner starts from a pool
        // that behaves like a new one.
        for attr in [
            PoolAttribute::CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES,
            PoolAttribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
            PoolAttribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
        ] {
            // SAFETY: the caller's contract: `pool` is live and ours alone.
            unsafe { driver::mem_pool_set_i32(pool, attr, 1)? };
        }
        let threshold = PoolAttribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
        // SAFETY: the caller's contract: `pool` is live and ours alone.
        unsafe { driver::mem_pool_set_u64(pool, threshold, 0)? };
        for attr in [
            PoolAttribute::CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
            PoolAttribute::CU_MEMPOOL_ATTR_USED_MEM_HIGH,
        ] {
            // SAFETY: the caller's contract: `pool` is live and ours alone.
            unsafe { driver::mem_pool_set_u64(pool, attr, 0)? };
        }
        Ok(())
    })();
    match reset {
        Ok(()) => IDLE.lock().unwrap_or_else(|e| e.into_inner()).push(IdlePool {
            device,
            handle_types,
            pool,
        }),
        Err(e) => {
            log::error!("driver pool {pool:#x} of {device} cannot be reset ({e}); destroying it");
            // SAFETY: as above; the pool was not listed.
            unsafe { destroy(device, pool) };
        }
    }
}

/// Destroys `pool` of `device` (`cuMemPoolDestroy`); failures are logged.
///
/// # Safety
/// `pool` is live, its last owner is gone, and it is not in `IDLE`.
unsafe fn destroy(device: DeviceId, pool: PoolHandle) {
    let _guard = DeviceGuard::new(device);
    // SAFETY: the caller's contract: a live pool that nobody uses any more.
    if let Err(e) = unsafe { driver::mem_pool_destroy(pool) } {
        log::error!("driver pool {pool:#x} of {device}: cuMemPoolDestroy failed: {e}");
    }
}
