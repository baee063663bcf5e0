//! The soak test: many threads over every GPU, each on its own streams,
//! mixing every resource and adaptor for a fixed time, under a [`Watchdog`]
//! that aborts with every thread's state (and stacks, with `RMM_EU_STACK`)
//! when a thread makes no progress for 10 s.
//!
//! Each thread repeats, on a resource drawn at random, one of five
//! operations:
//! - a batch of allocations on stream A, each filled with its own byte,
//!   read back and checked, then freed on stream B;
//! - a typed container that grows, shrinks and is shrunk to fit, its
//!   contents checked on the host;
//! - `ExecPolicy` scratch on B, filled and read back;
//! - a stream created, allocated on, checked, freed on and destroyed;
//! - a swap of the device's current resource, then a buffer from it.
//!
//! Device kernels live in the root package, which `rmm`'s tests cannot use;
//! the scratch is written and read through the driver's memset and copy on
//! the policy's stream, which puts the same stream-ordered demand on the
//! resource that a kernel would.
//!
//! Every live allocation of every thread is in one [`LiveRanges`] (the
//! devices share one unified address space), which refuses an overlap. An
//! out-of-memory error with a report is expected from the two tightly
//! limited stacks; any other error, an overlap or a content mismatch is an
//! anomaly: counted, the first few printed, and the test fails when any
//! occurred. It ends with one summary line: seconds, threads, operations by
//! kind, bytes allocated and copied, anomalies.
//!
//! Memory stays bounded however long it runs: every operation frees what it
//! took before the next, and the logging adaptor writes to a sink that only
//! counts lines and bytes. It stops at `RMM_SOAK_SECONDS` plus the last
//! operation (milliseconds) and the teardown.
//!
//! `RMM_SOAK_SECONDS` (default 60) and `RMM_SOAK_THREADS` (default 32) size
//! it. It skips without a GPU and fails with `RMM_REQUIRE_GPU=1`. Its CPU
//! twin, `soak_over_simulated_resources`, runs everywhere for 3 s with 16
//! threads: batches and scratch over every resource and adaptor that works
//! over the simulated resource, with the same live-range check and summary.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmm::device::{device_count, set_current_device, supports_pageable_memory_access, DeviceId};
use rmm::exec_policy::ExecPolicy;
use rmm::mr::adaptors::{
    AlignedAdaptor, FailureCallbackAdaptor, LimitingAdaptor, LoggingAdaptor, PrefetchAdaptor,
    StatisticsAdaptor, ThreadSafeAdaptor, TrackingAdaptor,
};
use rmm::mr::{
    reset_current_device_resource, set_current_device_resource, ArenaMemoryResource, ArenaOptions,
    BinningMemoryResource, CallbackMemoryResource, CudaAsyncManagedMemoryResource, CudaAsyncMemoryResource,
    CudaMemoryResource, FixedSizeMemoryResource, FixedSizeOptions, ManagedMemoryResource, MemoryResource,
    PinnedHostMemoryResource, PoolMemoryResource, PoolOptions, SamHeadroomMemoryResource, SharedResource,
    SimulatedMemoryResource, SystemMemoryResource, VirtualPoolMemoryResource, VirtualPoolOptions,
};
use rmm::{CudaStream, CudaStreamView, DeviceBuffer, DevicePtr, DeviceUvector, Error};
use rmm_testing::{LiveRanges, Progress, SplitMix64, Watchdog};

const MIB: usize = 1 << 20;
const ALIGN: usize = 256;
/// Bytes of each allocation that are written and read back.
const CHECKED: usize = 4096;

/// One resource of the soak: its name, the resource, and the largest
/// allocation drawn for it.
struct Entry {
    name: &'static str,
    mr: SharedResource,
    max_bytes: usize,
}

