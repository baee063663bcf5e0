//! A driver pool shared between two processes: this test binary runs the
//! test again as a child process that imports the pool, reads what the
//! parent wrote into one allocation and writes its answer back.
#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;

use rmm::mr::{
    CudaAsyncMemoryResource, CudaAsyncOptions, ExportHandleType, ImportedPool, MemoryResource,
    PoolPointerExport,
};
use rmm::{CudaStream, DevicePtr, Error};

const TEST: &str = "cuda_async_pool_shared_with_a_second_process";
/// Set in the child: the inherited descriptor, the export data, the device.
const CHILD_FD: &str = "RMM_IPC_CHILD_FD";
const CHILD_PTR: &str = "RMM_IPC_CHILD_PTR";
const CHILD_DEVICE: &str = "RMM_IPC_CHILD_DEVICE";
const BYTES: usize = 1 << 20;

fn pattern(seed: u8) -> Vec<u8> {
    (0..BYTES)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn upload(dst: DevicePtr, data: &[u8], s: &CudaStream) {
    // SAFETY: `dst` holds BYTES writable bytes; the stream is synchronised
    // before `data` goes away.
    unsafe { rmm::launch::memcpy_async(dst, DevicePtr::new(data.as_ptr() as u64), data.len(), s.view()) }
        .unwrap();
    s.synchronize().unwrap();
}

fn download(src: DevicePtr, s: &CudaStream) -> Vec<u8> {
    let mut out = vec![0u8; BYTES];
    // SAFETY: `src` holds BYTES readable bytes; the stream is synchronised
    // before `out` is read.
    unsafe { rmm::launch::memcpy_async(DevicePtr::new(out.as_mut_ptr() as u64), src, BYTES, s.view()) }
        .unwrap();
    s.synchronize().unwrap();
    out
}

/// The child's side: import, check the parent's bytes, write ours, unmap.
fn child(fd: &str, ptr: &str, device: &str) {
    rmm::device::set_current_device(rmm::device::DeviceId(device.parse().unwrap())).unwrap();
    // SAFETY: the descriptor was inherited from the parent for this process
    // alone and nothing else here uses it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd.parse().unwrap()) };
    let pool = ImportedPool::from_fd(fd).expect("import the pool");
    let a = pool
        .import(&PoolPointerExport::from_hex(ptr).unwrap())
        .expect("import the allocation");
    let s = CudaStream::new().unwrap();
    assert!(
        download(a.ptr(), &s) == pattern(1),
        "the child sees the parent's bytes"
    );
    upload(a.ptr(), &pattern(2), &s);
    a.free(s.view()).unwrap();
    s.synchronize().unwrap();
}

#[test]
fn cuda_async_pool_shared_with_a_second_process() {
    if let (Ok(fd), Ok(ptr), Ok(device)) = (
        std::env::var(CHILD_FD),
        std::env::var(CHILD_PTR),
        std::env::var(CHILD_DEVICE),
    ) {
        child(&fd, &ptr, &device);
        return;
    }
    rmm_testing::require_gpu!(TEST);
    let device = rmm::device::current_device().unwrap();
    let options = CudaAsyncOptions::default().export_handle_type(ExportHandleType::PosixFileDescriptor);
    if !rmm::device::supports_pool_export_posix_fd(device).unwrap() {
        // Checked, not skipped: the unsupported case must be a clear error.
        let e = CudaAsyncMemoryResource::with_options(options).unwrap_err();
        assert!(
            matches!(e, Error::Logic(ref m) if m.contains("PosixFileDescriptor")),
            "{e}"
        );
        eprintln!("{TEST}: {device} cannot export pools as POSIX descriptors; the error was checked");
        return;
    }
    let mr = CudaAsyncMemoryResource::with_options(options).unwrap();
    let s = CudaStream::new().unwrap();
    let p = mr.allocate(BYTES, 256, s.view()).unwrap();
    upload(p, &pattern(1), &s);
    // The pointer first: the driver exports allocations only of a pool that
    // was exported once, which export_pointer sees to itself.
    let export = mr.export_pointer(p).unwrap();
    let fd = mr.export_pool().unwrap();
    // The child inherits the descriptor: clear its close-on-exec flag.
    // SAFETY: a valid descriptor owned by `fd`; only its flags change.
    assert_eq!(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) }, 0);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_FD, fd.as_raw_fd().to_string())
        .env(CHILD_PTR, export.to_hex())
        .env(CHILD_DEVICE, device.value().to_string())
        .env_remove("RMM_REQUIRE_GPUS")
        .output()
        .unwrap();
    drop(fd);
    assert!(
        out.status.success(),
        "child process failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 passed"), "the child ran the test: {stdout}");
    assert!(download(p, &s) == pattern(2), "the parent sees the child's bytes");
    // SAFETY: allocated above; the child unmapped it before exiting.
    unsafe { mr.deallocate(p, BYTES, 256, s.view()) };
    s.synchronize().unwrap();
}

#[test]
fn pools_that_cannot_be_shared_say_so() {
    rmm_testing::require_gpu!("pools_that_cannot_be_shared_say_so");
    let mr = CudaAsyncMemoryResource::new().unwrap();
    let s = CudaStream::new().unwrap();
    let p = mr.allocate(4096, 256, s.view()).unwrap();
    assert!(matches!(mr.export_pool(), Err(Error::Logic(ref m)) if m.contains("PosixFileDescriptor")));
    assert!(matches!(mr.export_pointer(p), Err(Error::Logic(_))));
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(p, 4096, 256, s.view()) };
    // A descriptor that is not an exported pool is refused by the driver.
    let not_a_pool: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
    assert!(ImportedPool::from_fd(not_a_pool).is_err());
}
