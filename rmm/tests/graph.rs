//! CUDA graph capture on a GPU (`rmm::graph`): capture, replay, capture
//! status, abandoned and invalidated captures, launches on another device,
//! `ExecPolicy::capture`, and the driver's graph memory nodes behind
//! `cuda_async`. Every test skips without a GPU (and fails instead with
//! `RMM_REQUIRE_GPU=1`).

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use rmm::device::{DeviceGuard, DeviceId};
use rmm::exec_policy::ExecPolicy;
use rmm::graph::{begin_capture, begin_capture_in, CaptureMode, CaptureStatus, GraphPool};
use rmm::launch::{memcpy_async, memset_async};
use rmm::mr::{CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource, MemoryResource};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DevicePtr, Error};

const N: usize = 4096;

/// While a global-mode capture runs, every other thread's synchronous
/// driver calls (`cuMemAlloc` of the containers' default resource among
/// them) fail and invalidate it: that is CUDA's rule for
/// `CU_STREAM_CAPTURE_MODE_GLOBAL`. Tests that capture in global mode hold
/// this lock exclusively; the others capture thread-locally and share it.
static GLOBAL_MODE: RwLock<()> = RwLock::new(());

/// For a test whose captures are thread-local (or relaxed).
fn thread_local_captures() -> RwLockReadGuard<'static, ()> {
    GLOBAL_MODE.read().unwrap_or_else(|e| e.into_inner())
}

/// For a test with a global-mode capture.
fn global_captures() -> RwLockWriteGuard<'static, ()> {
    GLOBAL_MODE.write().unwrap_or_else(|e| e.into_inner())
}

/// `bytes` bytes at `ptr` (device memory), read back after `stream`'s work.
fn read(ptr: DevicePtr, bytes: usize, stream: CudaStreamView<'_>) -> Vec<u8> {
    let mut host = vec![0u8; bytes];
    // SAFETY: [ptr, ptr + bytes) is live device memory of the caller; `host`
    // is read only after the stream is synchronised.
    unsafe { memcpy_async(DevicePtr::new(host.as_mut_ptr() as u64), ptr, bytes, stream) }.unwrap();
    stream.synchronize().unwrap();
    host
}

#[test]
fn capture_status_is_none_then_active_with_the_capture_id_then_none() {
    rmm_testing::require_gpu!();
    let _mode = global_captures();
    let s = CudaStream::non_blocking().unwrap();
    let other = CudaStream::non_blocking().unwrap();
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    let capture = begin_capture(s.view(), CaptureMode::Global).unwrap();
    assert_eq!(capture.stream(), s.view());
    assert_eq!(
        s.view().capture_status().unwrap(),
        CaptureStatus::Active { id: capture.id() }
    );
    assert_eq!(other.view().capture_status().unwrap(), CaptureStatus::None);
    let graph = capture.end().unwrap();
    assert_eq!(graph.node_count().unwrap(), 0);
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    // Two captures never share an id.
    let a = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    let first = a.id();
    drop(a.end().unwrap());
    let b = begin_capture(s.view(), CaptureMode::Relaxed).unwrap();
    assert_ne!(b.id(), first);
    drop(b);
}

#[test]
fn the_legacy_default_stream_is_refused_and_the_per_thread_stream_captures() {
    rmm_testing::require_gpu!();
    let _mode = thread_local_captures();
    for legacy in [CudaStreamView::DEFAULT, CudaStreamView::LEGACY] {
        let e = begin_capture(legacy, CaptureMode::Global).unwrap_err();
        assert!(matches!(&e, Error::Capture { .. }), "{e:?}");
        assert!(e.to_string().contains("legacy default stream"), "{e}");
    }
    let pt = CudaStreamView::PER_THREAD;
    let buf = DeviceBuffer::new(N, pt).unwrap();
    let capture = begin_capture(pt, CaptureMode::ThreadLocal).unwrap();
    assert!(matches!(
        pt.capture_status().unwrap(),
        CaptureStatus::Active { .. }
    ));
    // SAFETY: `buf` is live device memory of N bytes for the launch below.
    unsafe { memset_async(buf.data(), 0x5a, 1, N, capture.stream()) }.unwrap();
    let exec = capture.end().unwrap().instantiate().unwrap();
    // SAFETY: `buf` outlives the launch (the stream is synchronised in read).
    unsafe { exec.launch(pt) }.unwrap();
    assert!(read(buf.data(), N, pt).iter().all(|&b| b == 0x5a));
}