fn entry(name: &'static str, mr: impl MemoryResource + 'static) -> Entry {
    // Managed and host memory: small allocations (page faults and host
    // allocation make large ones slow, and they are not what is soaked).
    let host_side = [
        "managed",
        "cuda_async_managed",
        "prefetch",
        "pinned_host",
        "system",
        "sam_headroom",
    ];
    let max_bytes = if host_side.contains(&name) { 64 << 10 } else { MIB };
    Entry {
        name,
        mr: SharedResource::new(mr),
        max_bytes,
    }
}

/// Counts the lines and bytes the logging adaptor writes, keeping none of
/// them (a log kept for minutes of 32 threads would grow without bound).
#[derive(Clone, Default)]
struct CountingSink(Arc<(AtomicU64, AtomicU64)>);

impl Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let lines = buf.iter().filter(|&&b| b == b'\n').count() as u64;
        self.0 .0.fetch_add(lines, Ordering::Relaxed);
        self.0 .1.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A callback resource whose callbacks forward to `mr`.
fn callback_over(mr: impl MemoryResource + Clone + 'static) -> CallbackMemoryResource {
    let upstream = mr.clone();
    CallbackMemoryResource::new(
        move |b, al, s| upstream.allocate(b, al, s),
        // SAFETY: the callback resource forwards frees of pointers it got from `mr`.
        move |p, b, al, s| unsafe { mr.deallocate(p, b, al, s) },
    )
}

/// A failure-callback adaptor over the tightly limited stack: it retries up
/// to three times, then gives up (out of memory is expected there).
fn retrying<U: MemoryResource>(tight: U) -> FailureCallbackAdaptor<U> {
    let retries = AtomicUsize::new(0);
    FailureCallbackAdaptor::new(tight, move |_| {
        std::thread::yield_now();
        retries.fetch_add(1, Ordering::Relaxed) % 4 != 3
    })
}

/// The CPU twin's list: every resource and adaptor that works over the
/// simulated resource, stacked as on a GPU (no driver, managed memory or
/// virtual memory: no cuda, cuda_async, managed, pinned, vm_pool or
/// prefetch).
fn simulated_resources(log: &CountingSink) -> Vec<Entry> {
    let sim = SimulatedMemoryResource::new(64 << 30);
    let pool = PoolMemoryResource::new(sim.clone(), PoolOptions::default().initial_pool_size(256 * MIB))
        .expect("pool");
    let tight = LimitingAdaptor::new(pool.clone(), 8 * MIB);
    vec![
        entry("simulated", sim.clone()),
        entry("pool", pool.clone()),
        entry(
            "fixed_size",
            FixedSizeMemoryResource::new(sim.clone(), FixedSizeOptions::default()).expect("fixed_size"),
        ),
        entry("binning", BinningMemoryResource::new(sim.clone())),
        entry(
            "arena",
            ArenaMemoryResource::new(sim.clone(), ArenaOptions::default().arena_size(1 << 30))
                .expect("arena"),
        ),
        entry("callback", callback_over(sim.clone()).without_gpu()),
        entry("system", SystemMemoryResource::without_gpu()),
        entry(
            "sam_headroom",
            SamHeadroomMemoryResource::simulated(1 << 30, SimulatedMemoryResource::new(2 << 30)),
        ),
        entry(
            "aligned",
            AlignedAdaptor::new(sim.clone(), 4096, 64 * 1024).expect("aligned"),
        ),
        entry("failure_callback", retrying(tight.clone())),
        entry("limiting", tight),
        entry(
            "logging",
            LoggingAdaptor::to_writer(pool.clone(), log.clone(), false).expect("logging"),
        ),
        entry("statistics", StatisticsAdaptor::new(pool.clone())),
        entry("thread_safe", ThreadSafeAdaptor::new(pool)),
        entry("tracking", TrackingAdaptor::new(sim, false)),
    ]
}

