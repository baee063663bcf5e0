//! DeviceBuffer, DeviceUvector and DeviceScalar.
//!
//! `gpu_*` tests run every call on a real GPU over the cuda, cuda_async and
//! managed resources (they skip without a GPU and fail with
//! RMM_REQUIRE_GPU=1); `cpu_*` tests run anywhere over the simulated
//! resource: sizes, capacities, reallocation bookkeeping and error paths that
//! must fail before any GPU work.

mod common;

use std::sync::Mutex;

use common::SplitMix64;
use rmm::device::{current_device, device_count, set_current_device, DeviceGuard, DeviceId};
use rmm::mr::{
    set_current_device_resource, CudaAsyncMemoryResource, CudaMemoryResource, ManagedMemoryResource,
    MemoryResource, SharedResource, SimulatedMemoryResource,
};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DeviceScalar, DeviceUvector, Error};

/// Serialises the tests that read or replace the current device resource.
static CURRENT_RESOURCE: Mutex<()> = Mutex::new(());

fn lock_current() -> std::sync::MutexGuard<'static, ()> {
    CURRENT_RESOURCE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The real resources every GPU test runs over.
fn gpu_resources() -> Vec<(&'static str, SharedResource)> {
    vec![
        ("cuda", SharedResource::new(CudaMemoryResource::new())),
        (
            "cuda_async",
            SharedResource::new(CudaAsyncMemoryResource::new().expect("cuda_async resource")),
        ),
        ("managed", SharedResource::new(ManagedMemoryResource::new())),
    ]
}

fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = SplitMix64(seed);
    (0..n).map(|_| rng.next() as u8).collect()
}

/// Bytes the simulated resource accounts for an allocation (256-byte granules).
fn r256(n: usize) -> usize {
    n.div_ceil(256) * 256
}

/// A stream handle for simulated resources, which never pass it to the driver.
fn fake_stream(i: usize) -> CudaStreamView<'static> {
    // SAFETY: only used with simulated resources, which never touch streams.
    unsafe { CudaStreamView::from_raw(0x1000 + 16 * i) }
}

// ---------------------------------------------------------------------------
// GPU: DeviceBuffer
// ---------------------------------------------------------------------------

#[test]
fn gpu_buffer_host_roundtrip() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        for (k, n) in [0usize, 1, 255, 256, 257, 4096, (1 << 20) + 3]
            .into_iter()
            .enumerate()
        {
            let host = pattern(n, k as u64 + 1);
            let b = DeviceBuffer::from_host(&host, s.view(), mr.clone()).unwrap();
            assert_eq!(
                (b.size(), b.capacity(), b.is_empty()),
                (n, n, n == 0),
                "{name} {n}"
            );
            assert_eq!(b.data().is_null(), n == 0, "{name} {n}");
            assert!(b.data().is_aligned(256), "{name} {n}");
            assert_eq!(b.stream(), s.view());
            assert_eq!(b.device(), current_device().unwrap());
            assert!(b.resource().is_equal(&mr), "{name}");
            assert_eq!(b.to_host(s.view()).unwrap(), host, "{name} {n}");
            // copy_from_host overwrites in place.
            let mut b = b;
            let other = pattern(n, 1000 + k as u64);
            b.copy_from_host(&other, s.view()).unwrap();
            assert_eq!(b.to_host(s.view()).unwrap(), other, "{name} {n}");
            let e = b.copy_from_host(&other[..n.saturating_sub(1)], s.view());
            if n > 0 {
                assert!(matches!(e, Err(Error::InvalidArgument(_))), "{name} {n}: {e:?}");
            }
        }
    }
}

#[test]
fn gpu_buffer_from_device_and_host_pointers() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let host = pattern(10_000, 7);
        let src = DeviceBuffer::from_host(&host, s.view(), mr.clone()).unwrap();
        // SAFETY: `src` holds 10_000 bytes and outlives the copy (synchronised by to_host).
        let d = unsafe { DeviceBuffer::from_device(src.data(), src.size(), s.view(), mr.clone()) }.unwrap();
        assert_eq!(d.to_host(s.view()).unwrap(), host, "{name} device source");
        // A sub-range of the source at an odd offset.
        // SAFETY: bytes 3..3+5000 lie inside `src`.
        let d =
            unsafe { DeviceBuffer::from_device(src.data().offset(3), 5000, s.view(), mr.clone()) }.unwrap();
        assert_eq!(
            d.to_host(s.view()).unwrap(),
            &host[3..5003],
            "{name} offset source"
        );
        // A (pageable) host source: the driver infers the direction.
        let h = pattern(777, 8);
        // SAFETY: `h` lives until after the synchronising to_host below.
        let d = unsafe {
            DeviceBuffer::from_device(
                rmm::DevicePtr::new(h.as_ptr() as u64),
                h.len(),
                s.view(),
                mr.clone(),
            )
        }
        .unwrap();
        assert_eq!(d.to_host(s.view()).unwrap(), h, "{name} host source");
        // Typed: a uvector copied from device memory and from host memory.
        let words: Vec<u32> = (0..2500).map(|i| i * 17 + 3).collect();
        let src = DeviceUvector::from_slice_with_resource(&words, s.view(), mr.clone()).unwrap();
        // SAFETY: `src` holds 2500 u32 and outlives the copy (copy_to_host synchronises).
        let v = unsafe { DeviceUvector::<u32>::from_device(src.data(), 2500, s.view(), mr.clone()) }.unwrap();
        assert_eq!(
            v.copy_to_host(s.view()).unwrap(),
            words,
            "{name} typed device source"
        );
        // SAFETY: `words` lives until after the synchronising copy_to_host.
        let v = unsafe {
            DeviceUvector::<u32>::from_device(
                rmm::DevicePtr::new(words.as_ptr() as u64),
                100,
                s.view(),
                mr.clone(),
            )
        }
        .unwrap();
        assert_eq!(
            v.copy_to_host(s.view()).unwrap(),
            &words[..100],
            "{name} typed host source"
        );
    }
}

