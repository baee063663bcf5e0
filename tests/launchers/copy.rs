//! Both copies (the driver's, the default, and the Rust kernel) on a real
//! GPU: every alignment pairing, checked byte by byte.

use rmm::mr::{CudaMemoryResource, MemoryResource};
use rmm::CudaStream;
use rmm_suite::copy::{copy_bytes, copy_bytes_kernel};

#[test]
fn copy_every_alignment_pair() {
    rmm_testing::require_gpu!();
    let mr = CudaMemoryResource::new();
    let s = CudaStream::new().unwrap();
    let cap = (1 << 20) + 64;
    let src = mr.allocate(cap, 256, s.view()).unwrap();
    let dst = mr.allocate(cap, 256, s.view()).unwrap();
    let pattern: Vec<u8> = (0..cap).map(|i| (i * 131 % 251) as u8).collect();
    // SAFETY: `pattern` outlives the copy (the stream is synchronised below).
    unsafe {
        rmm::launch::memcpy_async(src, rmm::DevicePtr::new(pattern.as_ptr() as u64), cap, s.view()).unwrap()
    };
    type Copy = unsafe fn(rmm::DevicePtr, rmm::DevicePtr, usize, rmm::CudaStreamView) -> rmm::Result<()>;
    let copies: [(&str, Copy); 2] = [("driver", copy_bytes), ("kernel", copy_bytes_kernel)];
    for n in [1usize, 15, 16, 17, 1000, 1 << 20] {
        for (so, d_o) in [(0usize, 0usize), (3, 3), (0, 5), (7, 1), (16, 32)] {
            for (which, copy) in copies {
                // SAFETY: both ranges are inside the allocations.
                unsafe {
                    rmm::launch::memset_async(dst, 0xEE, 1, cap, s.view()).unwrap();
                    copy(dst.offset(d_o), src.offset(so), n, s.view()).unwrap();
                }
                let mut host = vec![0u8; cap];
                // SAFETY: `host` outlives the copy.
                unsafe {
                    rmm::launch::memcpy_async(
                        rmm::DevicePtr::new(host.as_mut_ptr() as u64),
                        dst,
                        cap,
                        s.view(),
                    )
                    .unwrap()
                };
                s.synchronize().unwrap();
                assert_eq!(
                    &host[d_o..d_o + n],
                    &pattern[so..so + n],
                    "{which}: n={n} src+{so} dst+{d_o}"
                );
                assert!(
                    host[..d_o].iter().chain(&host[d_o + n..]).all(|&b| b == 0xEE),
                    "{which}: write outside range"
                );
            }
        }
    }
    // Overlapping ranges are refused.
    for copy in [copy_bytes, copy_bytes_kernel] {
        // SAFETY: the call fails before copying.
        let r = unsafe { copy(src.offset(8), src, 64, s.view()) };
        assert!(matches!(r, Err(rmm::Error::InvalidArgument(_))));
    }
    // SAFETY: allocated above; the stream is idle.
    unsafe {
        mr.deallocate(src, cap, 256, s.view());
        mr.deallocate(dst, cap, 256, s.view());
    }
}
