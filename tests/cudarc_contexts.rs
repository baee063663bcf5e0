//! The context rule of rmm's `cudarc` feature: a cudarc stream of a
//! non-primary context is refused with a clear error. In a process of its
//! own: creating and destroying a second context of the device beside the
//! other interop tests made compute-sanitizer reject rmm's NVTX memory-region
//! annotations of their pools (2 "nvtxMemRegions(Un)Register failed"
//! warnings, H200, 2026-12-02), and a context is process-wide state. GPU
//! test: it skips without a GPU, and fails instead under `RMM_REQUIRE_GPU=1`.

use cudarc::driver::CudaContext;
use rmm::interop::cudarc::CudarcView;
use rmm::{CudaStream, CudaStreamView, DeviceUvector, Error};
use rmm_testing::require_gpu;

#[test]
fn another_context_is_refused_with_a_clear_error() {
    require_gpu!();
    let v = DeviceUvector::<u32>::new(16, CudaStreamView::DEFAULT).unwrap();
    let span = v.as_span();
    // In a thread of its own: cudarc makes its new context current there.
    std::thread::scope(|s| {
        s.spawn(move || {
            let other = CudaContext::new_non_primary(0, 0).expect("a non-primary context");
            let cu = other.new_stream().unwrap();
            let e = CudaStream::from_cudarc(cu.clone()).unwrap_err();
            assert!(
                matches!(&e, Error::Logic(m) if m.contains("primary context")),
                "{e}"
            );
            let e = CudarcView::new(span, &cu).unwrap_err();
            assert!(
                matches!(&e, Error::Logic(m) if m.contains("primary context")),
                "{e}"
            );
        });
    });
    v.stream().synchronize().unwrap();
}