#[test]
fn gpu_buffer_resize_reserve_shrink_keep_contents() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    let s2 = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let host = pattern(1000, 3);
        let mut b = DeviceBuffer::from_host(&host, s.view(), mr.clone()).unwrap();
        let p0 = b.data();
        b.resize(500, s.view()).unwrap();
        assert_eq!(
            (b.size(), b.capacity(), b.data()),
            (500, 1000, p0),
            "{name}: shrinking keeps memory"
        );
        assert_eq!(b.to_host(s.view()).unwrap(), &host[..500], "{name}");
        b.resize(3000, s2.view()).unwrap();
        assert_eq!(
            (b.size(), b.capacity(), b.stream()),
            (3000, 3000, s2.view()),
            "{name}"
        );
        assert_eq!(
            &b.to_host(s2.view()).unwrap()[..500],
            &host[..500],
            "{name}: grow keeps contents"
        );
        b.reserve(100, s2.view()).unwrap();
        assert_eq!(b.capacity(), 3000, "{name}: smaller reserve is a no-op");
        b.reserve(10_000, s.view()).unwrap();
        assert_eq!(
            (b.size(), b.capacity(), b.stream()),
            (3000, 10_000, s.view()),
            "{name}"
        );
        assert_eq!(
            &b.to_host(s.view()).unwrap()[..500],
            &host[..500],
            "{name}: reserve keeps contents"
        );
        b.shrink_to_fit(s.view()).unwrap();
        assert_eq!((b.size(), b.capacity()), (3000, 3000), "{name}");
        assert_eq!(
            &b.to_host(s.view()).unwrap()[..500],
            &host[..500],
            "{name}: shrink keeps contents"
        );
        b.resize(0, s.view()).unwrap();
        b.shrink_to_fit(s.view()).unwrap();
        assert_eq!(
            (b.size(), b.capacity(), b.data().is_null()),
            (0, 0, true),
            "{name}"
        );
        b.resize(64, s.view()).unwrap();
        assert_eq!((b.size(), b.capacity()), (64, 64), "{name}: regrow from empty");
    }
}

#[test]
fn gpu_buffer_clone_across_resources_and_streams() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    let s2 = CudaStream::non_blocking().unwrap();
    let resources = gpu_resources();
    for (from, mr_a) in &resources {
        for (to, mr_b) in &resources {
            let host = pattern(70_001, 11);
            let mut a = DeviceBuffer::with_alignment(host.len(), 64, s.view(), mr_a.clone()).unwrap();
            a.copy_from_host(&host, s.view()).unwrap();
            a.reserve(80_000, s.view()).unwrap();
            let c = a.try_clone_on(s2.view(), mr_b.clone()).unwrap();
            assert_eq!(
                (c.size(), c.capacity(), c.alignment()),
                (70_001, 70_001, 64),
                "{from}->{to}"
            );
            assert_eq!(c.stream(), s2.view());
            assert!(c.resource().is_equal(mr_b.inner()), "{from}->{to}");
            // The copy is independent of the original, which is then freed at once.
            let zeros = vec![0u8; host.len()];
            a.copy_from_host(&zeros, s.view()).unwrap();
            drop(a);
            assert_eq!(c.to_host(s2.view()).unwrap(), host, "{from}->{to}");
        }
    }
}

#[test]
fn gpu_buffer_set_stream_and_alignment() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    let s2 = CudaStream::non_blocking().unwrap();
    for (name, mr) in gpu_resources() {
        let host = pattern(4096, 5);
        let mut b = DeviceBuffer::from_host(&host, s.view(), mr.clone()).unwrap();
        b.set_stream(s2.view()).unwrap();
        assert_eq!(b.stream(), s2.view());
        assert_eq!(b.to_host(s2.view()).unwrap(), host, "{name}");
        b.set_stream(CudaStreamView::DEFAULT).unwrap();
        assert_eq!(b.to_host(CudaStreamView::PER_THREAD).unwrap(), host, "{name}");
        drop(b);
        for a in [1usize, 2, 16, 128, 256] {
            let b = DeviceBuffer::with_alignment(1001, a, s.view(), mr.clone()).unwrap();
            assert!(b.data().is_aligned(a) && b.alignment() == a, "{name} {a}");
        }
        let e = DeviceBuffer::with_alignment(10, 512, s.view(), mr.clone());
        assert!(matches!(e, Err(Error::BadAlloc(_))), "{name}: {e:?}");
        let e = DeviceBuffer::with_alignment(10, 24, s.view(), mr.clone());
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "{name}: {e:?}");
    }
    s.synchronize().unwrap();
    s2.synchronize().unwrap();
}

#[test]
fn gpu_buffer_new_uses_current_device_resource() {
    rmm_testing::require_gpu!();
    let _l = lock_current();
    let s = CudaStream::new().unwrap();
    let b = DeviceBuffer::new(1000, s.view()).unwrap();
    assert!(b.resource().is_equal(&rmm::mr::current_device_resource()));
    let v = DeviceUvector::<u16>::new(10, s.view()).unwrap();
    assert!(v.resource().is_equal(&rmm::mr::current_device_resource()));
    let x = DeviceScalar::with_value(5i64, s.view()).unwrap();
    assert_eq!(x.value(s.view()).unwrap(), 5);
}

#[test]
fn gpu_buffer_out_of_memory_is_an_error() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        if name == "managed" {
            continue; // managed memory may oversubscribe
        }
        let e = DeviceBuffer::with_resource(1 << 50, s.view(), mr.clone());
        assert!(
            matches!(e, Err(ref err) if err.is_out_of_memory()),
            "{name}: {e:?}"
        );
        let mut b = DeviceBuffer::from_host(&[1, 2, 3], s.view(), mr.clone()).unwrap();
        let e = b.resize(1 << 50, s.view());
        assert!(
            matches!(e, Err(ref err) if err.is_out_of_memory()),
            "{name}: {e:?}"
        );
        assert_eq!(
            (b.size(), b.capacity()),
            (3, 3),
            "{name}: unchanged after a failed resize"
        );
        assert_eq!(b.to_host(s.view()).unwrap(), vec![1, 2, 3], "{name}");
    }
}

// ---------------------------------------------------------------------------
// GPU: DeviceUvector
// ---------------------------------------------------------------------------

