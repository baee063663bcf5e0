//! rmm memory and streams under cudarc's safe API (feature `cudarc`): stream
//! lifetimes, copies and memsets through rmm views, work
//! on other cudarc streams, and the ordering that keeps a free (and the
//! reuse of the memory) after cudarc's kernels. GPU tests: they skip
//! without a GPU, and fail instead under `RMM_REQUIRE_GPU=1`; run them under
//! `compute-sanitizer --tool memcheck` too (an ordering mistake shows as a
//! use after free there, and as wrong values here).

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream as CudarcStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use rmm::interop::cudarc::CudarcViewMut;
use rmm::mr::{CudaMemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DeviceScalar, DeviceUvector, Error, StreamRef};
use rmm_testing::require_gpu;

/// cudarc's view of device 0's primary context and a new stream on it.
fn cudarc_stream() -> (Arc<CudaContext>, Arc<CudarcStream>) {
    let ctx = CudaContext::new(0).expect("device 0's primary context");
    let stream = ctx.new_stream().expect("a cudarc stream");
    (ctx, stream)
}

#[test]
fn an_rmm_stream_keeps_cudarcs_stream_alive() {
    require_gpu!();
    let (_ctx, cu) = cudarc_stream();
    let stream = CudaStream::from_cudarc(cu.clone()).unwrap();
    assert!(Arc::ptr_eq(stream.cudarc().unwrap(), &cu));
    assert_eq!(stream.view().as_raw(), cu.cu_stream() as usize);
    let r = StreamRef::from_cudarc(cu.clone()).unwrap();
    assert_eq!(
        Arc::strong_count(&cu),
        3,
        "the rmm stream and the StreamRef each hold cudarc's Arc"
    );
    let raw = cu.cu_stream() as usize;
    drop(cu);
    // The container keeps the rmm stream, which keeps cudarc's stream.
    let v = DeviceUvector::from_slice(&[1u32, 2, 3], stream.view()).unwrap();
    drop(stream);
    assert_eq!(v.stream().as_raw(), raw);
    assert_eq!(v.copy_to_host(v.stream()).unwrap(), [1, 2, 3]);
    assert_eq!(r.view().as_raw(), raw);
    r.view().synchronize().unwrap();
    // An rmm stream lent to cudarc, borrowed.
    let ours = CudaStream::new().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    // SAFETY: `ours` outlives `lent`, which is dropped at the end of the test
    // before `ours`; the work below is ordered by the views.
    let lent = unsafe { ours.view().to_cudarc_borrowed(&ctx) }.unwrap();
    assert_eq!(lent.cu_stream() as usize, ours.view().as_raw());
    let mut w = DeviceUvector::<u32>::new(3, ours.view()).unwrap();
    lent.memcpy_htod(&[7u32, 8, 9], &mut w.cudarc_view_mut(&lent).unwrap())
        .unwrap();
    assert_eq!(w.copy_to_host(ours.view()).unwrap(), [7, 8, 9]);
    drop(lent);
}

#[test]
fn simulated_memory_is_refused() {
    require_gpu!();
    let (_ctx, cu) = cudarc_stream();
    let sim = SimulatedMemoryResource::new(1 << 20);
    let mut v = DeviceUvector::<f32>::with_resource(64, CudaStreamView::DEFAULT, sim.clone()).unwrap();
    let e = v.cudarc_view_mut(&cu).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("simulated")),
        "{e}"
    );
    let b = DeviceBuffer::with_resource(64, CudaStreamView::DEFAULT, sim).unwrap();
    assert!(matches!(b.cudarc_view(&cu), Err(Error::InvalidArgument(_))));
}

