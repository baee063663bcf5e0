//! Where the time of a `cuda_async` allocate/deallocate pair goes: the
//! `hot_pair` workload of `shared/anchors/WORKLOADS.md` (200 000 pairs on one
//! non-default stream) over the same driver pool, one layer added at a time:
//!
//! | layer | what runs per pair |
//! |---|---|
//! | `driver` | `cuMemAllocFromPoolAsync` + `cuMemFreeAsync`, raw (cudarc's `sys`) |
//! | `driver+device_query` | the same plus one `cuCtxGetDevice` per call, the check that the resource's device is current |
//! | `driver+context_query` | the same plus one `cuCtxGetCurrent` per call: a cheaper check to weigh for several devices (compare the current context with the device's primary one) |
//! | `resource` | `CudaAsyncMemoryResource::allocate` / `deallocate` called directly (with one visible device its device check asks the driver nothing: `device::ensure_current`) |
//! | `shared` | the same resource behind `SharedResource` (`dyn MemoryResource`), as `alloc_workloads` and every container call it |
//!
//! Each layer runs `ROUNDS` times, interleaved with the others (the spread
//! between runs of one layer is larger than the differences measured), and
//! the row gives the best and the median round. CSV on stdout:
//! `layer,size,best_ns_per_op,median_ns_per_op` (an op is one allocate or one
//! deallocate, as in WORKLOADS.md). Needs a GPU.
#![allow(unsafe_code)]

use std::time::Instant;

use cudarc::driver::sys as cu;
use rmm::mr::{CudaAsyncMemoryResource, MemoryResource, SharedResource};
use rmm::CudaStream;

const PAIRS: usize = 200_000;
const ROUNDS: usize = 7;
const ALIGN: usize = 256;

/// The per-call query a `driver*` layer adds before each driver call.
#[derive(Clone, Copy)]
enum Query {
    None,
    Device,
    Context,
}

#[inline(always)]
fn query(q: Query) {
    let mut dev = 0;
    let mut ctx: cu::CUcontext = std::ptr::null_mut();
    match q {
        Query::None => {}
        // SAFETY: a valid out-pointer; a context is current (the resource made it).
        Query::Device => unsafe {
            cu::cuCtxGetDevice(&mut dev);
        },
        // SAFETY: a valid out-pointer.
        Query::Context => unsafe {
            cu::cuCtxGetCurrent(&mut ctx);
        },
    }
}

fn driver_pairs(pool: usize, stream: usize, size: usize, q: Query) -> f64 {
    let t0 = Instant::now();
    for _ in 0..PAIRS {
        let mut p: cu::CUdeviceptr = 0;
        query(q);
        // SAFETY: `pool` and `stream` are live handles of the current device;
        // `p` is a valid out-pointer.
        let r = unsafe { cu::cuMemAllocFromPoolAsync(&mut p, size, pool as _, stream as _) };
        assert_eq!(r, cu::CUresult::CUDA_SUCCESS, "cuMemAllocFromPoolAsync");
        query(q);
        // SAFETY: `p` was just allocated on `stream` and is unused.
        let r = unsafe { cu::cuMemFreeAsync(p, stream as _) };
        assert_eq!(r, cu::CUresult::CUDA_SUCCESS, "cuMemFreeAsync");
    }
    t0.elapsed().as_secs_f64()
}

fn resource_pairs<R: MemoryResource + ?Sized>(mr: &R, stream: rmm::CudaStreamView, size: usize) -> f64 {
    let t0 = Instant::now();
    for _ in 0..PAIRS {
        let p = mr.allocate(size, ALIGN, stream).expect("allocate");
        // SAFETY: `p` came from `mr` with these arguments and is unused.
        unsafe { mr.deallocate(p, size, ALIGN, stream) };
    }
    t0.elapsed().as_secs_f64()
}

fn main() {
    if !rmm::device::is_available() {
        eprintln!("cuda_async_parts: no GPU, nothing to measure");
        return;
    }
    let mr = CudaAsyncMemoryResource::new().expect("cuda_async");
    let shared = SharedResource::new(mr.clone());
    let stream = CudaStream::new().expect("stream");
    let (pool, raw) = (mr.pool_handle(), stream.view().as_raw());
    println!("layer,size,best_ns_per_op,median_ns_per_op");
    for size in [256usize, 1 << 20] {
        let layers = [
            "driver",
            "driver+device_query",
            "driver+context_query",
            "resource",
            "shared",
        ];
        let mut secs: Vec<Vec<f64>> = vec![Vec::new(); layers.len()];
        for _ in 0..ROUNDS {
            for (i, layer) in layers.iter().enumerate() {
                let s = match *layer {
                    "driver" => driver_pairs(pool, raw, size, Query::None),
                    "driver+device_query" => driver_pairs(pool, raw, size, Query::Device),
                    "driver+context_query" => driver_pairs(pool, raw, size, Query::Context),
                    "resource" => resource_pairs(&mr, stream.view(), size),
                    _ => resource_pairs(shared.inner(), stream.view(), size),
                };
                stream.synchronize().expect("synchronize");
                secs[i].push(s);
            }
        }
        for (layer, mut v) in layers.iter().zip(secs) {
            v.sort_by(f64::total_cmp);
            let ns = |s: f64| s * 1e9 / (2 * PAIRS) as f64;
            println!("{layer},{size},{:.1},{:.1}", ns(v[0]), ns(v[v.len() / 2]));
        }
    }
}