fn element_ops<T>(name: &str, mr: &SharedResource, values: &[T], other: T, s: CudaStreamView)
where
    T: rmm::DevicePod + PartialEq + std::fmt::Debug,
{
    let n = values.len();
    let mut v = DeviceUvector::from_slice_with_resource(values, s, mr.clone()).unwrap();
    assert_eq!(
        (v.len(), v.capacity(), v.size_bytes()),
        (n, n, std::mem::size_of_val(values)),
        "{name}"
    );
    assert_eq!(v.copy_to_host(s).unwrap(), values, "{name}");
    for i in [0, n / 2, n - 1] {
        assert_eq!(v.element(i, s).unwrap(), values[i], "{name} element {i}");
    }
    assert_eq!(v.front_element(s).unwrap(), values[0], "{name}");
    assert_eq!(v.back_element(s).unwrap(), values[n - 1], "{name}");
    v.set_element(1, other, s).unwrap();
    assert_eq!(v.element(1, s).unwrap(), other, "{name} set_element");
    v.set_element_async(n - 1, other, s).unwrap();
    assert_eq!(v.back_element(s).unwrap(), other, "{name} set_element_async");
    v.set_element_to_zero_async(0, s).unwrap();
    let mut expect = values.to_vec();
    expect[1] = other;
    expect[n - 1] = other;
    let host = v.copy_to_host(s).unwrap();
    assert_eq!(&host[1..], &expect[1..], "{name} after sets");
    // SAFETY: inspecting the bytes of a plain-data value.
    let zero_bytes =
        unsafe { std::slice::from_raw_parts((&host[0] as *const T).cast::<u8>(), std::mem::size_of::<T>()) };
    assert!(
        zero_bytes.iter().all(|&b| b == 0),
        "{name} zeroed element: {zero_bytes:?}"
    );
    for bad in [n, n + 1, usize::MAX] {
        assert!(matches!(v.element(bad, s), Err(Error::OutOfRange(_))), "{name}");
        assert!(
            matches!(v.set_element(bad, other, s), Err(Error::OutOfRange(_))),
            "{name}"
        );
        assert!(
            matches!(v.set_element_async(bad, other, s), Err(Error::OutOfRange(_))),
            "{name}"
        );
        assert!(
            matches!(v.set_element_to_zero_async(bad, s), Err(Error::OutOfRange(_))),
            "{name}"
        );
    }
    assert!(matches!(
        v.copy_from_host(&values[1..], s),
        Err(Error::InvalidArgument(_))
    ));
    v.copy_from_host(values, s).unwrap();
    assert_eq!(v.copy_to_host(s).unwrap(), values, "{name} copy_from_host");
}

#[test]
fn gpu_uvector_elements_of_many_types() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    let sv = s.view();
    for (name, mr) in gpu_resources() {
        let u8s: Vec<u8> = (0..1001u32).map(|i| (i * 7 + 1) as u8).collect();
        element_ops(name, &mr, &u8s, 0xEE, sv);
        let u16s: Vec<u16> = (0..513u32).map(|i| (i * 31 + 1) as u16).collect();
        element_ops(name, &mr, &u16s, 0xBEEF, sv);
        let u32s: Vec<u32> = (0..10_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) | 1)
            .collect();
        element_ops(name, &mr, &u32s, 0xDEAD_BEEF, sv);
        let i64s: Vec<i64> = (0..300i64).map(|i| -i * 1_000_000_007 - 1).collect();
        element_ops(name, &mr, &i64s, i64::MIN, sv);
        let f64s: Vec<f64> = (0..300).map(|i| i as f64 * 0.5 + 1.0).collect();
        element_ops(name, &mr, &f64s, -2.25, sv);
        let b3: Vec<[u8; 3]> = (0..100u8).map(|i| [i | 1, i.wrapping_add(1) | 1, 3]).collect();
        element_ops(name, &mr, &b3, [9, 8, 7], sv);
        let w3: Vec<[u32; 3]> = (0..100u32).map(|i| [i + 1, i * 2 + 1, i * 3 + 1]).collect();
        element_ops(name, &mr, &w3, [u32::MAX, 5, 6], sv);
        let q5: Vec<[u64; 5]> = (0..50u64).map(|i| [i + 1, 2, 3, 4, i + 5]).collect();
        element_ops(name, &mr, &q5, [7; 5], sv);
        // 68 and 65 bytes: over the memset limit, written by a synchronous copy.
        let w17: Vec<[u32; 17]> = (0..40u32).map(|i| [i + 1; 17]).collect();
        element_ops(name, &mr, &w17, std::array::from_fn(|k| k as u32 * 3 + 1), sv);
        let b65: Vec<[u8; 65]> = (0..40u8).map(|i| [i | 1; 65]).collect();
        element_ops(name, &mr, &b65, std::array::from_fn(|k| k as u8 ^ 0x5A), sv);
    }
}

#[test]
fn gpu_uvector_async_sets_need_no_live_host_value() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let n = 2000;
        let mut v = DeviceUvector::<u64>::with_resource(n, s.view(), mr.clone()).unwrap();
        for i in 0..n {
            // The value is a temporary that is gone before the copy runs.
            v.set_element_async(i, (i as u64) * 0x1_0000_0001 + 3, s.view())
                .unwrap();
        }
        let host = v.copy_to_host(s.view()).unwrap();
        for (i, x) in host.iter().enumerate() {
            assert_eq!(*x, (i as u64) * 0x1_0000_0001 + 3, "{name} element {i}");
        }
    }
}

#[test]
fn gpu_uvector_foreign_streams_are_ordered() {
    rmm_testing::require_gpu!();
    let a = CudaStream::non_blocking().unwrap();
    let b = CudaStream::non_blocking().unwrap();
    let c = CudaStream::non_blocking().unwrap();
    for (name, mr) in gpu_resources() {
        let data: Vec<u32> = (0..(1u32 << 20)).collect();
        let mut v = DeviceUvector::from_slice_with_resource(&data, a.view(), mr.clone()).unwrap();
        v.set_element_async(12345, 7, b.view()).unwrap();
        assert_eq!(v.element(12345, c.view()).unwrap(), 7, "{name}");
        let copy = v.try_clone_on(b.view(), mr.clone()).unwrap();
        drop(v); // freed on `a`, which waits for the clone on `b`
        let host = copy.copy_to_host(c.view()).unwrap();
        assert_eq!(host[12345], 7, "{name}");
        assert_eq!(host[12346], 12346, "{name}");
        assert_eq!(host.len(), data.len(), "{name}");
    }
}

