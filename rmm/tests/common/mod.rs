//! The conformance suite every resource and adaptor must pass, and helpers.
//!
//! Instantiate it with
//! `conformance_suite!(name, gpu | cpu, || make_resource());` in a test file
//! that has `mod common;` (or, in a module of a test binary, whose crate root has it). `gpu` suites skip without a GPU (and fail with
//! RMM_REQUIRE_GPU=1); `cpu` suites (over the simulated resource) always run.
#![allow(dead_code, missing_docs)]

use std::collections::BTreeMap;

use rmm::mr::MemoryResource;
use rmm::{CudaStream, CudaStreamView, DevicePtr, Error};

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;
pub const GIB: usize = 1 << 30;

pub use rmm_testing::SplitMix64;

/// Streams for a resource: real ones on a GPU, distinct fake handles for
/// simulated resources (which never touch streams).
pub enum Streams {
    Real(Vec<CudaStream>),
    Fake(Vec<CudaStreamView<'static>>),
}

impl Streams {
    pub fn new(mr: &dyn MemoryResource, n: usize) -> Streams {
        if mr.is_simulated() {
            // SAFETY: simulated resources never pass stream handles to the driver.
            Streams::Fake(
                (0..n)
                    .map(|i| unsafe { CudaStreamView::from_raw(0x1000 + 16 * i) })
                    .collect(),
            )
        } else {
            Streams::Real((0..n).map(|_| CudaStream::new().expect("stream")).collect())
        }
    }
    pub fn get(&self, i: usize) -> CudaStreamView<'_> {
        match self {
            Streams::Real(v) => v[i % v.len()].view(),
            Streams::Fake(v) => v[i % v.len()],
        }
    }
    pub fn sync(&self, i: usize) {
        if let Streams::Real(v) = self {
            v[i % v.len()].synchronize().expect("sync");
        }
    }
}

/// Checks that no two live ranges overlap.
pub fn assert_disjoint(live: &[(DevicePtr, usize)]) {
    let mut sorted: Vec<_> = live.iter().filter(|(p, _)| !p.is_null()).copied().collect();
    sorted.sort();
    for w in sorted.windows(2) {
        let (a, sa) = w[0];
        let (b, _) = w[1];
        assert!(a.addr() + sa as u64 <= b.addr(), "overlap: {a:?}+{sa} and {b:?}");
    }
}

/// Writes a byte pattern through the GPU and reads it back (real device memory only).
pub fn touch(mr: &dyn MemoryResource, p: DevicePtr, bytes: usize, stream: CudaStreamView) {
    if mr.is_simulated() || !mr.is_device_accessible() || bytes == 0 {
        return;
    }
    let n = bytes.min(4096);
    let value = (p.addr() as u8) | 1;
    let mut host = vec![0u8; n];
    // SAFETY: [p, p + n) is live memory of `mr`; `host` outlives the copy
    // because the stream is synchronised before it is read or dropped.
    unsafe {
        rmm::launch::memset_async(p, value as u32, 1, n, stream).expect("memset");
        rmm::launch::memcpy_async(rmm::DevicePtr::new(host.as_mut_ptr() as u64), p, n, stream)
            .expect("memcpy");
    }
    stream.synchronize().expect("sync");
    assert!(
        host.iter().all(|&b| b == value),
        "memory at {p:?} did not hold what was written"
    );
}

pub fn zero_bytes(mr: &dyn MemoryResource) {
    let s = Streams::new(mr, 1);
    let p = mr.allocate(0, 256, s.get(0)).expect("zero-byte allocate");
    // SAFETY: p came from mr with these arguments.
    unsafe { mr.deallocate(p, 0, 256, s.get(0)) };
    // Null is always a valid no-op free.
    // SAFETY: freeing null with 0 bytes is defined as a no-op.
    unsafe { mr.deallocate(DevicePtr::NULL, 0, 256, s.get(0)) };
}