/// Every resource and adaptor of one device.
///
/// Built here rather than through `rmm_replay::by_name`: that factory has no
/// names for the aligned, failure-callback, limiting, logging and prefetch
/// adaptors or for a view of a driver pool, and it builds a fresh upstream
/// per name, while this list deliberately stacks several adaptors over one
/// shared pool and several resources over one `cuda_async` pool, so that
/// they contend for the same state. The system and SAM headroom resources
/// join only where the device can access pageable memory.
fn resources_of(device: DeviceId, log: &CountingSink) -> Vec<Entry> {
    set_current_device(device).expect("device");
    let cuda_async = CudaAsyncMemoryResource::new().expect("cuda_async");
    let pool = PoolMemoryResource::new(
        cuda_async.clone(),
        PoolOptions::default().initial_pool_size(256 * MIB),
    )
    .expect("pool");
    let tight = LimitingAdaptor::new(pool.clone(), 8 * MIB);
    let mut v = vec![
        entry("cuda", CudaMemoryResource::new()),
        entry("cuda_async", cuda_async.clone()),
        entry("cuda_async_view", cuda_async.view()),
        entry(
            "cuda_async_managed",
            CudaAsyncManagedMemoryResource::new().expect("cuda_async_managed (needs a CUDA 13 driver)"),
        ),
        entry("managed", ManagedMemoryResource::new()),
        entry("pinned_host", PinnedHostMemoryResource::new()),
        entry("pool", pool.clone()),
        entry(
            "vm_pool",
            VirtualPoolMemoryResource::new(VirtualPoolOptions::default().initial_pool_size(64 * MIB))
                .expect("vm_pool"),
        ),
        entry(
            "fixed_size",
            FixedSizeMemoryResource::new(CudaMemoryResource::new(), FixedSizeOptions::default())
                .expect("fixed_size"),
        ),
        entry("binning", BinningMemoryResource::new(cuda_async.clone())),
        entry(
            "arena",
            ArenaMemoryResource::new(
                CudaMemoryResource::new(),
                ArenaOptions::default().arena_size(1 << 30),
            )
            .expect("arena"),
        ),
        entry("callback", callback_over(CudaMemoryResource::new())),
        entry(
            "aligned",
            AlignedAdaptor::new(cuda_async.clone(), 4096, 64 * 1024).expect("aligned"),
        ),
        entry("failure_callback", retrying(tight.clone())),
        entry("limiting", tight),
        entry(
            "logging",
            LoggingAdaptor::to_writer(pool.clone(), log.clone(), false).expect("logging"),
        ),
        entry("prefetch", PrefetchAdaptor::new(ManagedMemoryResource::new())),
        entry("statistics", StatisticsAdaptor::new(pool.clone())),
        entry("thread_safe", ThreadSafeAdaptor::new(pool)),
        entry("tracking", TrackingAdaptor::new(cuda_async, false)),
    ];
    if supports_pageable_memory_access(device).expect("attribute") {
        v.push(entry("system", SystemMemoryResource::new().expect("system")));
        v.push(entry(
            "sam_headroom",
            SamHeadroomMemoryResource::new(1 << 30).expect("sam_headroom"),
        ));
    } else {
        eprintln!("soak: {device} cannot access pageable memory: no system or sam_headroom resource");
    }
    v
}

/// What the soak counts; anomalies must stay 0.
#[derive(Default)]
struct Tally {
    allocs: AtomicU64,
    frees: AtomicU64,
    resizes: AtomicU64,
    scratches: AtomicU64,
    streams_created: AtomicU64,
    streams_destroyed: AtomicU64,
    swaps: AtomicU64,
    bytes_allocated: AtomicU64,
    bytes_copied: AtomicU64,
    expected_oom: AtomicU64,
    overlaps: AtomicU64,
    mismatches: AtomicU64,
    errors: AtomicU64,
    first_anomalies: Mutex<Vec<String>>,
}