/// Work of the caller's own inside `access` / `access_all`, on a stream
/// other than the buffers': it sees their earlier writes, their later work
/// sees its writes, and a buffer dropped right after is freed only after it.
#[test]
fn gpu_access_orders_own_work_with_the_buffers_streams() {
    rmm_testing::require_gpu!();
    let owner = CudaStream::non_blocking().unwrap();
    let worker = CudaStream::non_blocking().unwrap();
    let n = 16 << 20;
    for (name, mr) in gpu_resources() {
        let src = DeviceBuffer::from_host(&pattern(n, 7), owner.view(), mr.clone()).unwrap();
        src.access("memset", worker.view(), |s| {
            // SAFETY: the buffer's `n` bytes are live; `access` keeps them
            // allocated until the memset has run.
            unsafe { rmm::launch::memset_async(src.data(), 0x5A, 1, n, s) }
        })
        .unwrap();
        let mut dst = DeviceBuffer::with_resource(n, owner.view(), mr.clone()).unwrap();
        dst.copy_from_host(&pattern(n, 8), owner.view()).unwrap();
        DeviceBuffer::access_all("copy", &[&dst, &src], worker.view(), |s| {
            // SAFETY: both buffers hold `n` bytes and are distinct; `access_all`
            // keeps them allocated until the copy has run.
            unsafe { rmm::launch::memcpy_async(dst.data(), src.data(), n, s) }
        })
        .unwrap();
        drop(src); // freed on `owner`, which waits for the copy on `worker`
        let host = dst.to_host(owner.view()).unwrap();
        assert!(
            host.iter().all(|&b| b == 0x5A),
            "{name}: the copy missed the memset"
        );
    }
    if device_count() >= 2 {
        let s0 = CudaStream::new().unwrap();
        let a = DeviceBuffer::with_resource(64, s0.view(), CudaMemoryResource::new()).unwrap();
        let before = current_device().unwrap();
        let b = {
            let _g = DeviceGuard::new(DeviceId(if before == DeviceId(0) { 1 } else { 0 })).unwrap();
            DeviceBuffer::with_resource(64, CudaStreamView::DEFAULT, CudaMemoryResource::new()).unwrap()
        };
        let e = DeviceBuffer::access_all("copy", &[&a, &b], s0.view(), |_| Ok(()));
        assert!(
            matches!(&e, Err(Error::Logic(m)) if m.contains("try_clone_on")),
            "{e:?}"
        );
        assert_eq!(current_device().unwrap(), before);
    }
}

#[test]
fn gpu_uvector_resize_reserve_shrink_release() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let data: Vec<u32> = (0..1000).map(|i| i * 3 + 1).collect();
        let mut v = DeviceUvector::from_slice_with_resource(&data, s.view(), mr.clone()).unwrap();
        v.resize(400, s.view()).unwrap();
        assert_eq!((v.len(), v.capacity()), (400, 1000), "{name}");
        v.resize(5000, s.view()).unwrap();
        assert_eq!((v.len(), v.capacity()), (5000, 5000), "{name}");
        assert_eq!(&v.copy_to_host(s.view()).unwrap()[..400], &data[..400], "{name}");
        v.reserve(6000, s.view()).unwrap();
        assert_eq!((v.len(), v.capacity()), (5000, 6000), "{name}");
        v.resize(400, s.view()).unwrap();
        v.shrink_to_fit(s.view()).unwrap();
        assert_eq!((v.len(), v.capacity()), (400, 400), "{name}");
        assert_eq!(v.copy_to_host(s.view()).unwrap(), &data[..400], "{name}");
        let e = v.resize(usize::MAX / 2, s.view());
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "{name}: {e:?}");
        assert_eq!(v.len(), 400, "{name}: unchanged after overflow");
        let ptr = v.data();
        let buf = v.release();
        assert_eq!((buf.size(), buf.data()), (1600, ptr), "{name}");
        let bytes = buf.to_host(s.view()).unwrap();
        let expect: Vec<u8> = data[..400].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(bytes, expect, "{name}: released bytes");
        let back = DeviceUvector::<u64>::from_buffer(buf).unwrap();
        assert_eq!(back.len(), 200, "{name}");
        let wide = back.copy_to_host(s.view()).unwrap();
        assert_eq!(wide[0], (data[1] as u64) << 32 | data[0] as u64, "{name}");
    }
}

#[test]
fn gpu_uvector_spans_and_pointers() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let mut v = DeviceUvector::<f32>::with_resource(100, s.view(), mr.clone()).unwrap();
        let p = v.data();
        assert!(!p.is_null() && p.is_aligned(256), "{name}");
        assert_eq!(v.as_buffer().data(), p, "{name}");
        #[cfg(feature = "cust")]
        {
            assert_eq!(v.as_cust_ptr().as_raw(), p.addr(), "{name}");
            assert_eq!(v.as_buffer().as_cust::<f32>().as_raw(), p.addr(), "{name}");
        }
        let span = v.as_span();
        assert_eq!(
            (span.ptr(), span.len(), span.size_bytes()),
            (p, 100, 400),
            "{name}"
        );
        let mut m = v.as_span_mut();
        assert_eq!(m.subspan_mut(10..20).unwrap().ptr(), p.offset(40), "{name}");
        let e = DeviceUvector::<u64>::with_resource(usize::MAX / 4, s.view(), mr.clone());
        assert!(
            matches!(e, Err(Error::InvalidArgument(_))),
            "{name}: overflow {e:?}"
        );
    }
}

