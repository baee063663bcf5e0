//! Out of memory under load: 32 threads reach the end of memory at the same
//! moment, on a pool behind a [`FailureCallbackAdaptor`] whose callback frees
//! memory the test holds (the threads race to free it and retry), and at the
//! limit of a [`LimitingAdaptor`].
//!
//! Each test runs twice: over the GPU (skipped without one, failing with
//! `RMM_REQUIRE_GPU=1`) and, as its CPU twin, over the simulated resource,
//! with the same code. What they check:
//! - no deadlock: a [`Watchdog`] aborts with every thread's state when a
//!   thread makes no progress for 20 s;
//! - no lost or doubled allocation: every successful pointer goes into one
//!   [`LiveRanges`] shared by all threads, which refuses a range that
//!   overlaps a live one; on the GPU every allocation is filled with its own
//!   byte and a sample of it read back after every thread has written; the
//!   number of successes is exactly what the memory holds (the sizes of a
//!   round divide the memory evenly, so fragmentation cannot excuse a
//!   failure);
//! - every failure is [`Error::OutOfMemory`] with a report;
//! - the callback is called, and its retry succeeds when it freed memory;
//! - at the end every counter is back to zero (the pool's free bytes are its
//!   size, the limiting adaptor counts 0 bytes, the simulated upstream holds
//!   nothing once the pool is dropped).
//!
//! Each test prints one line: operations, successes, out-of-memory errors,
//! callback calls and retries that succeeded.

mod common;

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

use common::Streams;
use rmm::mr::adaptors::{FailureCallbackAdaptor, LimitingAdaptor};
use rmm::mr::{
    CudaAsyncMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions, SharedResource,
    SimulatedMemoryResource,
};
use rmm::{CudaStreamView, DevicePtr, Error};
use rmm_testing::{LiveRanges, Progress, SplitMix64, Watchdog};

const MIB: usize = 1 << 20;
const THREADS: usize = 32;
/// Memory of one test: this many chunks of [`CHUNK`] bytes.
const CHUNKS: usize = 64;
const CHUNK: usize = MIB;
/// Allocation sizes of the rounds: `CHUNK / k` for each `k`.
const SPLITS: [usize; 3] = [1, 2, 4];
const ALIGN: usize = 256;

/// Where the memory comes from.
#[derive(Clone, Copy, Debug)]
enum Backend {
    Simulated,
    Gpu,
}

impl Backend {
    /// A fresh upstream of at least `bytes`; the simulated one is returned
    /// too, to read its counters.
    fn upstream(self, bytes: usize) -> (SharedResource, Option<SimulatedMemoryResource>) {
        match self {
            Backend::Simulated => {
                let sim = SimulatedMemoryResource::new(bytes);
                (SharedResource::new(sim.clone()), Some(sim))
            }
            Backend::Gpu => (
                SharedResource::new(CudaAsyncMemoryResource::new().expect("cuda_async")),
                None,
            ),
        }
    }
}

/// What a test counts, printed at its end.
#[derive(Default)]
struct Counts {
    attempts: AtomicUsize,
    successes: AtomicUsize,
    out_of_memory: AtomicUsize,
    callback_calls: AtomicUsize,
    callback_frees: AtomicUsize,
    retried_successes: AtomicUsize,
}

impl Counts {
    fn line(&self, name: &str, backend: Backend) -> String {
        let get = |c: &AtomicUsize| c.load(Ordering::Relaxed);
        format!(
            "{name} ({backend:?}): {THREADS} threads, {} allocate calls, {} succeeded, {} out of memory, \
             {} callback calls ({} freed memory), {} successes after a retry",
            get(&self.attempts),
            get(&self.successes),
            get(&self.out_of_memory),
            get(&self.callback_calls),
            get(&self.callback_frees),
            get(&self.retried_successes),
        )
    }
}

/// One allocation a worker holds, with the byte written into it.
struct Held {
    ptr: DevicePtr,
    bytes: usize,
    value: u8,
}