fn add(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

impl Tally {
    fn anomaly(&self, counter: &AtomicU64, what: String) {
        add(counter, 1);
        let mut first = self.first_anomalies.lock().unwrap_or_else(|e| e.into_inner());
        if first.len() < 20 {
            eprintln!("soak ANOMALY: {what}");
            first.push(what);
        }
    }

    /// `Some` on success; `None` after counting the error: an expected
    /// out-of-memory error (with its report) or an anomaly.
    fn ok<T>(&self, what: &str, r: rmm::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(Error::OutOfMemory { report: Some(_), .. }) => {
                add(&self.expected_oom, 1);
                None
            }
            Err(e) => {
                self.anomaly(&self.errors, format!("{what}: {e}"));
                None
            }
        }
    }

    fn anomalies(&self) -> u64 {
        [&self.overlaps, &self.mismatches, &self.errors]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    fn summary(
        &self,
        seconds: f64,
        threads: usize,
        devices: usize,
        kind: &str,
        log: &CountingSink,
    ) -> String {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "soak summary: {seconds:.1} s, {threads} threads, {devices} {kind}; operations: alloc {} free {} \
             resize {} scratch {} stream_create {} stream_destroy {} swap {}; bytes allocated {} copied {}; \
             expected out-of-memory {}; log lines {}; anomalies {} (overlaps {} mismatches {} errors {})",
            g(&self.allocs),
            g(&self.frees),
            g(&self.resizes),
            g(&self.scratches),
            g(&self.streams_created),
            g(&self.streams_destroyed),
            g(&self.swaps),
            g(&self.bytes_allocated),
            g(&self.bytes_copied),
            g(&self.expected_oom),
            log.0 .0.load(Ordering::Relaxed),
            self.anomalies(),
            g(&self.overlaps),
            g(&self.mismatches),
            g(&self.errors),
        )
    }
}

/// One live allocation of a worker and the byte written into it.
struct Held {
    ptr: DevicePtr,
    bytes: usize,
    value: u8,
    tracked: bool,
}

/// What every operation of one thread needs.
struct Worker<'a> {
    tally: &'a Tally,
    live: &'a LiveRanges,
    progress: &'a Progress,
    thread: usize,
}

impl Worker<'_> {
    /// Allocates `bytes` from `mr` on `stream` and writes its first bytes.
    fn take(&self, name: &str, mr: &SharedResource, bytes: usize, stream: CudaStreamView) -> Option<Held> {
        let ptr = self.tally.ok(name, mr.allocate(bytes, ALIGN, stream))?;
        add(&self.tally.allocs, 1);
        add(&self.tally.bytes_allocated, bytes);
        let tracked = match self.live.insert(ptr.addr(), bytes) {
            Ok(()) => true,
            Err(e) => {
                self.tally.anomaly(&self.tally.overlaps, format!("{name}: {e}"));
                false
            }
        };
        let value = ((ptr.addr() >> 8) as u8 ^ self.thread as u8) | 1;
        if !mr.is_simulated() {
            let n = bytes.min(CHECKED);
            // SAFETY: [ptr, ptr + n) lies in the allocation just made.
            let fill = unsafe { rmm::launch::memset_async(ptr, value as u32, 1, n, stream) };
            if self.tally.ok(name, fill).is_some() {
                add(&self.tally.bytes_copied, n);
            }
        }
        Some(Held {
            ptr,
            bytes,
            value,
            tracked,
        })
    }

    /// Reads back the first bytes of every allocation in `held` on `stream`
    /// (which wrote them) and counts each one that changed.
    fn check(&self, e: &Entry, held: &[Held], stream: CudaStreamView) {
        if e.mr.is_simulated() {
            return;
        }
        let name = e.name;
        let mut host: Vec<Vec<u8>> = held.iter().map(|h| vec![0u8; h.bytes.min(CHECKED)]).collect();
        for (h, buf) in held.iter().zip(host.iter_mut()) {
            // SAFETY: the source lies in the live allocation; `buf` outlives
            // the copy because the stream is synchronised below, before
            // `host` is read or dropped.
            let copy = unsafe {
                rmm::launch::memcpy_async(DevicePtr::new(buf.as_mut_ptr() as u64), h.ptr, buf.len(), stream)
            };
            if self.tally.ok(name, copy).is_some() {
                add(&self.tally.bytes_copied, buf.len());
            }
        }
        if self.tally.ok(name, stream.synchronize()).is_none() {
            // The copies may still be pending: their destinations must stay.
            std::mem::forget(host);
            return;
        }
        for (h, buf) in held.iter().zip(&host) {
            if let Some(i) = buf.iter().position(|&b| b != h.value) {
                let what = format!(
                    "{name}: byte {i} of {:?}+{} is {:#x}, not {:#x}",
                    h.ptr, h.bytes, buf[i], h.value
                );
                self.tally.anomaly(&self.tally.mismatches, what);
            }
        }
    }

    /// Frees `held` on `stream`; the stream that used it was synchronised.
    fn give_back(&self, mr: &SharedResource, held: Vec<Held>, stream: CudaStreamView) {
        for h in held {
            if h.tracked {
                if let Err(e) = self.live.remove(h.ptr.addr(), h.bytes) {
                    self.tally.anomaly(&self.tally.overlaps, e);
                }
            }
            // SAFETY: allocated from `mr` with these arguments; the stream
            // that wrote and read it was synchronised in `check`.
            unsafe { mr.deallocate(h.ptr, h.bytes, ALIGN, stream) };
            add(&self.tally.frees, 1);
        }
    }
}