#[cfg(feature = "cust")]
#[test]
fn gpu_uvector_cust_interop() {
    rmm_testing::require_gpu!();
    use cust::memory::CopyDestination;
    let s = CudaStream::new().unwrap();
    let _ = current_device().unwrap(); // a current context for cust's calls
    let data: Vec<u32> = (0..4096).map(|i| i ^ 0x5555).collect();
    let cust_buf = cust::memory::DeviceBuffer::from_slice(&data).unwrap();
    let raw = cust_buf.as_device_ptr().as_raw();
    let v = DeviceUvector::from_cust(cust_buf, s.view()).unwrap();
    assert_eq!(v.data().addr(), raw, "adopted without a copy");
    assert!(v.resource().is_equal(&CudaMemoryResource::new()));
    assert_eq!(v.copy_to_host(s.view()).unwrap(), data);
    let back = v.into_cust().expect("cuda memory goes back to cust");
    let mut host = vec![0u32; data.len()];
    back.copy_to(&mut host[..]).unwrap();
    assert_eq!(host, data);
    drop(back);
    // Empty cust buffers round-trip too.
    let empty = cust::memory::DeviceBuffer::<u32>::from_slice(&[]).unwrap();
    let v = DeviceUvector::from_cust(empty, s.view()).unwrap();
    assert!(v.is_empty() && v.data().is_null());
    assert_eq!(v.into_cust().expect("empty").len(), 0);
    // Memory of other resources cannot be handed to cust.
    let async_mr = CudaAsyncMemoryResource::new().unwrap();
    let v = DeviceUvector::from_slice_with_resource(&data, s.view(), async_mr).unwrap();
    let err = v.into_cust().expect_err("cuda_async memory must not go to cust");
    assert!(matches!(err.error, Error::Logic(_)), "{:?}", err.error);
    assert_eq!(
        err.uvector.copy_to_host(s.view()).unwrap(),
        data,
        "vector given back intact"
    );
    // Nor can a vector whose capacity exceeds its length.
    let mut v = DeviceUvector::from_slice_with_resource(&data, s.view(), CudaMemoryResource::new()).unwrap();
    v.resize(10, s.view()).unwrap();
    let err = v.into_cust().expect_err("capacity > len");
    assert!(matches!(err.error, Error::Logic(_)));
    let mut v = *err.uvector;
    v.shrink_to_fit(s.view()).unwrap();
    let back = v.into_cust().expect("after shrink_to_fit");
    let mut host = vec![0u32; 10];
    back.copy_to(&mut host[..]).unwrap();
    assert_eq!(host, &data[..10]);
}

// ---------------------------------------------------------------------------
// GPU: DeviceScalar
// ---------------------------------------------------------------------------

#[test]
fn gpu_scalar_values() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let mut x = DeviceScalar::with_value_and_resource(41u64, s.view(), mr.clone()).unwrap();
        assert_eq!(x.value(s.view()).unwrap(), 41, "{name}");
        x.set_value_async(u64::MAX - 1, s.view()).unwrap();
        assert_eq!(x.value(s.view()).unwrap(), u64::MAX - 1, "{name}");
        x.set_value_to_zero_async(s.view()).unwrap();
        assert_eq!(x.value(s.view()).unwrap(), 0, "{name}");
        assert!(!x.data().is_null() && x.data().is_aligned(256), "{name}");
        #[cfg(feature = "cust")]
        assert_eq!(x.as_cust_ptr().as_raw(), x.data().addr(), "{name}");
        assert_eq!(x.as_span_mut().len(), 1);
        assert_eq!(x.as_uvector().len(), 1);
        let c = x.try_clone_on(s.view(), mr.clone()).unwrap();
        x.set_value_async(9, s.view()).unwrap();
        assert_eq!(
            (c.value(s.view()).unwrap(), x.value(s.view()).unwrap()),
            (0, 9),
            "{name}"
        );
        let mut y = DeviceScalar::<[f32; 3]>::with_resource(s.view(), mr.clone()).unwrap();
        y.set_value_async([1.0, -2.0, 3.5], s.view()).unwrap();
        assert_eq!(y.value(s.view()).unwrap(), [1.0, -2.0, 3.5], "{name}");
        let mut z = DeviceScalar::with_value_and_resource(7u8, s.view(), mr.clone()).unwrap();
        z.set_stream(CudaStreamView::DEFAULT).unwrap();
        assert_eq!(z.stream(), CudaStreamView::DEFAULT);
        assert_eq!(z.value(s.view()).unwrap(), 7, "{name}");
        assert_eq!(z.device(), current_device().unwrap());
        assert!(z.resource().is_equal(&mr));
    }
}

// ---------------------------------------------------------------------------
// GPU: devices
// ---------------------------------------------------------------------------

#[test]
fn gpu_buffer_made_on_device_0_dropped_while_device_1_current() {
    rmm_testing::require_gpu!();
    let host = pattern(100_000, 42);
    let g0 = DeviceGuard::new(DeviceId(0)).unwrap();
    let s0 = CudaStream::new().unwrap();
    let async0 = CudaAsyncMemoryResource::new().unwrap();
    let b_cuda = DeviceBuffer::from_host(&host, s0.view(), CudaMemoryResource::new()).unwrap();
    let b_async = DeviceBuffer::from_host(&host, s0.view(), async0.clone()).unwrap();
    let v_managed =
        DeviceUvector::from_slice_with_resource(&host, s0.view(), ManagedMemoryResource::new()).unwrap();
    assert_eq!(b_cuda.device(), DeviceId(0));
    assert_eq!(b_async.device(), DeviceId(0));
    if device_count() < 2 {
        eprintln!(
            "gpu_buffer_made_on_device_0_dropped_while_device_1_current: 1 device, single-device part only"
        );
        drop((b_cuda, b_async, v_managed));
        assert_eq!(current_device().unwrap(), DeviceId(0));
        drop(g0);
        return;
    }
    set_current_device(DeviceId(1)).unwrap();
    let s1 = CudaStream::new().unwrap();
    let b1 = DeviceBuffer::from_host(&host[..1000], s1.view(), CudaMemoryResource::new()).unwrap();
    assert_eq!(b1.device(), DeviceId(1));
    // Reads and resizes of device-0 buffers work with device 1 current, and
    // leave device 1 current.
    assert_eq!(b_async.to_host(s0.view()).unwrap(), host);
    assert_eq!(current_device().unwrap(), DeviceId(1));
    let mut b_cuda = b_cuda;
    b_cuda.resize(200_000, s0.view()).unwrap();
    assert_eq!(&b_cuda.to_host(s0.view()).unwrap()[..100_000], &host[..]);
    assert_eq!(current_device().unwrap(), DeviceId(1));
    drop(b_cuda);
    drop(b_async);
    drop(v_managed);
    assert_eq!(
        current_device().unwrap(),
        DeviceId(1),
        "drop restored the current device"
    );
    assert_eq!(b1.to_host(s1.view()).unwrap(), &host[..1000]);
    drop(b1);
    drop(s1);
    set_current_device(DeviceId(0)).unwrap();
    s0.synchronize().unwrap();
    drop(g0);
}

