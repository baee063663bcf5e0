//! The fill kernels on a real GPU, checked element by element on the host.

use rmm::mr::{CudaMemoryResource, MemoryResource};
use rmm::{CudaStream, DevicePtr};
use rmm_suite::fill::{fill_raw, FillValue};

fn roundtrip<T: FillValue + PartialEq + std::fmt::Debug + Default>(n: usize, offset_elems: usize, value: T) {
    let size = std::mem::size_of::<T>();
    let mr = CudaMemoryResource::new();
    let s = CudaStream::new().unwrap();
    let total = (n + offset_elems + 7) * size;
    let base = mr.allocate(total, 256, s.view()).unwrap();
    // Pre-fill with a sentinel so that writes outside the range show up.
    // SAFETY: [base, base + total) is live device memory.
    unsafe { rmm::launch::memset_async(base, 0xAB, 1, total, s.view()).unwrap() };
    let start: DevicePtr = base.offset(offset_elems * size);
    // SAFETY: [start, start + n * size) lies inside the allocation.
    unsafe { fill_raw(start, n, value, s.view()).unwrap() };
    let mut host = vec![0u8; total];
    // SAFETY: host buffer outlives the copy (synchronised below).
    unsafe {
        rmm::launch::memcpy_async(
            rmm::DevicePtr::new(host.as_mut_ptr() as u64),
            base,
            total,
            s.view(),
        )
        .unwrap()
    };
    s.synchronize().unwrap();
    let value_bytes = &value.bits().to_le_bytes()[..size];
    for (i, chunk) in host.chunks(size).enumerate() {
        let inside = i >= offset_elems && i < offset_elems + n;
        if inside {
            assert_eq!(
                chunk,
                value_bytes,
                "element {} of {n} (offset {offset_elems})",
                i - offset_elems
            );
        } else {
            assert!(
                chunk.iter().all(|&b| b == 0xAB),
                "byte outside the range written at element {i}"
            );
        }
    }
    // SAFETY: allocated above with these arguments; the stream is idle.
    unsafe { mr.deallocate(base, total, 256, s.view()) };
}

#[test]
fn fill_all_widths_and_sizes() {
    rmm_testing::require_gpu!();
    for n in [0usize, 1, 2, 3, 15, 16, 17, 255, 4096, 100_003, 1 << 22] {
        for offset in [0usize, 1, 3] {
            roundtrip::<u8>(n, offset, 0x5A);
            roundtrip::<u16>(n, offset, 0xBEEF);
            roundtrip::<u32>(n, offset, 0xDEAD_BEEF);
            roundtrip::<u64>(n, offset, 0x0123_4567_89AB_CDEF);
        }
    }
    roundtrip::<f32>(1000, 1, -1.5);
    roundtrip::<f64>(1000, 1, std::f64::consts::PI);
    roundtrip::<i16>(999, 0, -2);
}

#[test]
fn fill_rejects_misaligned_pointer() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    // SAFETY: the call fails before touching memory.
    let r = unsafe { fill_raw::<u32>(DevicePtr::new(0x1001), 10, 1, s.view()) };
    assert!(matches!(r, Err(rmm::Error::InvalidArgument(_))), "{r:?}");
}

#[test]
fn ptx_has_the_fill_entry_points() {
    // Runs everywhere: the PTX was built by build.rs with rustc's NVPTX backend.
    for name in ["rmm_fill_u8", "rmm_fill_u16", "rmm_fill_u32", "rmm_fill_u64"] {
        assert!(
            rmm_suite::kernels::PTX.contains(&format!(".entry {name}(")),
            "missing {name}"
        );
    }
    assert!(rmm_suite::kernels::PTX.contains(".target sm_"));
}