impl Worker<'_> {
    /// A batch allocated on `a`, written, checked, freed on `b` after `a`.
    fn batch(&self, e: &Entry, rng: &mut SplitMix64, a: CudaStreamView, b: CudaStreamView) {
        self.progress.doing("allocate on A, check, free on B");
        let mut held = Vec::new();
        for _ in 0..1 + rng.below(16) {
            held.extend(self.take(e.name, &e.mr, 1 + rng.below(e.max_bytes), a));
        }
        self.check(e, &held, a);
        self.give_back(&e.mr, held, b);
    }

    /// A typed container that grows, shrinks and is shrunk to fit.
    fn container(&self, e: &Entry, rng: &mut SplitMix64, a: CudaStreamView) {
        self.progress.doing("container resize");
        let n = 1 + rng.below(4096);
        let host: Vec<u32> = (0..n as u32).map(|i| i ^ self.thread as u32).collect();
        let made = DeviceUvector::from_slice_with_resource(&host, a, e.mr.clone());
        let Some(mut v) = self.tally.ok(e.name, made) else {
            return;
        };
        add(&self.tally.allocs, 1);
        self.resize_and_compare(e, &mut v, &host, a);
        drop(v);
        add(&self.tally.frees, 1);
    }

    /// Grows `v` (a copy of `host`) to twice, shrinks it to half and to
    /// fit, then compares what is left with `host`.
    fn resize_and_compare(&self, e: &Entry, v: &mut DeviceUvector<u32>, host: &[u32], a: CudaStreamView) {
        let n = host.len();
        for len in [n * 2, n / 2 + 1] {
            if self.tally.ok(e.name, v.resize(len, a)).is_none() {
                return;
            }
        }
        if self.tally.ok(e.name, v.shrink_to_fit(a)).is_none() {
            return;
        }
        add(&self.tally.resizes, 3);
        add(&self.tally.bytes_copied, 4 * (2 * n + (n / 2 + 1)));
        if let Some(back) = self.tally.ok(e.name, v.copy_to_host(a)) {
            if back[..] != host[..n / 2 + 1] {
                let what = format!("{}: container of {n} elements lost its contents", e.name);
                self.tally.anomaly(&self.tally.mismatches, what);
            }
        }
    }

    /// Scratch of an execution policy on `b`, filled and read back.
    fn scratch(&self, e: &Entry, rng: &mut SplitMix64, b: CudaStreamView) {
        self.progress.doing("exec policy scratch");
        let policy = ExecPolicy::new(b, e.mr.clone());
        let n = 1 + rng.below(1 << 16);
        let Some(s) = self.tally.ok(e.name, policy.scratch::<u64>(n)) else {
            return;
        };
        add(&self.tally.scratches, 1);
        if e.mr.is_simulated() {
            return;
        }
        let bytes = s.size_bytes();
        let value = (self.thread as u8) | 0x80;
        let n = bytes.min(CHECKED);
        // SAFETY: the scratch holds `bytes` ≥ `n` bytes, used only on `b`.
        let fill = unsafe { rmm::launch::memset_async(s.ptr(), value as u32, 1, n, b) };
        if self.tally.ok(e.name, fill).is_some() {
            let held = [Held {
                ptr: s.ptr(),
                bytes,
                value,
                tracked: false,
            }];
            self.check(e, &held, b);
        }
        drop(s);
    }

    /// A stream created, allocated on, checked, freed on and destroyed.
    fn stream_life(&self, e: &Entry, rng: &mut SplitMix64) {
        self.progress.doing("stream create, use, destroy");
        let Some(s) = self.tally.ok("CudaStream::new", CudaStream::new()) else {
            return;
        };
        add(&self.tally.streams_created, 1);
        let mut held = Vec::new();
        for _ in 0..1 + rng.below(4) {
            held.extend(self.take(e.name, &e.mr, 1 + rng.below(e.max_bytes), s.view()));
        }
        self.check(e, &held, s.view());
        self.give_back(&e.mr, held, s.view());
        drop(s);
        add(&self.tally.streams_destroyed, 1);
    }

    /// Makes `e` the current resource of this thread's device, then
    /// allocates a buffer from whatever is current now (another thread may
    /// have swapped again).
    fn swap(&self, e: &Entry, rng: &mut SplitMix64, a: CudaStreamView) {
        self.progress.doing("set_current_device_resource");
        if self
            .tally
            .ok(
                "set_current_device_resource",
                set_current_device_resource(e.mr.clone()),
            )
            .is_none()
        {
            return;
        }
        add(&self.tally.swaps, 1);
        let current = rmm::mr::current_device_resource();
        let bytes = 1 + rng.below(64 << 10);
        if let Some(buf) = self
            .tally
            .ok("current resource", DeviceBuffer::with_resource(bytes, a, current))
        {
            add(&self.tally.allocs, 1);
            add(&self.tally.bytes_allocated, bytes);
            drop(buf);
            add(&self.tally.frees, 1);
        }
        let _ = self.tally.ok("sync A", a.synchronize());
    }

    /// Runs operations until `deadline`: all five kinds on a GPU, batches
    /// and scratch over simulated resources (`device` is `None`).
    fn run(&self, device: Option<DeviceId>, resources: &[Entry], deadline: Instant) {
        if let Some(d) = device {
            set_current_device(d).expect("device");
        }
        let streams = common::Streams::new(resources[0].mr.inner(), 2);
        let (a, b) = (streams.get(0), streams.get(1));
        let kinds = if device.is_some() { 5 } else { 2 };
        let mut rng = SplitMix64(0x50A4 + self.thread as u64);
        while Instant::now() < deadline {
            let e = &resources[rng.below(resources.len())];
            match rng.below(kinds) {
                0 => self.batch(e, &mut rng, a, b),
                1 => self.scratch(e, &mut rng, b),
                2 => self.container(e, &mut rng, a),
                3 => self.stream_life(e, &mut rng),
                _ => self.swap(e, &mut rng, a),
            }
            self.progress.tick();
        }
        self.progress.doing("finishing");
        streams.sync(0);
        streams.sync(1);
    }
}