#[test]
fn a_captured_memset_and_copy_replay_on_changing_input() {
    rmm_testing::require_gpu!();
    let _mode = global_captures();
    let s = CudaStream::non_blocking().unwrap();
    let mut input = DeviceBuffer::new(N, s.view()).unwrap();
    let output = DeviceBuffer::new(2 * N, s.view()).unwrap();
    let capture = begin_capture(s.view(), CaptureMode::Global).unwrap();
    // SAFETY: both buffers are live device memory of these sizes and outlive
    // every launch below.
    unsafe {
        memset_async(output.data(), 0xee, 1, 2 * N, capture.stream()).unwrap();
        memcpy_async(output.data(), input.data(), N, capture.stream()).unwrap();
    }
    // Nothing ran: the work was recorded.
    let graph = capture.end().unwrap();
    assert_eq!(graph.node_count().unwrap(), 2);
    assert_eq!(graph.device(), DeviceId(0));
    let exec = graph.instantiate().unwrap();
    drop(graph);
    assert_eq!(exec.device(), DeviceId(0));
    const ROUNDS: usize = 200;
    for round in 0..ROUNDS {
        let data: Vec<u8> = (0..N).map(|i| (i * 31 + round * 7) as u8).collect();
        input.copy_from_host(&data, s.view()).unwrap();
        // SAFETY: `input` and `output` are alive; `read` synchronises.
        unsafe { exec.launch(s.view()) }.unwrap();
        let out = output.to_host(s.view()).unwrap();
        assert_eq!(&out[..N], &data[..], "round {round}");
        assert!(out[N..].iter().all(|&b| b == 0xee), "round {round}");
    }
}

#[test]
fn a_dropped_capture_ends_and_leaves_the_stream_usable() {
    rmm_testing::require_gpu!();
    let _mode = global_captures();
    let s = CudaStream::non_blocking().unwrap();
    let mut buf = DeviceBuffer::new(N, s.view()).unwrap();
    buf.copy_from_host(&[1u8; N], s.view()).unwrap();
    {
        let capture = begin_capture(s.view(), CaptureMode::Global).unwrap();
        // SAFETY: `buf` is live; the recorded memset never runs.
        unsafe { memset_async(buf.data(), 9, 1, N, capture.stream()) }.unwrap();
    }
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    assert!(
        buf.to_host(s.view()).unwrap().iter().all(|&b| b == 1),
        "the abandoned memset never ran"
    );
    buf.copy_from_host(&[2u8; N], s.view()).unwrap();
    assert!(buf.to_host(s.view()).unwrap().iter().all(|&b| b == 2));
    // And it captures again.
    let again = begin_capture(s.view(), CaptureMode::Global).unwrap();
    drop(again.end().unwrap());
}

#[test]
fn an_invalidated_capture_reports_a_capture_error_and_the_stream_recovers() {
    rmm_testing::require_gpu!();
    let _mode = global_captures();
    let s = CudaStream::non_blocking().unwrap();
    let other = CudaStream::non_blocking().unwrap();
    let capture = begin_capture(s.view(), CaptureMode::Global).unwrap();
    // Synchronising another stream while capturing is illegal in global
    // mode and invalidates the capture.
    assert!(other.synchronize().is_err());
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::Invalidated);
    let e = capture.end().unwrap_err();
    assert!(
        matches!(&e, Error::Capture { stream, reason } if *stream == s.view().as_raw() && reason.contains("invalidated")),
        "{e:?}"
    );
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    s.synchronize().unwrap();
    // The same through ExecPolicy::capture: the closure's illegal call
    // invalidates, the capture still ends, the error says why.
    let policy = ExecPolicy::on_stream(s.view());
    let e = policy
        .capture(|_| {
            let _ = other.synchronize();
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(&e, Error::Capture { .. }), "{e:?}");
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    // The closure's own error comes first.
    let e = policy.capture(|_| Err(Error::Logic("mine".into()))).unwrap_err();
    assert_eq!(e, Error::Logic("mine".into()));
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    // A policy on the legacy default stream cannot capture.
    let e = ExecPolicy::on_stream(CudaStreamView::DEFAULT)
        .capture(|_| Ok(()))
        .unwrap_err();
    assert!(matches!(&e, Error::Capture { stream: 0, .. }), "{e:?}");
}

#[test]
fn a_second_capture_on_a_capturing_stream_is_refused() {
    rmm_testing::require_gpu!();
    let _mode = thread_local_captures();
    let s = CudaStream::non_blocking().unwrap();
    let capture = begin_capture(s.view(), CaptureMode::Relaxed).unwrap();
    let e = begin_capture(s.view(), CaptureMode::Relaxed).unwrap_err();
    assert!(
        matches!(&e, Error::Capture { reason, .. } if reason.contains("already capturing")),
        "{e:?}"
    );
    // The first capture is intact.
    assert_eq!(
        s.view().capture_status().unwrap(),
        CaptureStatus::Active { id: capture.id() }
    );
    drop(capture.end().unwrap());
}