pub fn sizes_and_alignment(mr: &dyn MemoryResource, max: usize) {
    let s = Streams::new(mr, 1);
    let st = s.get(0);
    let mut size = 1usize;
    while size <= max {
        for bytes in [size, size + 3] {
            match mr.allocate(bytes, 256, st) {
                Ok(p) => {
                    assert!(!p.is_null(), "{bytes} bytes gave null");
                    assert!(p.is_aligned(256), "{bytes} bytes gave unaligned {p:?}");
                    touch(mr, p, bytes, st);
                    // SAFETY: p came from mr with these arguments.
                    unsafe { mr.deallocate(p, bytes, 256, st) };
                }
                Err(e) => assert!(
                    e.is_out_of_memory() && bytes >= 256 * MIB,
                    "{bytes} bytes failed: {e}"
                ),
            }
        }
        size *= 4;
    }
    for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 256] {
        let p = mr.allocate(100, align, st).expect("small aligned allocation");
        assert!(
            p.is_aligned(align) && p.is_aligned(256),
            "alignment {align} gave {p:?}"
        );
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, 100, align, st) };
    }
    s.sync(0);
}

/// Every resource and adaptor reports an alignment it cannot serve as
/// [`Error::BadAlloc`] (rmm::mr docs), never another variant.
pub fn bad_alignment(mr: &dyn MemoryResource) {
    let s = Streams::new(mr, 1);
    for align in [0usize, 3, 48, 257] {
        let r = mr.allocate(64, align, s.get(0));
        assert!(
            matches!(r, Err(Error::BadAlloc(_))),
            "alignment {align}: expected Err(BadAlloc), got {r:?}"
        );
    }
}

pub fn out_of_memory(mr: &dyn MemoryResource) {
    let s = Streams::new(mr, 1);
    let r = mr.allocate(1 << 50, 256, s.get(0)); // 1 PiB
    match r {
        Err(e) => {
            assert!(e.is_out_of_memory(), "1 PiB gave {e} instead of out_of_memory");
            assert!(e.to_string().contains("out_of_memory"));
            // Every resource's error carries a report whose top layer is
            // the resource itself, and a snapshot of it reads back.
            let report = e.oom_report().unwrap_or_else(|| panic!("no report on {e:?}"));
            assert_eq!(report.request.size, 1 << 50);
            let snap = rmm::mr::snapshot(mr);
            // The walk's layers, in order (a report may know more: a
            // callback resource's callbacks calling another resource).
            let names =
                |layers: &[rmm::mr::LayerState]| layers.iter().map(|l| l.name.clone()).collect::<Vec<_>>();
            let walked = names(&snap.layers);
            assert_eq!(names(&report.snapshot.layers)[..walked.len()], walked[..], "{e}");
            assert_eq!(rmm::mr::Snapshot::from_json(&snap.to_json()).as_ref(), Ok(&snap));
        }
        Ok(p) => panic!("1 PiB allocation succeeded: {p:?}"),
    }
    // The resource still works afterwards.
    let p = mr.allocate(1024, 256, s.get(0)).expect("allocation after OOM");
    // SAFETY: p came from mr with these arguments.
    unsafe { mr.deallocate(p, 1024, 256, s.get(0)) };
}

pub fn many_live(mr: &dyn MemoryResource, count: usize, max_size: usize) {
    let s = Streams::new(mr, 1);
    let st = s.get(0);
    let mut rng = SplitMix64(7);
    let mut live = Vec::with_capacity(count);
    for _ in 0..count {
        let bytes = 1 + rng.below(max_size);
        let p = mr.allocate(bytes, 256, st).expect("allocate");
        assert!(!p.is_null() && p.is_aligned(256));
        live.push((p, bytes));
    }
    assert_disjoint(&live);
    for (i, &(p, b)) in live.iter().enumerate() {
        if i % 97 == 0 {
            touch(mr, p, b, st);
        }
    }
    // Free in random order.
    while !live.is_empty() {
        let i = rng.below(live.len());
        let (p, b) = live.swap_remove(i);
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, st) };
    }
    s.sync(0);
}

