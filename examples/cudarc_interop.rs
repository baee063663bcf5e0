//! A cudarc program on rmm memory, streams and scratch.
//!
//! ```sh
//! cargo run --example cudarc_interop
//! ```
//!
//! One cudarc stream does everything: cudarc loads this crate's PTX and
//! launches its fill kernel on a vector from an rmm pool, cuBLAS multiplies
//! two matrices held in rmm vectors, and our radix sort runs on the same
//! stream with its scratch from the same pool (an `ExecPolicy` over the rmm
//! stream made from cudarc's). Each result is checked against the CPU. The
//! pool's counters show that every byte went back.
//!
//! cuBLAS is loaded at run time under the names cudarc's `cuda-12080`
//! bindings try: `libcublas.so` (a CUDA toolkit's development link, which
//! a CUDA 13 toolkit points at `libcublas.so.13`), then `libcublas.so.12`
//! and older. Where only `libcublas.so.13` exists, put a directory with a
//! `libcublas.so` link to it on `LD_LIBRARY_PATH` (README, "Using rmm with
//! cudarc"); the cuBLAS part says so and stops with an error otherwise.
//!
//! Without a GPU nothing of cudarc can run (its dynamic loader would not
//! find the driver): the example says so. `cargo test` runs it too (its GPU
//! half is then counted as a skipped GPU test, or fails under
//! `RMM_REQUIRE_GPU=1`).

use std::sync::Arc;