#[test]
fn copies_and_memsets_through_views_see_each_others_writes() {
    require_gpu!();
    let (_ctx, cu) = cudarc_stream();
    let owner = CudaStream::new().unwrap(); // the containers' stream, not cudarc's
    let n = 1 << 16;
    let host: Vec<u32> = (0..n as u32).collect();
    let mut a = DeviceUvector::<u32>::new(n, owner.view()).unwrap();
    cu.memcpy_htod(&host, &mut a.cudarc_view_mut(&cu).unwrap())
        .unwrap();
    // rmm's own copy on the owner's stream sees cudarc's write.
    assert_eq!(a.copy_to_host(owner.view()).unwrap(), host);
    // rmm writes on its stream, cudarc reads on its own.
    a.copy_from_host(&host.iter().map(|x| x * 3).collect::<Vec<_>>(), owner.view())
        .unwrap();
    let mut b = DeviceUvector::<u32>::new(n, owner.view()).unwrap();
    cu.memcpy_dtod(&a.cudarc_view(&cu).unwrap(), &mut b.cudarc_view_mut(&cu).unwrap())
        .unwrap();
    // Zero the second half of `b` through a sub-span.
    let mut span = b.as_span_mut();
    let half = span.subspan_mut(n / 2..n).unwrap();
    cu.memset_zeros(&mut CudarcViewMut::new(half, &cu).unwrap())
        .unwrap();
    let back = cu.clone_dtoh(&b.cudarc_view(&cu).unwrap()).unwrap();
    let expected: Vec<u32> = (0..n as u32)
        .map(|x| if (x as usize) < n / 2 { x * 3 } else { 0 })
        .collect();
    assert_eq!(back, expected);
    // Buffers (as bytes) and scalars too.
    let mut buf = DeviceBuffer::new(8, owner.view()).unwrap();
    cu.memcpy_htod(&[5u8; 8], &mut buf.cudarc_view_mut(&cu).unwrap())
        .unwrap();
    assert_eq!(buf.to_host(owner.view()).unwrap(), [5u8; 8]);
    let mut s = DeviceScalar::<f64>::new(owner.view()).unwrap();
    cu.memcpy_htod(&[2.5f64], &mut s.cudarc_view_mut(&cu).unwrap())
        .unwrap();
    assert_eq!(s.value(owner.view()).unwrap(), 2.5);
    assert_eq!(cu.clone_dtoh(&s.cudarc_view(&cu).unwrap()).unwrap(), [2.5]);
}

#[test]
fn work_on_another_cudarc_stream_is_ordered_too() {
    require_gpu!();
    let (ctx, cu) = cudarc_stream();
    let other = ctx.new_stream().unwrap();
    let owner = CudaStream::new().unwrap();
    let host: Vec<i64> = (0..4096).map(|x| x * x - 7).collect();
    let v = DeviceUvector::from_slice(&host, owner.view()).unwrap();
    let view = v.cudarc_view(&cu).unwrap();
    // A copy on `other`, with a view bound to `cu`: `other` waits for `cu`,
    // which waited for the owner, and the host waits for the copy.
    let back = other.clone_dtoh(&view).unwrap();
    assert_eq!(back, host);
    ctx.check_err().unwrap();
}

/// The stream-ordering test: a long cudarc kernel writes a vector on
/// cudarc's stream; the vector is dropped at once (freed on its own
/// stream), and a new vector of the same size from the same pool, on that
/// stream, is written by rmm. The pool hands the same memory back, so had
/// the free not waited for cudarc's kernel, the kernel would overwrite the
/// new vector.
#[test]
fn memory_is_not_reused_before_cudarcs_kernels_on_it_have_run() {
    require_gpu!();
    let (ctx, cu) = cudarc_stream();
    let owner = CudaStream::new().unwrap();
    let pool = PoolMemoryResource::new(CudaMemoryResource::new(), PoolOptions::default()).unwrap();
    let module = ctx.load_module(Ptx::from_src(rmm_suite::kernels::PTX)).unwrap();
    let fill = module.load_function("rmm_fill_u32").unwrap();
    let n: usize = 16 << 20; // 64 MiB: each fill takes tens of microseconds
    for round in 0..3 {
        let mut first = DeviceUvector::<u32>::with_resource(n, owner.view(), pool.clone()).unwrap();
        let address = first.data();
        {
            let mut view = first.cudarc_view_mut(&cu).unwrap();
            for _ in 0..40 {
                let mut launch = cu.launch_builder(&fill);
                launch.arg(&mut view).arg(&n).arg(&0xDEAD_BEEFu32);
                // SAFETY: `rmm_fill_u32(ptr, n, value)` writes the view's `n`
                // elements, on the view's stream.
                unsafe { launch.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
            }
        }
        drop(first);
        let mut second = DeviceUvector::<u32>::with_resource(n, owner.view(), pool.clone()).unwrap();
        assert_eq!(
            second.data(),
            address,
            "round {round}: the pool reused the memory at once"
        );
        let policy = rmm::exec_policy::ExecPolicy::on_stream(owner.view());
        rmm_suite::sequence::sequence(second.as_span_mut(), 7u32, 0, &policy).unwrap();
        let back = second.copy_to_host(owner.view()).unwrap();
        let wrong = back.iter().filter(|&&x| x != 7).count();
        assert_eq!(
            wrong, 0,
            "round {round}: {wrong} elements written by cudarc's kernel after the free"
        );
    }
    cu.synchronize().unwrap();
}