pub fn mixed_random(mr: &dyn MemoryResource, ops: usize, max_size: usize, seed: u64) {
    let s = Streams::new(mr, 1);
    let st = s.get(0);
    let mut rng = SplitMix64(seed);
    let mut live: Vec<(DevicePtr, usize)> = Vec::new();
    let mut shadow = BTreeMap::new();
    for _ in 0..ops {
        if live.is_empty() || rng.below(100) < 53 {
            let bytes = 1 + rng.below(max_size);
            let p = mr.allocate(bytes, 256, st).expect("allocate");
            assert!(
                shadow.insert(p, bytes).is_none(),
                "pointer {p:?} handed out twice"
            );
            live.push((p, bytes));
        } else {
            let (p, b) = live.swap_remove(rng.below(live.len()));
            shadow.remove(&p);
            // SAFETY: p came from mr with these arguments.
            unsafe { mr.deallocate(p, b, 256, st) };
        }
    }
    assert_disjoint(&live);
    for (p, b) in live {
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, b, 256, st) };
    }
    s.sync(0);
}

/// Allocate on stream A, synchronise A, free on stream B; then reuse on B.
pub fn cross_stream(mr: &dyn MemoryResource) {
    let s = Streams::new(mr, 2);
    let (a, b) = (s.get(0), s.get(1));
    let mut ptrs = Vec::new();
    for i in 0..64 {
        let bytes = 1000 + i * 4096;
        let p = mr.allocate(bytes, 256, a).expect("allocate on A");
        touch(mr, p, bytes, a);
        ptrs.push((p, bytes));
    }
    s.sync(0);
    for &(p, bytes) in &ptrs {
        // SAFETY: p came from mr; A was synchronised, so nothing on A uses it.
        unsafe { mr.deallocate(p, bytes, 256, b) };
    }
    let again: Vec<_> = ptrs
        .iter()
        .map(|&(_, bytes)| (mr.allocate(bytes, 256, b).expect("realloc on B"), bytes))
        .collect();
    assert_disjoint(&again);
    for (p, bytes) in again {
        touch(mr, p, bytes, b);
        // SAFETY: p came from mr with these arguments.
        unsafe { mr.deallocate(p, bytes, 256, b) };
    }
    s.sync(1);
}

/// Live blocks of all threads, by address: every allocation is checked
/// against all of them (any thread's), every free removes its block.
#[derive(Default)]
pub struct SharedLive(std::sync::Mutex<BTreeMap<u64, usize>>);

impl SharedLive {
    /// Records `[p, p + bytes)`; panics when it overlaps a live block.
    pub fn add(&self, p: DevicePtr, bytes: usize) {
        if p.is_null() {
            return;
        }
        let mut live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (a, end) = (p.addr(), p.addr() + bytes as u64);
        if let Some((&b, &n)) = live.range(..=a).next_back() {
            assert!(b + n as u64 <= a, "{p:?}+{bytes} overlaps live {b:#x}+{n}");
        }
        if let Some((&b, &n)) = live.range(a..).next() {
            assert!(end <= b, "{p:?}+{bytes} overlaps live {b:#x}+{n}");
        }
        live.insert(a, bytes);
    }
    /// Forgets the block at `p` (call before freeing it).
    pub fn remove(&self, p: DevicePtr) {
        if p.is_null() {
            return;
        }
        let mut live = self.0.lock().unwrap_or_else(|e| e.into_inner());
        assert!(live.remove(&p.addr()).is_some(), "{p:?} was not live");
    }
}

/// 8 threads allocate and free at once, each on its own stream (real
/// streams on a GPU, eight distinct fake handles over a simulated
/// resource); every allocation is checked against the live blocks of all
/// threads.
pub fn threads8(mr: &(dyn MemoryResource + 'static), ops: usize, max_size: usize) {
    let streams = Streams::new(mr, 8);
    let shared = SharedLive::default();
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            let (streams, shared) = (&streams, &shared);
            scope.spawn(move || {
                let st = streams.get(t as usize);
                let mut rng = SplitMix64(100 + t);
                let mut live: Vec<(DevicePtr, usize)> = Vec::new();
                for _ in 0..ops {
                    if live.is_empty() || rng.below(100) < 60 {
                        let bytes = 1 + rng.below(max_size);
                        let p = mr.allocate(bytes, 256, st).expect("allocate");
                        shared.add(p, bytes);
                        live.push((p, bytes));
                    } else {
                        let (p, b) = live.swap_remove(rng.below(live.len()));
                        shared.remove(p);
                        // SAFETY: p came from mr with these arguments.
                        unsafe { mr.deallocate(p, b, 256, st) };
                    }
                }
                if let Some(&(p, b)) = live.first() {
                    touch(mr, p, b, st);
                }
                for (p, b) in live {
                    shared.remove(p);
                    // SAFETY: p came from mr with these arguments.
                    unsafe { mr.deallocate(p, b, 256, st) };
                }
                streams.sync(t as usize);
            });
        }
    });
}