/// Allocates `bytes` through `mr`, records it in `live` and fills it with
/// its own byte. `Ok(None)` is an out-of-memory error (checked to carry a
/// report); any other error, or an overlap with a live range, panics.
fn take(
    mr: &dyn MemoryResource,
    bytes: usize,
    stream: CudaStreamView,
    live: &LiveRanges,
    counts: &Counts,
) -> Option<Held> {
    counts.attempts.fetch_add(1, Ordering::Relaxed);
    match mr.allocate(bytes, ALIGN, stream) {
        Ok(ptr) => {
            counts.successes.fetch_add(1, Ordering::Relaxed);
            assert!(!ptr.is_null() && ptr.is_aligned(ALIGN), "bad pointer {ptr:?}");
            live.insert(ptr.addr(), bytes)
                .unwrap_or_else(|e| panic!("lost or doubled allocation: {e}"));
            let value = ((ptr.addr() >> 8) as u8) | 1;
            if !mr.is_simulated() {
                // SAFETY: [ptr, ptr + bytes) was just allocated; nothing else uses it.
                unsafe { rmm::launch::memset_async(ptr, value as u32, 1, bytes, stream) }.expect("fill");
            }
            Some(Held { ptr, bytes, value })
        }
        Err(e) => {
            assert_out_of_memory(&e, bytes);
            counts.out_of_memory.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

fn assert_out_of_memory(e: &Error, bytes: usize) {
    assert!(
        e.is_out_of_memory(),
        "{bytes} bytes failed with {e:?}, not out of memory"
    );
    let report = e.oom_report().unwrap_or_else(|| panic!("no report on {e}"));
    assert_eq!(report.request.size, bytes, "{e}");
}

/// Checks the first and last KiB of `held` (on the GPU) on `stream`, then
/// frees it on `free_on`.
fn give_back(
    mr: &dyn MemoryResource,
    held: Held,
    stream: CudaStreamView,
    free_on: CudaStreamView,
    live: &LiveRanges,
) {
    if !mr.is_simulated() {
        let n = held.bytes.min(1024);
        let mut host = vec![0u8; 2 * n];
        let tail = DevicePtr::new(held.ptr.addr() + (held.bytes - n) as u64);
        // SAFETY: both source ranges lie inside the live allocation; `host`
        // outlives the copies because the stream is synchronised before it
        // is read.
        unsafe {
            rmm::launch::memcpy_async(DevicePtr::new(host.as_mut_ptr() as u64), held.ptr, n, stream)
                .expect("copy head");
            rmm::launch::memcpy_async(DevicePtr::new(host[n..].as_mut_ptr() as u64), tail, n, stream)
                .expect("copy tail");
        }
        stream.synchronize().expect("sync");
        assert!(
            host.iter().all(|&b| b == held.value),
            "{:?}+{} does not hold its byte {:#x}: another allocation wrote over it",
            held.ptr,
            held.bytes,
            held.value
        );
    }
    live.remove(held.ptr.addr(), held.bytes)
        .unwrap_or_else(|e| panic!("freeing what the test holds: {e}"));
    // SAFETY: allocated by `mr` with these arguments; `stream`, the only
    // one that used it, was synchronised (GPU), so no work uses it.
    unsafe { mr.deallocate(held.ptr, held.bytes, ALIGN, free_on) };
}

/// Runs `work(thread, progress)` on [`THREADS`] threads that start together.
fn on_threads(progress: &[Progress], work: impl Fn(usize, &Progress) + Sync) {
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for (t, p) in progress.iter().enumerate() {
            let (work, start) = (&work, &start);
            s.spawn(move || {
                start.wait();
                work(t, p);
                p.tick();
            });
        }
    });
}

thread_local! {
    /// The ballast generation this thread's allocation has seen.
    static SEEN_GENERATION: Cell<u64> = const { Cell::new(0) };
    /// Callback calls inside this thread's current allocation.
    static CALLBACKS_NOW: Cell<usize> = const { Cell::new(0) };
}

/// Memory the test holds from the pool, released one chunk per callback.
struct Ballast {
    pool: PoolMemoryResource,
    chunks: Mutex<Vec<DevicePtr>>,
    /// Counts the chunks released (changed with `chunks` locked, after the
    /// chunk went back to the pool).
    generation: AtomicU64,
    stream: Streams,
    counts: Arc<Counts>,
}

impl Ballast {
    /// Takes the whole (empty) pool as chunks of [`CHUNK`] bytes.
    fn fill(&self) {
        let mut chunks = self.chunks.lock().unwrap();
        assert!(chunks.is_empty());
        for _ in 0..CHUNKS {
            let p = self
                .pool
                .allocate(CHUNK, ALIGN, self.stream.get(0))
                .expect("ballast");
            chunks.push(p);
        }
        let more = self.pool.allocate(CHUNK, ALIGN, self.stream.get(0));
        assert!(
            more.unwrap_err().is_out_of_memory(),
            "the pool holds more than it should"
        );
    }

    /// The failure callback: frees one chunk and retries; with none left,
    /// retries once more only when a chunk was freed since this thread's
    /// last attempt began (so a failure means the memory really was full).
    fn release(&self) -> bool {
        self.counts.callback_calls.fetch_add(1, Ordering::Relaxed);
        CALLBACKS_NOW.set(CALLBACKS_NOW.get() + 1);
        let mut chunks = self.chunks.lock().unwrap();
        if let Some(p) = chunks.pop() {
            // SAFETY: allocated in `fill` with these arguments; never used.
            unsafe { self.pool.deallocate(p, CHUNK, ALIGN, self.stream.get(0)) };
            let g = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
            SEEN_GENERATION.set(g);
            self.counts.callback_frees.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        let g = self.generation.load(Ordering::SeqCst);
        let retry = g != SEEN_GENERATION.get();
        SEEN_GENERATION.set(g);
        retry
    }

    fn drain(&self) {
        for p in self.chunks.lock().unwrap().drain(..) {
            // SAFETY: allocated in `fill` with these arguments; never used.
            unsafe { self.pool.deallocate(p, CHUNK, ALIGN, self.stream.get(0)) };
        }
    }
}

/// Checks that the pool's memory is all free, in one block.
fn assert_pool_whole(pool: &PoolMemoryResource, capacity: usize, round: usize) {
    assert_eq!(
        pool.free_bytes(),
        capacity,
        "round {round} starts with memory in use"
    );
    let largest = rmm::mr::snapshot(pool).layers[0].largest_free_block;
    assert_eq!(
        largest,
        Some(capacity),
        "round {round} starts with the pool fragmented"
    );
}

/// 32 threads allocate at once from a full pool behind a failure-callback
/// adaptor whose callback frees the test's ballast. Even rounds ask for
/// exactly what the pool holds (every allocation must succeed), odd rounds
/// for twice that (exactly the pool's worth succeeds, the rest is out of
/// memory).
fn callback_storm(backend: Backend) {
    let capacity = CHUNKS * CHUNK;
    let (upstream, sim) = backend.upstream(capacity);
    let pool = PoolMemoryResource::new(
        upstream,
        PoolOptions::default()
            .initial_pool_size(capacity)
            .maximum_pool_size(capacity),
    )
    .expect("pool");
    let counts = Arc::new(Counts::default());
    let ballast = Arc::new(Ballast {
        stream: Streams::new(&pool, 1),
        pool: pool.clone(),
        chunks: Mutex::new(Vec::new()),
        generation: AtomicU64::new(0),
        counts: counts.clone(),
    });
    let b = ballast.clone();
    let mr = FailureCallbackAdaptor::new(pool.clone(), move |_| b.release());
    let streams = Streams::new(&mr, THREADS);
    let live = LiveRanges::default();
    let dog = Watchdog::new("oom_load callback", Duration::from_secs(20));
    let progress: Vec<_> = (0..THREADS)
        .map(|t| dog.progress(format!("thread {t}")))
        .collect();
    for round in 0..2 * SPLITS.len() * 2 {
        let split = SPLITS[(round / 2) % SPLITS.len()];
        let (bytes, slots) = (CHUNK / split, CHUNKS * split);
        let demand = if round % 2 == 0 { slots } else { 2 * slots };
        assert_pool_whole(&pool, capacity, round);
        ballast.fill();
        let before = counts.successes.load(Ordering::Relaxed);
        let all_taken = Barrier::new(THREADS);
        on_threads(&progress, |t, p| {
            p.doing("allocating");
            let stream = streams.get(t);
            let mut held = Vec::new();
            for _ in (t..demand).step_by(THREADS) {
                SEEN_GENERATION.set(ballast.generation.load(Ordering::SeqCst));
                CALLBACKS_NOW.set(0);
                if let Some(h) = take(&mr, bytes, stream, &live, &counts) {
                    if CALLBACKS_NOW.get() > 0 {
                        counts.retried_successes.fetch_add(1, Ordering::Relaxed);
                    }
                    held.push(h);
                }
                p.tick();
            }
            streams.sync(t);
            p.doing("waiting for every thread's allocations");
            all_taken.wait();
            p.doing("checking and freeing");
            // Freed on the ballast's stream, so that the pool's free
            // memory is one block again for the next round (blocks freed
            // on different streams do not coalesce until merged).
            for h in held {
                give_back(&mr, h, stream, ballast.stream.get(0), &live);
            }
            streams.sync(t);
        });
        let succeeded = counts.successes.load(Ordering::Relaxed) - before;
        assert_eq!(
            succeeded, slots,
            "round {round}: {bytes}-byte allocations, {demand} asked"
        );
        assert!(
            ballast.chunks.lock().unwrap().is_empty(),
            "round {round} left ballast"
        );
        assert!(live.is_empty());
    }
    ballast.drain();
    drop(progress);
    dog.stop();
    eprintln!("{}", counts.line("callback_storm", backend));
    assert_eq!(
        (pool.free_bytes(), pool.pool_size(), pool.bad_frees()),
        (capacity, capacity, 0)
    );
    let c = |a: &AtomicUsize| a.load(Ordering::Relaxed);
    assert!(
        c(&counts.callback_frees) >= CHUNKS,
        "the callback freed too little"
    );
    assert!(c(&counts.retried_successes) > 0, "no retry succeeded");
    drop((mr, pool, ballast));
    if let Some(sim) = sim {
        assert_eq!(sim.allocated_bytes(), 0, "the pool leaked upstream memory");
    }
}

/// 32 threads fill a limiting adaptor to its limit at once (exactly the
/// limit must be taken), then allocate and free at random sizes at the
/// limit; the adaptor must never count more than its limit.
fn limiting_storm(backend: Backend) {
    let limit = CHUNKS * CHUNK;
    let (upstream, sim) = backend.upstream(4 * limit);
    let mr = LimitingAdaptor::new(upstream, limit);
    let streams = Streams::new(&mr, THREADS);
    let live = LiveRanges::default();
    let counts = Counts::default();
    let dog = Watchdog::new("oom_load limiting", Duration::from_secs(20));
    let progress: Vec<_> = (0..THREADS)
        .map(|t| dog.progress(format!("thread {t}")))
        .collect();
    for (round, split) in SPLITS.into_iter().enumerate() {
        let bytes = CHUNK / split;
        let filled = Barrier::new(THREADS);
        let checked = Barrier::new(THREADS);
        let churned = Barrier::new(THREADS);
        on_threads(&progress, |t, p| {
            let stream = streams.get(t);
            let within_limit = |what: &str| {
                let n = mr.allocated_bytes();
                assert!(n <= limit, "{what}: {n} bytes counted over a limit of {limit}");
            };
            p.doing("filling to the limit");
            let mut held = Vec::new();
            while let Some(h) = take(&mr, bytes, stream, &live, &counts) {
                within_limit("filling");
                held.push(h);
                p.tick();
            }
            streams.sync(t);
            filled.wait();
            assert_eq!(
                live.bytes(),
                limit,
                "round {round}: the threads together hold less than the limit"
            );
            assert_eq!(mr.allocated_bytes(), limit);
            checked.wait();
            p.doing("churning at the limit");
            let mut rng = SplitMix64(0x00AD + (round * THREADS + t) as u64);
            for _ in 0..200 {
                if !held.is_empty() && rng.below(2) == 0 {
                    let h = held.swap_remove(rng.below(held.len()));
                    give_back(&mr, h, stream, stream, &live);
                } else if let Some(h) = take(&mr, 1 + rng.below(2 * CHUNK), stream, &live, &counts) {
                    within_limit("churning");
                    held.push(h);
                }
                p.tick();
            }
            streams.sync(t);
            churned.wait();
            p.doing("freeing");
            for h in held {
                give_back(&mr, h, stream, stream, &live);
            }
            streams.sync(t);
        });
        assert!(live.is_empty());
        assert_eq!(
            mr.allocated_bytes(),
            0,
            "round {round}: the limit's counter did not return to 0"
        );
    }
    drop(progress);
    dog.stop();
    eprintln!("{}", counts.line("limiting_storm", backend));
    assert_eq!(mr.bad_frees(), 0);
    assert!(counts.out_of_memory.load(Ordering::Relaxed) >= THREADS * SPLITS.len());
    drop(mr);
    if let Some(sim) = sim {
        assert_eq!(
            sim.allocated_bytes(),
            0,
            "the limiting adaptor leaked upstream memory"
        );
    }
}

#[test]
fn callback_storm_over_the_gpu() {
    rmm_testing::require_gpu!();
    callback_storm(Backend::Gpu);
}

#[test]
fn callback_storm_over_the_simulated_resource() {
    callback_storm(Backend::Simulated);
}

#[test]
fn limiting_storm_over_the_gpu() {
    rmm_testing::require_gpu!();
    limiting_storm(Backend::Gpu);
}

#[test]
fn limiting_storm_over_the_simulated_resource() {
    limiting_storm(Backend::Simulated);
}