#[test]
fn a_launch_on_a_stream_of_another_device_is_refused() {
    rmm_testing::require_gpus!(2);
    let _mode = thread_local_captures();
    let s0 = CudaStream::non_blocking().unwrap();
    let mut buf = DeviceBuffer::new(N, s0.view()).unwrap();
    buf.copy_from_host(&[0u8; N], s0.view()).unwrap();
    let capture = begin_capture(s0.view(), CaptureMode::ThreadLocal).unwrap();
    // SAFETY: `buf` outlives every launch below.
    unsafe { memset_async(buf.data(), 3, 1, N, capture.stream()) }.unwrap();
    let exec = capture.end().unwrap().instantiate().unwrap();
    let s1 = {
        let _g = DeviceGuard::new(DeviceId(1)).unwrap();
        CudaStream::non_blocking().unwrap()
    };
    // SAFETY: as above.
    let e = unsafe { exec.launch(s1.view()) }.unwrap_err();
    assert!(
        matches!(&e, Error::Logic(m) if m.contains("device 0") && m.contains("device 1")),
        "{e:?}"
    );
    // Nothing ran; on its own device it runs, whichever device is current.
    assert!(read(buf.data(), N, s0.view()).iter().all(|&b| b == 0));
    let _g = DeviceGuard::new(DeviceId(1)).unwrap();
    // SAFETY: as above.
    unsafe { exec.launch(s0.view()) }.unwrap();
    assert!(read(buf.data(), N, s0.view()).iter().all(|&b| b == 3));
    // A graph captured on device 1 instantiates there with device 0 current.
    drop(_g);
    let capture = begin_capture(s1.view(), CaptureMode::ThreadLocal).unwrap();
    let graph = capture.end().unwrap();
    assert_eq!(graph.device(), DeviceId(1));
    assert_eq!(graph.instantiate().unwrap().device(), DeviceId(1));
}

#[test]
fn exec_policy_capture_with_cuda_async_scratch_replays_on_changing_input() {
    rmm_testing::require_gpu!();
    let _mode = global_captures();
    let s = CudaStream::non_blocking().unwrap();
    let mr = CudaAsyncMemoryResource::new().unwrap();
    let policy = ExecPolicy::new(s.view(), mr.clone());
    let mut input = DeviceBuffer::new(N, s.view()).unwrap();
    let output = DeviceBuffer::new(N, s.view()).unwrap();
    let pool = GraphPool::new();
    let exec = policy
        .capture_in(&pool, |p| {
            // Scratch allocated and freed inside the graph: a pair of graph
            // memory nodes, valid for every replay.
            let tmp = p.scratch::<u8>(2 * N)?;
            // SAFETY: `tmp` (2N bytes), `input` and `output` (N bytes) are
            // live device memory; `input` and `output` outlive every launch.
            unsafe {
                memset_async(tmp.ptr(), 0x77, 1, 2 * N, p.stream())?;
                memcpy_async(tmp.ptr(), input.data(), N / 2, p.stream())?;
                memcpy_async(output.data(), tmp.ptr(), N, p.stream())
            }
        })
        .unwrap();
    assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
    for round in 0..100usize {
        let data: Vec<u8> = (0..N).map(|i| (i ^ round) as u8).collect();
        input.copy_from_host(&data, s.view()).unwrap();
        // SAFETY: `input` and `output` are alive; to_host synchronises.
        unsafe { exec.launch(s.view()) }.unwrap();
        let out = output.to_host(s.view()).unwrap();
        assert_eq!(&out[..N / 2], &data[..N / 2], "round {round}");
        assert!(out[N / 2..].iter().all(|&b| b == 0x77), "round {round}");
    }
}

#[test]
fn cuda_async_memory_kept_outside_the_graph_is_valid_after_a_launch_and_freed_after_it() {
    rmm_testing::require_gpu!();
    let _mode = thread_local_captures();
    let s = CudaStream::non_blocking().unwrap();
    let mr = CudaAsyncMemoryResource::new().unwrap();
    let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    // Allocated in the graph, not freed there: the graph's allocation node
    // hands out the same address at every launch.
    let kept = mr.allocate(N, 256, capture.stream()).unwrap();
    // SAFETY: `kept` is N bytes of graph memory, valid when the node runs.
    unsafe { memset_async(kept, 0x42, 1, N, capture.stream()) }.unwrap();
    let exec = capture.end().unwrap().instantiate().unwrap();
    // AUTO_FREE_ON_LAUNCH: each launch frees the previous launch's memory
    // first, so launching again without a free works.
    for launch in 0..3 {
        // SAFETY: the graph's only memory is its own allocation.
        unsafe { exec.launch(s.view()) }.unwrap();
        assert!(
            read(kept, N, s.view()).iter().all(|&b| b == 0x42),
            "launch {launch}"
        );
    }
    // Freed outside the graph after a launch: fine, and it launches again.
    // SAFETY: the last launch's allocation, freed once, in stream order.
    unsafe { mr.deallocate(kept, N, 256, s.view()) };
    // SAFETY: as above.
    unsafe { exec.launch(s.view()) }.unwrap();
    assert!(read(kept, N, s.view()).iter().all(|&b| b == 0x42));
    // SAFETY: as above.
    unsafe { mr.deallocate(kept, N, 256, s.view()) };
    s.synchronize().unwrap();
}