pub fn equality<R: MemoryResource + Clone>(mr: &R) {
    assert!(mr.is_equal(mr));
    assert!(mr.is_equal(&mr.clone()));
    let shared = rmm::mr::SharedResource::new(mr.clone());
    assert!(shared.is_equal(mr) && mr.is_equal(&shared));
}

pub fn sync_twins(mr: &dyn MemoryResource) {
    let p = mr.allocate_sync(4096, 256).expect("allocate_sync");
    assert!(!p.is_null() && p.is_aligned(256));
    // SAFETY: p came from mr with these arguments.
    unsafe { mr.deallocate_sync(p, 4096, 256) };
}

/// The whole suite as `#[test]`s in a module named `$name`.
///
/// `$kind` is `gpu` (skips without a GPU), `pageable` (skips without a GPU
/// that can access pageable memory) or `cpu`. `$make` builds a fresh
/// resource (a `MemoryResource + Clone + 'static`). `$max` is the largest
/// single allocation the suite tries (at least 1 GiB on real devices).
#[macro_export]
macro_rules! conformance_suite {
    ($name:ident, $kind:ident, $make:expr) => {
        $crate::conformance_suite!($name, $kind, $make, max = 2 * $crate::common::GIB);
    };
    ($name:ident, $kind:ident, $make:expr, max = $max:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::common;

            fn make() -> Option<impl rmm::mr::MemoryResource + Clone + 'static> {
                $crate::conformance_suite!(@gate $kind);
                Some(($make)())
            }

            #[test]
            fn zero_bytes() {
                let Some(mr) = make() else { return };
                common::zero_bytes(&mr);
            }
            #[test]
            fn sizes_and_alignment() {
                let Some(mr) = make() else { return };
                common::sizes_and_alignment(&mr, $max);
            }
            #[test]
            fn bad_alignment() {
                let Some(mr) = make() else { return };
                common::bad_alignment(&mr);
            }
            #[test]
            fn out_of_memory() {
                let Some(mr) = make() else { return };
                common::out_of_memory(&mr);
            }
            #[test]
            fn thousands_live() {
                let Some(mr) = make() else { return };
                common::many_live(&mr, 5000, 64 * common::KIB);
            }
            #[test]
            fn mixed_random() {
                let Some(mr) = make() else { return };
                common::mixed_random(&mr, 4000, common::MIB, 3);
            }
            #[test]
            fn cross_stream() {
                let Some(mr) = make() else { return };
                common::cross_stream(&mr);
            }
            #[test]
            fn threads8() {
                let Some(mr) = make() else { return };
                let shared = rmm::mr::SharedResource::new(mr);
                common::threads8(shared.inner(), 2000, 256 * common::KIB);
            }
            #[test]
            fn equality() {
                let Some(mr) = make() else { return };
                common::equality(&mr);
            }
            #[test]
            fn sync_twins() {
                let Some(mr) = make() else { return };
                common::sync_twins(&mr);
            }
        }
    };
    (@gate gpu) => {
        if !rmm_testing::gpu_available!(module_path!()) {
            return None;
        }
    };
    (@gate cpu) => {};
    // A GPU that can access pageable memory (system memory resources);
    // other GPUs skip (their constructors' error is tested on its own).
    (@gate pageable) => {
        if !rmm_testing::gpu_available!(module_path!()) {
            return None;
        }
        let device = rmm::device::current_device().expect("current device");
        if !rmm::device::supports_pageable_memory_access(device).expect("device attribute") {
            rmm_testing::report_skip(module_path!(), &format!("{device} has no pageable memory access"));
            return None;
        }
    };
}