/// Runs `threads` workers over `per_device` (a GPU's resources each, or one
/// list of simulated ones) for `seconds`; prints the summary line and
/// fails on any anomaly.
fn soak(per_device: Vec<Vec<Entry>>, on_gpu: bool, seconds: u64, threads: usize, log: &CountingSink) {
    let devices = per_device.len();
    let (tally, live) = (Tally::default(), LiveRanges::default());
    let dog = Watchdog::new("soak", Duration::from_secs(10));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    std::thread::scope(|scope| {
        let (tally, per_device) = (&tally, &per_device);
        scope.spawn(move || report_progress(tally, per_device, started, deadline));
        for thread in 0..threads {
            let device = DeviceId((thread % devices) as i32);
            let resources = &per_device[device.value() as usize];
            let progress = dog.progress(format!("thread {thread} ({device})"));
            let live = &live;
            scope.spawn(move || {
                let worker = Worker {
                    tally,
                    live,
                    progress: &progress,
                    thread,
                };
                worker.run(on_gpu.then_some(device), resources, deadline);
            });
        }
    });
    dog.stop();
    if on_gpu {
        for d in 0..devices as i32 {
            set_current_device(DeviceId(d)).expect("device");
            reset_current_device_resource();
        }
    }
    let stream_lists = pool_stream_lists(&per_device);
    drop(per_device);
    let elapsed = started.elapsed().as_secs_f64();
    let kind = if on_gpu { "GPU(s)" } else { "simulated device(s)" };
    eprintln!(
        "{}; pool stream lists {stream_lists:?}",
        tally.summary(elapsed, threads, devices, kind, log)
    );
    assert!(live.is_empty(), "{} allocations still recorded live", live.len());
    assert_eq!(
        tally.anomalies(),
        0,
        "anomalies: {:?}",
        tally.first_anomalies.lock().unwrap()
    );
    let allocs = tally.allocs.load(Ordering::Relaxed);
    assert!(
        allocs >= threads as u64,
        "soak made almost no progress: {allocs} allocations"
    );
}