use approx::assert_relative_eq;
use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig};
use cudarc::driver::{CudaContext, CudaStream as CudarcStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use rayon::prelude::*;
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{CudaMemoryResource, PoolMemoryResource, PoolOptions, StatisticsAdaptor};
use rmm::{CudaStream, DeviceUvector, Error, Result};
use rmm_suite::sort::{sort_keys, Order};
use rmm_testing::SplitMix64;

type Pool = StatisticsAdaptor<PoolMemoryResource<CudaMemoryResource>>;

fn main() -> Result<()> {
    run()
}

/// The whole example: on the GPU when there is one.
fn run() -> Result<()> {
    if !rmm_testing::gpu_available!("example cudarc_interop (GPU half)") {
        println!("cudarc_interop: no GPU, so cudarc cannot run; nothing else to show");
        return Ok(());
    }
    let ctx = CudaContext::new(0)?;
    let cu_stream = ctx.new_stream()?;
    // rmm allocates, frees and orders its kernels on cudarc's stream.
    let stream = CudaStream::from_cudarc(cu_stream.clone())?;
    let pool = StatisticsAdaptor::new(PoolMemoryResource::new(
        CudaMemoryResource::new(),
        PoolOptions::default(),
    )?);
    println!("cudarc_interop: one cudarc stream on {}", ctx.name()?);

    fill_with_cudarc_kernel(&ctx, &cu_stream, &stream, &pool)?;
    sgemm_with_cublas(&cu_stream, &stream, &pool)?;
    sort_with_rmm_scratch(&cu_stream, &stream, &pool)?;

    cu_stream.synchronize()?;
    let bytes = pool.bytes_counter();
    println!(
        "  pool: peak {} KiB, {} bytes still held",
        bytes.peak / 1024,
        bytes.value
    );
    assert_eq!(bytes.value, 0, "every allocation went back to the pool");
    Ok(())
}

/// cudarc loads our PTX and launches `rmm_fill_u32` on an rmm vector.
fn fill_with_cudarc_kernel(
    ctx: &Arc<CudaContext>,
    cu: &Arc<CudarcStream>,
    stream: &CudaStream,
    pool: &Pool,
) -> Result<()> {
    const N: usize = 1 << 20;
    let module = ctx.load_module(Ptx::from_src(rmm_suite::kernels::PTX))?;
    let fill = module.load_function("rmm_fill_u32")?;
    let mut v = DeviceUvector::<u32>::with_resource(N, stream.view(), pool.clone())?;
    let value = 0xC0FF_EE00u32;
    {
        let mut view = v.cudarc_view_mut(cu)?;
        let n = N;
        let mut launch = cu.launch_builder(&fill);
        launch.arg(&mut view).arg(&n).arg(&value);
        // SAFETY: `rmm_fill_u32(ptr: *mut u32, n: usize, value: u32)` writes
        // the `N` elements of the view, on the view's own stream.
        unsafe { launch.launch(LaunchConfig::for_num_elems(N as u32)) }?;
    }
    let back = v.copy_to_host(stream.view())?;
    assert!(
        back.par_iter().all(|&x| x == value),
        "the cudarc-launched kernel filled the rmm vector"
    );
    println!("  rmm_fill_u32 (our PTX) launched by cudarc on {N} u32 of pool memory: checked");
    Ok(())
}

/// cuBLAS `C = A·B` on rmm vectors (row-major `m×k` times `k×n`, computed
/// as `Cᵀ = Bᵀ·Aᵀ` in cuBLAS's column-major order).
fn sgemm_with_cublas(cu: &Arc<CudarcStream>, stream: &CudaStream, pool: &Pool) -> Result<()> {
    let (m, k, n) = (192usize, 256usize, 128usize);
    // SAFETY: only tries to open the library under cudarc's names.
    if !unsafe { cudarc::cublas::sys::is_culib_present() } {
        return Err(Error::DriverUnavailable(
            "cuBLAS not found under cudarc's names (libcublas.so, libcublas.so.12, ...): \
             on CUDA 13 put a directory with a libcublas.so link to libcublas.so.13 on LD_LIBRARY_PATH"
                .into(),
        ));
    }
    let mut rng = SplitMix64(11);
    let a: Vec<f32> = (0..m * k).map(|_| rng.unit() as f32 - 0.5).collect();
    let b: Vec<f32> = (0..k * n).map(|_| rng.unit() as f32 - 0.5).collect();
    let mut da = DeviceUvector::<f32>::with_resource(m * k, stream.view(), pool.clone())?;
    let mut db = DeviceUvector::<f32>::with_resource(k * n, stream.view(), pool.clone())?;
    let mut dc = DeviceUvector::<f32>::with_resource(m * n, stream.view(), pool.clone())?;
    cu.memcpy_htod(&a, &mut da.cudarc_view_mut(cu)?)?;
    cu.memcpy_htod(&b, &mut db.cudarc_view_mut(cu)?)?;
    let blas = CudaBlas::new(cu.clone()).map_err(|e| Error::Logic(format!("cuBLAS handle: {e:?}")))?;
    let cfg = GemmConfig {
        transa: cublasOperation_t::CUBLAS_OP_N,
        transb: cublasOperation_t::CUBLAS_OP_N,
        m: n as i32,
        n: m as i32,
        k: k as i32,
        alpha: 1.0f32,
        lda: n as i32,
        ldb: k as i32,
        beta: 0.0f32,
        ldc: n as i32,
    };
    // SAFETY: the dimensions and leading dimensions above match the three
    // vectors' sizes (B is n×k column-major = k×n row-major, and so on).
    unsafe {
        blas.gemm(
            cfg,
            &db.cudarc_view(cu)?,
            &da.cudarc_view(cu)?,
            &mut dc.cudarc_view_mut(cu)?,
        )
    }
    .map_err(|e| Error::Logic(format!("cuBLAS sgemm: {e:?}")))?;
    let c = cu.clone_dtoh(&dc.cudarc_view(cu)?)?;
    let expected: Vec<f32> = (0..m * n)
        .into_par_iter()
        .map(|ij| (0..k).map(|p| a[(ij / n) * k + p] * b[p * n + ij % n]).sum())
        .collect();
    for (got, want) in c.iter().zip(&expected) {
        assert_relative_eq!(*got, *want, epsilon = 1e-4, max_relative = 1e-3);
    }
    println!("  cuBLAS sgemm {m}x{k} · {k}x{n} on rmm vectors: matches the CPU");
    Ok(())
}

/// Our radix sort on cudarc's stream, scratch from the pool, keys written
/// by cudarc.
fn sort_with_rmm_scratch(cu: &Arc<CudarcStream>, stream: &CudaStream, pool: &Pool) -> Result<()> {
    const N: usize = 1 << 20;
    let mut rng = SplitMix64(13);
    let host: Vec<u32> = (0..N).map(|_| rng.next() as u32).collect();
    let mut keys = DeviceUvector::<u32>::with_resource(N, stream.view(), pool.clone())?;
    cu.memcpy_htod(&host, &mut keys.cudarc_view_mut(cu)?)?;
    let policy = ExecPolicy::new(stream.view(), pool.clone());
    let before = pool.allocations_counter().total;
    sort_keys(keys.as_span_mut(), Order::Ascending, &policy)?;
    let scratch_allocations = pool.allocations_counter().total - before;
    let sorted = cu.clone_dtoh(&keys.cudarc_view(cu)?)?;
    let mut expected = host;
    expected.par_sort_unstable();
    assert_eq!(sorted, expected, "sorted on cudarc's stream");
    assert!(scratch_allocations > 0, "the sort drew its scratch from the pool");
    println!("  sort_keys of {N} u32 on cudarc's stream, {scratch_allocations} scratch allocation(s) from the pool: checked");
    Ok(())
}

#[cfg(test)]
mod tests {
    /// `cargo test` runs the example; a GPU failure fails the test.
    #[test]
    fn example_runs() {
        super::run().unwrap();
    }
}