// ---------------------------------------------------------------------------
// CPU: simulated memory (run everywhere)
// ---------------------------------------------------------------------------

#[test]
fn cpu_buffer_sizes_capacity_and_frees() {
    let sim = SimulatedMemoryResource::new(1 << 30);
    let s = fake_stream(0);
    let mut b = DeviceBuffer::with_resource(1000, s, sim.clone()).unwrap();
    assert_eq!(
        (b.size(), b.capacity(), b.alignment(), b.stream()),
        (1000, 1000, 256, s)
    );
    assert_eq!((sim.live_allocations(), sim.allocated_bytes()), (1, r256(1000)));
    assert_eq!(b.device(), DeviceId(0));
    b.resize(10, s).unwrap();
    assert_eq!(
        (b.size(), b.capacity(), sim.allocated_bytes()),
        (10, 1000, r256(1000))
    );
    b.resize(5000, fake_stream(1)).unwrap();
    assert_eq!((b.size(), b.capacity(), b.stream()), (5000, 5000, fake_stream(1)));
    assert_eq!(
        (sim.live_allocations(), sim.allocated_bytes()),
        (1, r256(5000)),
        "old memory freed"
    );
    b.reserve(4000, s).unwrap();
    assert_eq!((b.capacity(), b.stream()), (5000, s));
    b.reserve(8000, s).unwrap();
    assert_eq!(
        (b.size(), b.capacity(), sim.allocated_bytes()),
        (5000, 8000, r256(8000))
    );
    b.shrink_to_fit(s).unwrap();
    assert_eq!(
        (b.size(), b.capacity(), sim.allocated_bytes()),
        (5000, 5000, r256(5000))
    );
    let p = b.data();
    b.shrink_to_fit(s).unwrap();
    assert_eq!(b.data(), p, "shrink at size == capacity keeps the allocation");
    b.resize(0, s).unwrap();
    assert!(b.is_empty());
    b.shrink_to_fit(s).unwrap();
    assert_eq!(
        (b.capacity(), b.data().is_null(), sim.live_allocations()),
        (0, true, 0)
    );
    b.resize(300, s).unwrap();
    assert_eq!(sim.live_allocations(), 1);
    drop(b);
    assert_eq!(
        (sim.live_allocations(), sim.allocated_bytes(), sim.bad_frees()),
        (0, 0, 0)
    );
    let empty = DeviceBuffer::with_resource(0, s, sim.clone()).unwrap();
    assert!(empty.data().is_null() && empty.is_empty());
    assert_eq!(sim.live_allocations(), 0, "zero bytes allocate nothing");
}

#[test]
fn cpu_buffer_alignment_errors() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    for bad in [0usize, 3, 24, 255] {
        let e = DeviceBuffer::with_alignment(10, bad, fake_stream(0), sim.clone());
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "{bad}: {e:?}");
    }
    for big in [512usize, 1 << 20] {
        let e = DeviceBuffer::with_alignment(10, big, fake_stream(0), sim.clone());
        assert!(matches!(e, Err(Error::BadAlloc(_))), "{big}: {e:?}");
    }
    let mut b = DeviceBuffer::with_alignment(10, 128, fake_stream(0), sim.clone()).unwrap();
    b.resize(10_000, fake_stream(0)).unwrap();
    assert_eq!(b.alignment(), 128, "alignment kept across reallocation");
    assert!(b.data().is_aligned(128));
    drop(b);
    assert_eq!(sim.live_allocations(), 0);
}

#[test]
fn cpu_buffer_out_of_memory_leaves_buffer_unchanged() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let e = DeviceBuffer::with_resource(2 << 20, s, sim.clone());
    assert!(matches!(e, Err(ref err) if err.is_out_of_memory()), "{e:?}");
    let mut b = DeviceBuffer::with_resource(1000, s, sim.clone()).unwrap();
    let p = b.data();
    let e = b.resize(2 << 20, s);
    assert!(matches!(e, Err(ref err) if err.is_out_of_memory()), "{e:?}");
    assert_eq!((b.size(), b.capacity(), b.data()), (1000, 1000, p));
    let e = b.reserve(2 << 20, s);
    assert!(e.is_err());
    assert_eq!((b.capacity(), sim.live_allocations()), (1000, 1));
}

#[test]
fn cpu_buffer_contents_need_real_memory() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let mut b = DeviceBuffer::with_resource(16, s, sim.clone()).unwrap();
    assert!(matches!(b.to_host(s), Err(Error::Logic(_))));
    assert!(matches!(b.copy_from_host(&[0; 16], s), Err(Error::Logic(_))));
    assert!(matches!(
        b.copy_from_host(&[0; 15], s),
        Err(Error::InvalidArgument(_))
    ));
    let e = DeviceBuffer::from_host(&[1, 2, 3], s, sim.clone());
    assert!(matches!(e, Err(Error::Logic(_))), "{e:?}");
    assert_eq!(sim.live_allocations(), 1, "the failed from_host freed its memory");
    // Empty transfers never reach the driver.
    let mut e0 = DeviceBuffer::from_host(&[], s, sim.clone()).unwrap();
    assert_eq!(e0.to_host(s).unwrap(), Vec::<u8>::new());
    e0.copy_from_host(&[], s).unwrap();
    // SAFETY: zero bytes are copied; the source is never read.
    let d = unsafe { DeviceBuffer::from_device(rmm::DevicePtr::NULL, 0, s, sim.clone()) }.unwrap();
    assert!(d.is_empty());
    // SAFETY: the call fails before reading the source.
    let e = unsafe { DeviceBuffer::from_device(b.data(), 16, s, sim.clone()) };
    assert!(matches!(e, Err(Error::Logic(_))), "{e:?}");
    // SAFETY: the calls fail before reading the source.
    let e = unsafe { DeviceUvector::<u32>::from_device(b.data(), 4, s, sim.clone()) };
    assert!(matches!(e, Err(Error::Logic(_))), "{e:?}");
    // SAFETY: as above.
    let e = unsafe { DeviceUvector::<u32>::from_device(b.data(), usize::MAX / 2, s, sim.clone()) };
    assert!(matches!(e, Err(Error::InvalidArgument(_))), "{e:?}");
    // Clones within simulated memory carry sizes and alignment.
    b.reserve(64, s).unwrap();
    let c = b.try_clone_on(fake_stream(2), sim.clone()).unwrap();
    assert_eq!((c.size(), c.capacity(), c.stream()), (16, 16, fake_stream(2)));
    assert_ne!(c.data(), b.data());
    b.set_stream(fake_stream(3)).unwrap();
    assert_eq!(b.stream(), fake_stream(3));
    drop((b, c, e0, d));
    assert_eq!((sim.live_allocations(), sim.bad_frees()), (0, 0));
}