/// Prints, ten times over the run (at most every 5 s), the allocations so
/// far and the shared pools' per-stream free lists, so that a long run shows
/// whether the lists level off while streams come and go.
fn report_progress(tally: &Tally, per_device: &[Vec<Entry>], started: Instant, deadline: Instant) {
    let every = ((deadline - started) / 10).max(Duration::from_secs(5));
    let mut next = started + every;
    while next < deadline {
        while Instant::now() < next {
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "soak progress: {:.0} s, alloc {}, streams created {}, pool stream lists {:?}",
            started.elapsed().as_secs_f64(),
            tally.allocs.load(Ordering::Relaxed),
            tally.streams_created.load(Ordering::Relaxed),
            pool_stream_lists(per_device)
        );
        next += every;
    }
}

/// How many per-stream free lists each shared pool keeps (they must not
/// grow with every stream ever created).
fn pool_stream_lists(per_device: &[Vec<Entry>]) -> Vec<usize> {
    let pools = per_device.iter().flatten().filter(|e| e.name == "pool");
    pools
        .map(|e| {
            let snap = rmm::mr::snapshot(e.mr.inner());
            snap.layers[0]
                .free_bytes_by_stream
                .as_ref()
                .map_or(0, |v| v.len())
        })
        .collect()
}

#[test]
fn soak_every_resource_on_every_gpu() {
    rmm_testing::require_gpu!();
    let log = CountingSink::default();
    let per_device = (0..device_count() as i32)
        .map(|d| resources_of(DeviceId(d), &log))
        .collect();
    let (seconds, threads) = (rmm_testing::env::soak_seconds(), rmm_testing::env::soak_threads());
    soak(per_device, true, seconds, threads, &log);
}

/// The CPU twin (runs everywhere, 3 s): batches and scratch over every
/// resource and adaptor that works over the simulated resource.
#[test]
fn soak_over_simulated_resources() {
    let log = CountingSink::default();
    soak(vec![simulated_resources(&log)], false, 3, 16, &log);
}
