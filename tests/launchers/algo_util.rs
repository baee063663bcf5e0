//! Helpers of the algorithm tests: device arrays, a stream-bound policy and
//! a deterministic generator.
#![allow(dead_code)]

use std::marker::PhantomData;

use rmm::exec_policy::ExecPolicy;
use rmm::mr::{CudaMemoryResource, MemoryResource};
use rmm::{CudaStream, DevicePtr, DeviceSpan, DeviceSpanMut};

/// SplitMix64 (with `unit` and `normal`).
pub use rmm_testing::SplitMix64 as Rng;

/// A device array owned by the test, with its stream.
pub struct DevVec<T: Copy> {
    pub ptr: DevicePtr,
    pub len: usize,
    mr: CudaMemoryResource,
    _t: PhantomData<T>,
}

impl<T: Copy> DevVec<T> {
    pub fn upload(data: &[T], s: &CudaStream) -> Self {
        let mr = CudaMemoryResource::new();
        let bytes = std::mem::size_of_val(data);
        let ptr = mr.allocate(bytes, 256, s.view()).unwrap();
        if bytes > 0 {
            // SAFETY: `ptr` holds `bytes`; `data` outlives the copy (synchronised).
            unsafe {
                rmm::launch::memcpy_async(ptr, rmm::DevicePtr::new(data.as_ptr() as u64), bytes, s.view())
                    .unwrap()
            };
        }
        s.synchronize().unwrap();
        DevVec {
            ptr,
            len: data.len(),
            mr,
            _t: PhantomData,
        }
    }

    pub fn zeroed(len: usize, s: &CudaStream) -> Self {
        let bytes = len * std::mem::size_of::<T>();
        let mr = CudaMemoryResource::new();
        let ptr = mr.allocate(bytes, 256, s.view()).unwrap();
        if bytes > 0 {
            // SAFETY: `ptr` holds `bytes`.
            unsafe { rmm::launch::memset_async(ptr, 0, 1, bytes, s.view()).unwrap() };
        }
        s.synchronize().unwrap();
        DevVec {
            ptr,
            len,
            mr,
            _t: PhantomData,
        }
    }

    pub fn download(&self, s: &CudaStream) -> Vec<T> {
        let mut out: Vec<T> = Vec::with_capacity(self.len);
        let bytes = self.len * std::mem::size_of::<T>();
        if bytes > 0 {
            // SAFETY: `out` has room for `len` elements; synchronised before use.
            unsafe {
                rmm::launch::memcpy_async(
                    rmm::DevicePtr::new(out.as_mut_ptr() as u64),
                    self.ptr,
                    bytes,
                    s.view(),
                )
                .unwrap();
            }
        }
        s.synchronize().unwrap();
        // SAFETY: the copy wrote all `len` elements (T is plain data).
        unsafe { out.set_len(self.len) };
        out
    }

    pub fn span(&self) -> DeviceSpan<'_, T> {
        // SAFETY: the allocation holds `len` elements for the borrow.
        unsafe { DeviceSpan::from_raw_parts(self.ptr, self.len) }
    }

    pub fn span_mut(&mut self) -> DeviceSpanMut<'_, T> {
        // SAFETY: as `span`, borrowed exclusively.
        unsafe { DeviceSpanMut::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Copy> Drop for DevVec<T> {
    fn drop(&mut self) {
        let _ = rmm::device::synchronize();
        // SAFETY: allocated in `upload`/`zeroed` with these arguments; the
        // device is idle.
        unsafe {
            self.mr.deallocate(
                self.ptr,
                self.len * std::mem::size_of::<T>(),
                256,
                rmm::CudaStreamView::DEFAULT,
            )
        };
    }
}

/// A stream and a policy on it over the CUDA resource.
pub fn stream_and_policy() -> (CudaStream, ExecPolicy) {
    let s = CudaStream::new().unwrap();
    let p = ExecPolicy::new(s.view(), CudaMemoryResource::new());
    (s, p)
}

/// Whether a test size runs: `RMM_TEST_MAX_LOG2=k` (optional) skips sizes
/// above `2^k`, for slow runs under compute-sanitizer (with
/// `--skip large` for the `*_large` tests).
pub fn size_ok(n: usize) -> bool {
    match rmm_testing::env::test_max_log2() {
        Some(k) => n <= 1usize << k.min(63),
        None => true,
    }
}
