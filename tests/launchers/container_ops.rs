//! Fill and copy over rmm's containers: GPU tests over the cuda, cuda_async
//! and managed resources, and CPU tests of the argument checks (which fail
//! before any GPU work) over the simulated resource.

use rmm::mr::{
    CudaAsyncMemoryResource, CudaMemoryResource, ManagedMemoryResource, SharedResource,
    SimulatedMemoryResource,
};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DeviceScalar, DeviceUvector, Error};
use rmm_suite::containers::{copy, copy_buffer, fill, fill_bytes};
use rmm_suite::fill::FillValue;

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

fn fake_stream(i: usize) -> CudaStreamView<'static> {
    // SAFETY: only used with simulated resources, which never touch streams.
    unsafe { CudaStreamView::from_raw(0x1000 + 16 * i) }
}

/// Fills a vector whose memory first holds a sentinel, then checks every element.
fn fill_check<T>(name: &str, mr: &SharedResource, n: usize, sentinel: T, value: T, s: CudaStreamView)
where
    T: FillValue + rmm::DevicePod + PartialEq + std::fmt::Debug,
{
    let mut v = DeviceUvector::from_slice_with_resource(&vec![sentinel; n], s, mr.clone()).unwrap();
    fill(&mut v, value, s).unwrap();
    let host = v.copy_to_host(s).unwrap();
    assert_eq!(host.len(), n);
    if let Some(i) = host.iter().position(|x| x.bits() != value.bits()) {
        panic!("{name}: element {i} of {n} is {:?}, expected {value:?}", host[i]);
    }
}

#[test]
fn gpu_fill_every_width_size_and_resource() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    let sv = s.view();
    for (name, mr) in gpu_resources() {
        for n in [0usize, 1, 3, 17, 1000, (1 << 20) + 1] {
            fill_check::<u8>(name, &mr, n, 0xAB, 0x5A, sv);
            fill_check::<u8>(name, &mr, n, 0xAB, 0, sv);
            fill_check::<i16>(name, &mr, n, 7, -2, sv);
            fill_check::<u16>(name, &mr, n, 7, 0, sv);
            fill_check::<u32>(name, &mr, n, 1, 0xDEAD_BEEF, sv);
            fill_check::<i32>(name, &mr, n, 1, 0, sv);
            fill_check::<f32>(name, &mr, n, 1.0, -1.5, sv);
            fill_check::<f32>(name, &mr, n, 1.0, -0.0, sv); // not all-zero bits: the kernel path
            fill_check::<u64>(name, &mr, n, 9, 0x0123_4567_89AB_CDEF, sv);
            fill_check::<f64>(name, &mr, n, 9.0, 0.0, sv);
            fill_check::<f64>(name, &mr, n, 9.0, std::f64::consts::E, sv);
        }
    }
}

#[test]
fn gpu_fill_scalar_and_bytes() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let mut b = DeviceBuffer::from_host(&[1u8; 1001], s.view(), mr.clone()).unwrap();
        fill_bytes(&mut b, 0xC3, s.view()).unwrap();
        assert!(b.to_host(s.view()).unwrap().iter().all(|&x| x == 0xC3), "{name}");
        let mut x = DeviceScalar::with_value_and_resource(5u32, s.view(), mr.clone()).unwrap();
        let mut v = DeviceUvector::<u32>::with_resource(1, s.view(), mr.clone()).unwrap();
        fill(&mut v, 77, s.view()).unwrap();
        assert_eq!(v.element(0, s.view()).unwrap(), 77, "{name}");
        x.set_value_async(v.element(0, s.view()).unwrap() + 1, s.view())
            .unwrap();
        assert_eq!(x.value(s.view()).unwrap(), 78, "{name}");
    }
}

#[test]
fn gpu_fill_on_another_stream_is_ordered() {
    rmm_testing::require_gpu!();
    let a = CudaStream::non_blocking().unwrap();
    let b = CudaStream::non_blocking().unwrap();
    for (name, mr) in gpu_resources() {
        let n = 1 << 22;
        let mut v = DeviceUvector::<u32>::with_resource(n, a.view(), mr.clone()).unwrap();
        fill(&mut v, 1, a.view()).unwrap();
        fill(&mut v, 2, b.view()).unwrap(); // runs after the fill on `a`
        let host = v.copy_to_host(a.view()).unwrap(); // runs after the fill on `b`
        assert!(host.iter().all(|&x| x == 2), "{name}");
    }
}