#[test]
fn cpu_access_refuses_simulated_memory_before_the_driver() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let a = DeviceBuffer::with_resource(64, s, sim.clone()).unwrap();
    let b = DeviceBuffer::with_resource(64, fake_stream(1), sim.clone()).unwrap();
    let mut ran = false;
    let e = a.access("my_kernel", fake_stream(2), |_| {
        ran = true;
        Ok(())
    });
    assert!(
        matches!(&e, Err(Error::Logic(m)) if m.contains("my_kernel") && m.contains("simulated")),
        "{e:?}"
    );
    let e = DeviceBuffer::access_all("my_copy", &[&a, &b], fake_stream(2), |_| {
        ran = true;
        Ok(())
    });
    assert!(
        matches!(&e, Err(Error::Logic(m)) if m.contains("my_copy")),
        "{e:?}"
    );
    assert!(!ran, "the work ran on simulated memory");
    // No buffers: nothing to order, the work runs on the given stream.
    let seen = DeviceBuffer::access_all("none", &[], fake_stream(3), |w| Ok(w.as_raw())).unwrap();
    assert_eq!(seen, fake_stream(3).as_raw());
    drop((a, b));
    assert_eq!((sim.live_allocations(), sim.bad_frees()), (0, 0));
}

#[test]
fn cpu_buffer_raw_parts_roundtrip() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let b = DeviceBuffer::with_alignment(100, 64, fake_stream(1), sim.clone()).unwrap();
    let p = b.data();
    let parts = b.into_raw_parts();
    assert_eq!(
        (parts.ptr, parts.size, parts.capacity, parts.alignment),
        (p, 100, 100, 64)
    );
    assert_eq!(sim.live_allocations(), 1, "into_raw_parts does not free");
    // SAFETY: the parts came from into_raw_parts just above.
    let b = unsafe { DeviceBuffer::from_raw_parts(parts) };
    assert_eq!(b.data(), p);
    drop(b);
    assert_eq!((sim.live_allocations(), sim.bad_frees()), (0, 0));
}

#[test]
fn cpu_uvector_arithmetic_and_overflow() {
    let sim = SimulatedMemoryResource::new(1 << 30);
    let s = fake_stream(0);
    let mut v = DeviceUvector::<u64>::with_resource(10, s, sim.clone()).unwrap();
    assert_eq!(
        (v.len(), v.capacity(), v.size_bytes(), sim.allocated_bytes()),
        (10, 10, 80, r256(80))
    );
    v.resize(3, s).unwrap();
    assert_eq!((v.len(), v.capacity()), (3, 10));
    v.reserve(100, s).unwrap();
    assert_eq!(
        (v.len(), v.capacity(), sim.allocated_bytes()),
        (3, 100, r256(800))
    );
    v.shrink_to_fit(s).unwrap();
    assert_eq!((v.len(), v.capacity(), sim.allocated_bytes()), (3, 3, r256(24)));
    for huge in [usize::MAX, usize::MAX / 8 + 1] {
        assert!(
            matches!(v.resize(huge, s), Err(Error::InvalidArgument(_))),
            "{huge}"
        );
        assert!(
            matches!(v.reserve(huge, s), Err(Error::InvalidArgument(_))),
            "{huge}"
        );
        let e = DeviceUvector::<u64>::with_resource(huge, s, sim.clone());
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "{huge}");
    }
    assert_eq!((v.len(), v.capacity()), (3, 3), "unchanged after overflow");
    let odd = DeviceUvector::<[u8; 3]>::with_resource(7, s, sim.clone()).unwrap();
    assert_eq!((odd.len(), odd.size_bytes()), (7, 21));
    #[derive(Clone, Copy)]
    struct Zst;
    // SAFETY: a zero-sized type has one (empty) bit pattern.
    unsafe impl rmm::DevicePod for Zst {}
    let e = DeviceUvector::<Zst>::with_resource(1, s, sim.clone());
    assert!(matches!(e, Err(Error::InvalidArgument(_))));
    let span = v.as_span();
    assert_eq!((span.ptr(), span.len(), span.size_bytes()), (v.data(), 3, 24));
    assert_eq!(v.as_span_mut().len(), 3);
    #[cfg(feature = "cust")]
    assert_eq!(v.as_cust_ptr().as_raw(), v.data().addr());
    drop((v, odd));
    assert_eq!((sim.live_allocations(), sim.bad_frees()), (0, 0));
}

#[test]
fn cpu_uvector_index_errors_come_before_gpu_work() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let mut v = DeviceUvector::<u32>::with_resource(5, s, sim.clone()).unwrap();
    for bad in [5usize, 6, usize::MAX] {
        assert!(matches!(v.element(bad, s), Err(Error::OutOfRange(_))));
        assert!(matches!(v.set_element(bad, 1, s), Err(Error::OutOfRange(_))));
        assert!(matches!(
            v.set_element_async(bad, 1, s),
            Err(Error::OutOfRange(_))
        ));
        assert!(matches!(
            v.set_element_to_zero_async(bad, s),
            Err(Error::OutOfRange(_))
        ));
    }
    // In range, simulated memory has no contents: a clear error, not a crash.
    assert!(matches!(v.element(4, s), Err(Error::Logic(_))));
    assert!(matches!(v.set_element_async(4, 1, s), Err(Error::Logic(_))));
    assert!(matches!(v.set_element_to_zero_async(4, s), Err(Error::Logic(_))));
    assert!(matches!(v.copy_to_host(s), Err(Error::Logic(_))));
    assert!(matches!(
        v.copy_from_host(&[1, 2], s),
        Err(Error::InvalidArgument(_))
    ));
    let empty = DeviceUvector::<u32>::with_resource(0, s, sim.clone()).unwrap();
    assert!(matches!(empty.front_element(s), Err(Error::OutOfRange(_))));
    assert!(matches!(empty.back_element(s), Err(Error::OutOfRange(_))));
    assert_eq!(empty.copy_to_host(s).unwrap(), Vec::<u32>::new());
    let e = DeviceUvector::from_slice_with_resource(&[1u32, 2], s, sim.clone());
    assert!(matches!(e, Err(Error::Logic(_))));
    let e0 = DeviceUvector::<u32>::from_slice_with_resource(&[], s, sim.clone()).unwrap();
    assert!(e0.is_empty());
    drop((v, empty, e0));
    assert_eq!(sim.live_allocations(), 0);
}