#[test]
fn cuda_async_memory_freed_inside_the_graph_replays_any_number_of_times() {
    rmm_testing::require_gpu!();
    let _mode = thread_local_captures();
    let s = CudaStream::non_blocking().unwrap();
    let mr = CudaAsyncMemoryResource::new().unwrap();
    let output = DeviceBuffer::new(N, s.view()).unwrap();
    let capture = begin_capture_in(s.view(), CaptureMode::ThreadLocal, &GraphPool::new()).unwrap();
    let tmp = mr.allocate(N, 256, capture.stream()).unwrap();
    // SAFETY: `tmp` is N bytes of graph memory; `output` outlives every launch.
    unsafe {
        memset_async(tmp, 0x13, 1, N, capture.stream()).unwrap();
        memcpy_async(output.data(), tmp, N, capture.stream()).unwrap();
        mr.deallocate(tmp, N, 256, capture.stream());
    }
    let graph = capture.end().unwrap();
    assert_eq!(graph.node_count().unwrap(), 4, "alloc, memset, copy, free");
    let exec = graph.instantiate().unwrap();
    for _ in 0..50 {
        // SAFETY: `output` is alive.
        unsafe { exec.launch(s.view()) }.unwrap();
    }
    assert!(output.to_host(s.view()).unwrap().iter().all(|&b| b == 0x13));
    // The graph's memory goes back to the pool once graph and executable are gone.
    drop((graph, exec));
    s.synchronize().unwrap();
}

#[test]
fn cuda_async_managed_memory_freed_inside_the_graph_replays() {
    rmm_testing::require_gpu!();
    let _mode = thread_local_captures();
    let mr = match CudaAsyncManagedMemoryResource::new() {
        Ok(mr) => mr,
        // Managed driver pools need CUDA 13; the constructor says so.
        Err(Error::Logic(why)) => return rmm_testing::report_skip("cuda_async_managed graph", &why),
        Err(e) => panic!("{e}"),
    };
    let s = CudaStream::non_blocking().unwrap();
    let output = DeviceBuffer::new(N, s.view()).unwrap();
    let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    let tmp = match mr.allocate(N, 256, capture.stream()) {
        Ok(tmp) => tmp,
        Err(e) => {
            // The driver may not make graph nodes of managed pools: then the
            // refusal is an error, the capture ends, the stream recovers.
            eprintln!("RMM-GRAPH: cuda_async_managed allocation under capture refused: {e}");
            let ended = capture.end();
            eprintln!("RMM-GRAPH: ending that capture: {:?}", ended.as_ref().map(|_| ()));
            assert_eq!(s.view().capture_status().unwrap(), CaptureStatus::None);
            s.synchronize().unwrap();
            return;
        }
    };
    eprintln!("RMM-GRAPH: cuda_async_managed allocation under capture became a graph node");
    // SAFETY: `tmp` is N bytes of graph memory; `output` outlives every launch.
    unsafe {
        memset_async(tmp, 0x31, 1, N, capture.stream()).unwrap();
        memcpy_async(output.data(), tmp, N, capture.stream()).unwrap();
        mr.deallocate(tmp, N, 256, capture.stream());
    }
    let exec = capture.end().unwrap().instantiate().unwrap();
    for _ in 0..20 {
        // SAFETY: `output` is alive.
        unsafe { exec.launch(s.view()) }.unwrap();
    }
    assert!(output.to_host(s.view()).unwrap().iter().all(|&b| b == 0x31));
}

#[test]
fn executables_launch_from_several_threads() {
    rmm_testing::require_gpu!();
    let _mode = thread_local_captures();
    let s = CudaStream::non_blocking().unwrap();
    let buf = DeviceBuffer::new(N, s.view()).unwrap();
    let capture = begin_capture(s.view(), CaptureMode::ThreadLocal).unwrap();
    // SAFETY: `buf` outlives every launch (the threads join first).
    unsafe { memset_async(buf.data(), 0x21, 1, N, capture.stream()) }.unwrap();
    let exec = capture.end().unwrap().instantiate().unwrap();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let mine = CudaStream::non_blocking().unwrap();
                for _ in 0..25 {
                    // SAFETY: as above.
                    unsafe { exec.launch(mine.view()) }.unwrap();
                }
                mine.synchronize().unwrap();
            });
        }
    });
    assert!(read(buf.data(), N, s.view()).iter().all(|&b| b == 0x21));
}