#[test]
fn gpu_copy_across_resources_and_streams() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    let s2 = CudaStream::non_blocking().unwrap();
    let resources = gpu_resources();
    for (from, mr_a) in &resources {
        for (to, mr_b) in &resources {
            for n in [0usize, 1, 5, 4097, 1 << 20] {
                let data: Vec<u64> = (0..n as u64).map(|i| i * 0x9E37_79B9 + 1).collect();
                let src = DeviceUvector::from_slice_with_resource(&data, s.view(), mr_a.clone()).unwrap();
                let mut dst = DeviceUvector::<u64>::with_resource(n, s2.view(), mr_b.clone()).unwrap();
                copy(&mut dst, &src, s2.view()).unwrap();
                drop(src); // freed on `s`, which waits for the copy on `s2`
                assert_eq!(dst.copy_to_host(s.view()).unwrap(), data, "{from}->{to} {n}");
            }
        }
    }
}

#[test]
fn gpu_copy_buffers_and_mismatched_lengths() {
    rmm_testing::require_gpu!();
    let s = CudaStream::new().unwrap();
    for (name, mr) in gpu_resources() {
        let bytes: Vec<u8> = (0..100_003u32).map(|i| (i % 251) as u8).collect();
        let src = DeviceBuffer::from_host(&bytes, s.view(), mr.clone()).unwrap();
        let mut dst = DeviceBuffer::with_resource(bytes.len(), s.view(), mr.clone()).unwrap();
        copy_buffer(&mut dst, &src, s.view()).unwrap();
        assert_eq!(dst.to_host(s.view()).unwrap(), bytes, "{name}");
        let mut short = DeviceBuffer::with_resource(10, s.view(), mr.clone()).unwrap();
        let e = copy_buffer(&mut short, &src, s.view());
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "{name}: {e:?}");
        let a = DeviceUvector::<u16>::with_resource(3, s.view(), mr.clone()).unwrap();
        let mut b = DeviceUvector::<u16>::with_resource(4, s.view(), mr.clone()).unwrap();
        let e = copy(&mut b, &a, s.view());
        assert!(matches!(e, Err(Error::InvalidArgument(_))), "{name}: {e:?}");
    }
}

#[test]
fn cpu_fill_and_copy_check_arguments_first() {
    let sim = SimulatedMemoryResource::new(1 << 20);
    let s = fake_stream(0);
    let a = DeviceUvector::<u32>::with_resource(10, s, sim.clone()).unwrap();
    let mut b = DeviceUvector::<u32>::with_resource(11, s, sim.clone()).unwrap();
    let e = copy(&mut b, &a, s);
    assert!(
        matches!(e, Err(Error::InvalidArgument(ref m)) if m.contains("11") && m.contains("10")),
        "{e:?}"
    );
    let mut c = DeviceUvector::<u32>::with_resource(10, s, sim.clone()).unwrap();
    assert!(matches!(copy(&mut c, &a, s), Err(Error::Logic(_))));
    assert!(matches!(fill(&mut c, 3, s), Err(Error::Logic(_))));
    assert!(matches!(fill(&mut c, 0, s), Err(Error::Logic(_))));
    let mut bytes = DeviceBuffer::with_resource(8, s, sim.clone()).unwrap();
    assert!(matches!(fill_bytes(&mut bytes, 1, s), Err(Error::Logic(_))));
    let short = DeviceBuffer::with_resource(7, s, sim.clone()).unwrap();
    assert!(matches!(
        copy_buffer(&mut bytes, &short, s),
        Err(Error::InvalidArgument(_))
    ));
    // Empty containers: nothing to do, the driver is never called.
    let mut e1 = DeviceUvector::<u64>::with_resource(0, s, sim.clone()).unwrap();
    let e2 = DeviceUvector::<u64>::with_resource(0, s, sim.clone()).unwrap();
    fill(&mut e1, 5, s).unwrap();
    copy(&mut e1, &e2, s).unwrap();
    let mut eb = DeviceBuffer::with_resource(0, s, sim.clone()).unwrap();
    fill_bytes(&mut eb, 9, s).unwrap();
}