#[test]
fn cpu_uvector_release_from_buffer_and_cust_refusal() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let v = DeviceUvector::<u32>::with_resource(6, s, sim.clone()).unwrap();
    let p = v.data();
    let b = v.release();
    assert_eq!((b.size(), b.data()), (24, p));
    let w = DeviceUvector::<u64>::from_buffer(b).unwrap();
    assert_eq!((w.len(), w.data()), (3, p));
    let b = DeviceBuffer::with_resource(10, s, sim.clone()).unwrap();
    assert!(matches!(
        DeviceUvector::<u32>::from_buffer(b),
        Err(Error::InvalidArgument(_))
    ));
    let b = DeviceBuffer::with_alignment(16, 4, s, sim.clone()).unwrap();
    let e = DeviceUvector::<u64>::from_buffer(b);
    assert!(
        matches!(e, Err(Error::InvalidArgument(_))),
        "4-byte aligned buffer as u64: {e:?}"
    );
    #[cfg(feature = "cust")]
    let w = {
        let err = w.into_cust().expect_err("simulated memory is not cust's");
        assert!(matches!(err.error, Error::Logic(_)));
        *err.uvector
    };
    assert_eq!((w.len(), w.data()), (3, p), "vector given back");
    let c = w.try_clone_on(fake_stream(1), sim.clone()).unwrap();
    assert_eq!((c.len(), c.stream()), (3, fake_stream(1)));
    drop((w, c));
    assert_eq!((sim.live_allocations(), sim.bad_frees()), (0, 0));
}

#[test]
fn cpu_scalar_over_simulated_memory() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let mut x = DeviceScalar::<f64>::with_resource(s, sim.clone()).unwrap();
    assert!(!x.data().is_null() && x.data().is_aligned(256));
    #[cfg(feature = "cust")]
    assert_eq!(x.as_cust_ptr().as_raw(), x.data().addr());
    assert_eq!(sim.allocated_bytes(), r256(8));
    assert!(matches!(x.value(s), Err(Error::Logic(_))));
    assert!(matches!(x.set_value_async(1.0, s), Err(Error::Logic(_))));
    assert!(matches!(x.set_value_to_zero_async(s), Err(Error::Logic(_))));
    x.set_stream(fake_stream(1)).unwrap();
    assert_eq!(x.stream(), fake_stream(1));
    let e = DeviceScalar::with_value_and_resource(1u32, s, sim.clone());
    assert!(matches!(e, Err(Error::Logic(_))));
    drop(x);
    assert_eq!((sim.live_allocations(), sim.bad_frees()), (0, 0));
}

#[test]
fn cpu_new_uses_the_current_device_resource() {
    let _l = lock_current();
    let sim = SharedResource::new(SimulatedMemoryResource::new(1 << 20));
    let old = set_current_device_resource(sim.clone()).unwrap();
    let b = DeviceBuffer::new(100, fake_stream(0));
    let v = DeviceUvector::<u16>::new(10, fake_stream(0));
    let x = DeviceScalar::<u8>::new(fake_stream(0));
    set_current_device_resource(old).unwrap();
    let (b, v, x) = (b.unwrap(), v.unwrap(), x.unwrap());
    assert!(b.resource().ptr_eq(&sim) && v.resource().ptr_eq(&sim) && x.resource().ptr_eq(&sim));
    assert_eq!(
        sim.inner()
            .downcast_ref::<SimulatedMemoryResource>()
            .unwrap()
            .live_allocations(),
        3
    );
}

#[test]
fn cpu_buffer_resize_reserve_shrink_against_a_model() {
    // Random size/capacity operations over simulated memory, checked against
    // a two-number model and against what the resource has outstanding.
    let sim = SimulatedMemoryResource::new(1 << 30);
    let mut rng = SplitMix64(2024);
    let mut b = DeviceBuffer::with_resource(0, fake_stream(0), sim.clone()).unwrap();
    let (mut size, mut capacity) = (0usize, 0usize);
    for step in 0..5000 {
        let s = fake_stream(rng.below(4));
        let n = match rng.below(3) {
            0 => rng.below(64),
            1 => rng.below(5000),
            _ => rng.below(1 << 20),
        };
        let (before, prev_capacity) = (b.data(), capacity);
        match rng.below(4) {
            0 | 1 => {
                b.resize(n, s).unwrap();
                if n > capacity {
                    capacity = n;
                }
                size = n;
            }
            2 => {
                b.reserve(n, s).unwrap();
                capacity = capacity.max(n);
            }
            _ => {
                b.shrink_to_fit(s).unwrap();
                capacity = size;
            }
        }
        assert_eq!(
            (b.size(), b.capacity(), b.stream()),
            (size, capacity, s),
            "step {step}"
        );
        assert_eq!(b.is_empty(), size == 0, "step {step}");
        assert_eq!(b.data().is_null(), capacity == 0, "step {step}");
        assert_eq!(sim.allocated_bytes(), r256(capacity), "step {step}");
        assert_eq!(sim.live_allocations(), usize::from(capacity > 0), "step {step}");
        if capacity == prev_capacity {
            assert_eq!(
                b.data(),
                before,
                "step {step}: no reallocation without a capacity change"
            );
        }
    }
    drop(b);
    assert_eq!(
        (sim.live_allocations(), sim.allocated_bytes(), sim.bad_frees()),
        (0, 0, 0)
    );
}
