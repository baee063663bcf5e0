//! Fault-injection model tests: every sub-allocator and adaptor stack that
//! runs without a GPU, over a [`FaultyResource`] around the simulated
//! resource, driven by a seeded random mix of allocations and frees of
//! many sizes, alignments and streams while the upstream fails at varying
//! rates, every Nth call, or not at all.
//!
//! Each stack shows, for every operation: a failure is an `Err` of the kind
//! injected (or, for a stack with a limit of its own, out-of-memory), and
//! a failure without an injected fault only where the stack has a limit;
//! no allocation overlaps a live one or misses its alignment; the stack's
//! counters (statistics, tracking, limiting, the log's lines, the
//! failure callback's verdicts, pool and block sizes) match the model; the
//! stack is rebuilt every epoch, its construction under faults either
//! succeeds or fails without holding upstream memory; after each epoch,
//! with faults stopped, it serves again, and once dropped the upstream
//! holds no byte.
//!
//! `RMM_FAULT_OPS` sets the operations per stack (default 10^6 in release,
//! 10^5 in debug builds); each test prints one `faults-model` summary line.
//! The virtual-memory pool has no upstream (it maps driver memory itself):
//! its growth under injected `cuMemMap` faults is in `faults_gpu.rs`.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmm::fault::{FaultyResource, InjectedError, Trigger};
use rmm::mr::{
    AlignedAdaptor, ArenaMemoryResource, ArenaOptions, BinningMemoryResource, FailureCallbackAdaptor,
    FixedSizeMemoryResource, FixedSizeOptions, LimitingAdaptor, LoggingAdaptor, MemoryResource,
    PoolMemoryResource, PoolOptions, PrefetchAdaptor, SharedResource, SimulatedMemoryResource,
    StatisticsAdaptor, ThreadSafeAdaptor, TrackingAdaptor,
};
use rmm::{CudaStreamView, DevicePtr, Error};
use rmm_testing::SplitMix64;

mod adaptors;
mod threads;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

type Upstream = FaultyResource<SimulatedMemoryResource>;

/// Operations between rebuilds of the stack.
const EPOCH: u64 = 2_000;
/// Operations under one fault mode.
const WINDOW: u64 = 500;
/// Operations between checks of the counters.
const CHECK_EVERY: u64 = 1_000;
/// Most live allocations at once.
const MAX_LIVE: usize = 400;

/// Fake stream handles: the simulated resource never passes them to the driver.
fn stream(i: usize) -> CudaStreamView<'static> {
    if i == 0 {
        return CudaStreamView::DEFAULT;
    }
    // SAFETY: only used with simulated resources, which never touch streams.
    unsafe { CudaStreamView::from_raw(0x7000 + 16 * i) }
}

/// One live allocation of the model.
#[derive(Debug, Clone, Copy)]
struct Live {
    bytes: usize,
    alignment: usize,
    stream: usize,
}

/// What the stack should hold: the live allocations, and this epoch's
/// totals.
#[derive(Debug, Default)]
struct Model {
    live: BTreeMap<u64, Live>,
    live_bytes: usize,
    allocated_total: usize,
    allocations_total: usize,
    frees: usize,
    failures: usize,
    oom_failures: usize,
}

impl Model {
    /// Records a new allocation; panics if it overlaps a live one or misses
    /// its alignment.
    fn insert(&mut self, p: DevicePtr, live: Live) {
        let (start, end) = (p.addr(), p.addr() + live.bytes as u64);
        assert!(
            p.is_aligned(live.alignment),
            "{p} is not aligned to {}",
            live.alignment
        );
        if let Some((&a, l)) = self.live.range(..=start).next_back() {
            assert!(
                a + l.bytes as u64 <= start,
                "{p}+{} overlaps live {a:#x}+{}",
                live.bytes,
                l.bytes
            );
        }
        if let Some((&a, _)) = self.live.range(start..).next() {
            assert!(end <= a, "{p}+{} overlaps live {a:#x}", live.bytes);
        }
        self.live.insert(start, live);
        self.live_bytes += live.bytes;
        self.allocated_total += live.bytes;
        self.allocations_total += 1;
    }

    /// Removes a random live allocation.
    fn take(&mut self, rng: &mut SplitMix64) -> Option<(u64, Live)> {
        if self.live.is_empty() {
            return None;
        }
        let probe = self.live.keys().next().copied().unwrap() + rng.next() % (1 << 36);
        let (&a, _) = self
            .live
            .range(probe..)
            .next()
            .or_else(|| self.live.iter().next_back())?;
        let live = self.live.remove(&a)?;
        self.live_bytes -= live.bytes;
        self.frees += 1;
        Some((a, live))
    }
}

/// Checks a stack's own counters against the model.
type Check = Box<dyn Fn(&SharedResource, &Model, &Upstream)>;
/// Builds a stack over the upstream.
type Build = dyn Fn(&Upstream) -> rmm::Result<Built>;

/// A stack under test, as built for one epoch.
struct Built {
    mr: SharedResource,
    /// Checks the stack's own counters against the model.
    check: Check,
}

impl Built {
    fn plain(mr: impl MemoryResource) -> Self {
        Built {
            mr: SharedResource::new(mr),
            check: Box::new(|_, _, _| {}),
        }
    }
}

/// How a stack is made and driven.
struct Stack {
    name: &'static str,
    build: Box<Build>,
    /// Largest request.
    max_bytes: usize,
    /// Whether the stack refuses requests of its own (a limit, a fixed
    /// arena), so that a failure without an injected fault is allowed.
    may_refuse: bool,
}

/// Counts of a run, for the summary line.
#[derive(Debug, Default)]
struct Figures {
    ops: u64,
    allocations: u64,
    failures: u64,
    injected: u64,
    absorbed: u64,
    failed_builds: u64,
    epochs: u64,
}

/// The fault mode of one window: the trigger and the status it injects.
fn fault_mode(rng: &mut SplitMix64) -> (Trigger, InjectedError) {
    match rng.below(6) {
        0 | 1 => (Trigger::Never, InjectedError::OutOfMemory),
        2 => (Trigger::rate(0.02, rng.next()), InjectedError::OutOfMemory),
        3 => (Trigger::rate(0.3, rng.next()), InjectedError::OutOfMemory),
        4 => (
            Trigger::EveryNth(1 + rng.below(5) as u64),
            InjectedError::OutOfMemory,
        ),
        _ => (Trigger::rate(0.1, rng.next()), InjectedError::Unknown),
    }
}

/// A request size: mostly small, some medium, a few large.
fn request_size(rng: &mut SplitMix64, max_bytes: usize) -> usize {
    let hi = match rng.below(100) {
        0..=69 => 8 * KIB,
        70..=96 => 256 * KIB,
        _ => max_bytes,
    };
    rng.log_uniform(1, hi.min(max_bytes))
}

fn alignment(rng: &mut SplitMix64) -> usize {
    // Sub-allocators support up to 256 (the aligned adaptor gives more).
    match rng.below(10) {
        0 => 8,
        1 => 128,
        _ => 256,
    }
}

/// Asserts an allocation's error is one the injected fault (or the stack's
/// own limit) explains.
fn assert_explained(stack: &Stack, e: &Error, injected: bool, error: InjectedError) {
    let as_injected = match error {
        InjectedError::OutOfMemory => e.is_out_of_memory(),
        other => matches!(e, Error::Cuda { code, .. } if *code == other.code()) || e.is_out_of_memory(),
    };
    assert!(
        (injected && as_injected) || (stack.may_refuse && e.is_out_of_memory()),
        "{}: unexplained error (injected: {injected}, mode {error:?}): {e}",
        stack.name
    );
}

/// Builds the stack, under the current faults; a failed build must leave
/// nothing in the upstream. Stops the faults and retries after a failure.
fn build(stack: &Stack, up: &Upstream, figures: &mut Figures) -> Built {
    loop {
        match (stack.build)(up) {
            Ok(built) => return built,
            Err(e) => {
                assert!(
                    e.is_out_of_memory() || matches!(e, Error::Cuda { .. }),
                    "{}: {e}",
                    stack.name
                );
                assert_eq!(
                    up.live_bytes(),
                    0,
                    "{}: a failed build keeps upstream memory",
                    stack.name
                );
                figures.failed_builds += 1;
                up.stop();
            }
        }
    }
}

/// One allocation or free of the model's mix.
fn step(
    stack: &Stack,
    built: &Built,
    up: &Upstream,
    model: &mut Model,
    rng: &mut SplitMix64,
    mode: (Trigger, InjectedError),
    figures: &mut Figures,
) {
    let free = model.live.len() >= MAX_LIVE || (!model.live.is_empty() && rng.below(100) < 45);
    if free {
        let (a, live) = model.take(rng).unwrap();
        // Mostly on the allocation's stream, sometimes on another.
        let s = if rng.below(10) == 0 {
            rng.below(4)
        } else {
            live.stream
        };
        // SAFETY: allocated by this stack with these arguments, freed once.
        unsafe {
            built
                .mr
                .deallocate(DevicePtr::new(a), live.bytes, live.alignment, stream(s))
        };
        return;
    }
    let live = Live {
        bytes: request_size(rng, stack.max_bytes),
        alignment: alignment(rng),
        stream: rng.below(4),
    };
    let before = up.injected();
    let result = built.mr.allocate(live.bytes, live.alignment, stream(live.stream));
    let injected = up.injected() > before;
    figures.allocations += 1;
    match result {
        Ok(p) => {
            figures.absorbed += u64::from(injected);
            model.insert(p, live);
        }
        Err(e) => {
            assert_explained(stack, &e, injected, mode.1);
            figures.failures += 1;
            model.failures += 1;
            model.oom_failures += usize::from(e.is_out_of_memory());
        }
    }
}

/// Frees everything the model holds.
fn free_all(built: &Built, model: &mut Model, rng: &mut SplitMix64) {
    while let Some((a, live)) = model.take(rng) {
        // SAFETY: allocated by this stack with these arguments, freed once.
        unsafe {
            built
                .mr
                .deallocate(DevicePtr::new(a), live.bytes, live.alignment, stream(live.stream))
        };
    }
}

/// With faults stopped, the stack serves a fresh set of requests.
fn serves_again(stack: &Stack, built: &Built, up: &Upstream, model: &mut Model, rng: &mut SplitMix64) {
    up.stop();
    for _ in 0..64 {
        let live = Live {
            bytes: request_size(rng, stack.max_bytes.min(MIB)),
            alignment: 256,
            stream: rng.below(4),
        };
        let p = built
            .mr
            .allocate(live.bytes, live.alignment, stream(live.stream))
            .unwrap_or_else(|e| panic!("{}: does not serve again once faults stop: {e}", stack.name));
        model.insert(p, live);
    }
    (built.check)(&built.mr, model, up);
    free_all(built, model, rng);
}

/// Runs `ops` operations over `stack` in epochs, each over a freshly built
/// stack, and prints the summary line.
fn run(stack: Stack, seed: u64) {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let up = FaultyResource::new(sim.clone());
    let mut rng = SplitMix64(seed);
    let ops = rmm_testing::env::fault_ops();
    let mut figures = Figures::default();
    let mut done = 0;
    while done < ops {
        // Half the epochs fail one of the first upstream calls: the
        // construction's, or the first growths after it.
        let mut mode = fault_mode(&mut rng);
        if rng.below(2) == 0 {
            mode = (Trigger::Nth(1 + rng.below(3) as u64), InjectedError::OutOfMemory);
        }
        up.fail_with(mode.0, mode.1);
        let built = build(&stack, &up, &mut figures);
        let mut model = Model::default();
        let end = (done + EPOCH).min(ops);
        while done < end {
            if done % WINDOW == WINDOW / 2 {
                mode = fault_mode(&mut rng);
                up.fail_with(mode.0, mode.1);
            }
            step(&stack, &built, &up, &mut model, &mut rng, mode, &mut figures);
            done += 1;
            if done % CHECK_EVERY == 0 {
                (built.check)(&built.mr, &model, &up);
            }
        }
        up.stop();
        free_all(&built, &mut model, &mut rng);
        (built.check)(&built.mr, &model, &up);
        serves_again(&stack, &built, &up, &mut model, &mut rng);
        let graph = built.mr.graph_memory().unwrap_or_default();
        assert_eq!(
            (graph.live_bytes, graph.pools),
            (0, 0),
            "{}: graph memory without a graph",
            stack.name
        );
        drop(built);
        assert_eq!(
            (
                up.live_bytes(),
                up.live_allocations(),
                up.bad_frees(),
                sim.allocated_bytes()
            ),
            (0, 0, 0, 0),
            "{}: the upstream still holds memory after the stack is dropped",
            stack.name
        );
        figures.epochs += 1;
    }
    figures.ops = done;
    figures.injected = up.injected();
    assert!(figures.injected > 0, "{}: no fault was injected", stack.name);
    println!(
        "faults-model {}: ops={} allocations={} faults_injected={} faults_survived={} absorbed_by_stack={} \
         alloc_errors={} failed_builds={} epochs={} leaks=0 overlaps=0",
        stack.name,
        figures.ops,
        figures.allocations,
        figures.injected,
        figures.injected,
        figures.absorbed,
        figures.failures,
        figures.failed_builds,
        figures.epochs
    );
}

/// Pool invariants: its chunks are exactly what the upstream holds; used
/// bytes are the live requests rounded to 256.
fn check_pool(pool: &PoolMemoryResource<Upstream>, model: &Model, up: &Upstream) {
    assert_eq!(pool.pool_size(), up.live_bytes(), "pool size vs upstream");
    let used: usize = model.live.values().map(|l| l.bytes.next_multiple_of(256)).sum();
    assert_eq!(pool.pool_size() - pool.free_bytes(), used, "pool used bytes");
    assert_eq!(pool.bad_frees(), 0);
}

fn pool(up: &Upstream) -> rmm::Result<PoolMemoryResource<Upstream>> {
    PoolMemoryResource::new(up.clone(), PoolOptions::default().initial_pool_size(MIB))
}

fn pool_built(up: &Upstream) -> rmm::Result<Built> {
    Ok(Built {
        mr: SharedResource::new(pool(up)?),
        check: Box::new(|mr, model, up| check_pool(mr.inner().downcast_ref().unwrap(), model, up)),
    })
}

fn stack(
    name: &'static str,
    max_bytes: usize,
    build: impl Fn(&Upstream) -> rmm::Result<Built> + 'static,
) -> Stack {
    Stack {
        name,
        build: Box::new(build),
        max_bytes,
        may_refuse: false,
    }
}

#[test]
fn pool_survives_faults() {
    run(stack("pool", 16 * MIB, pool_built), 1);
}

#[test]
fn pool_with_maximum_survives_faults() {
    let mut s = stack("pool_with_maximum", 16 * MIB, |up| {
        let options = PoolOptions::default()
            .initial_pool_size(4 * MIB)
            .maximum_pool_size(512 * MIB);
        let pool = PoolMemoryResource::new(up.clone(), options)?;
        Ok(Built {
            mr: SharedResource::new(pool),
            check: Box::new(|mr, model, up| check_pool(mr.inner().downcast_ref().unwrap(), model, up)),
        })
    });
    s.may_refuse = true;
    run(s, 2);
}

#[test]
fn fixed_size_survives_faults() {
    const BLOCK: usize = 64 * KIB;
    run(
        stack("fixed_size", BLOCK, |up| {
            let options = FixedSizeOptions::default()
                .block_size(BLOCK)
                .blocks_to_preallocate(16);
            let fixed = FixedSizeMemoryResource::new(up.clone(), options)?;
            Ok(Built {
                mr: SharedResource::new(fixed),
                check: Box::new(|mr, model, up| {
                    let fixed: &FixedSizeMemoryResource<Upstream> = mr.inner().downcast_ref().unwrap();
                    assert_eq!(
                        fixed.pool_size(),
                        up.live_bytes(),
                        "fixed-size chunks vs upstream"
                    );
                    assert_eq!(fixed.pool_size() - fixed.free_bytes(), model.live.len() * BLOCK);
                    assert_eq!(fixed.bad_frees(), 0);
                }),
            })
        }),
        3,
    );
}

#[test]
fn binning_survives_faults() {
    run(
        stack("binning", 16 * MIB, |up| {
            let bins = BinningMemoryResource::with_fixed_bins(up.clone(), 10, 20)?;
            Ok(Built {
                mr: SharedResource::new(bins),
                check: Box::new(|mr, model, up| {
                    let bins: &BinningMemoryResource<Upstream> = mr.inner().downcast_ref().unwrap();
                    assert_eq!(bins.bad_frees(), 0);
                    assert!(
                        up.live_bytes() >= model.live_bytes,
                        "binning holds less than is live"
                    );
                }),
            })
        }),
        4,
    );
}

#[test]
fn arena_survives_faults() {
    let mut s = stack("arena", 16 * MIB, |up| {
        let options = ArenaOptions::default().arena_size(GIB);
        let arena = ArenaMemoryResource::new(up.clone(), options)?;
        Ok(Built {
            mr: SharedResource::new(arena),
            check: Box::new(|mr, _, up| {
                let arena: &ArenaMemoryResource<Upstream> = mr.inner().downcast_ref().unwrap();
                assert_eq!(arena.arena_size(), up.live_bytes(), "arena vs upstream");
                assert_eq!(arena.bad_frees(), 0);
            }),
        })
    });
    s.may_refuse = true;
    run(s, 5);
}

/// A stack built while faults fail its first upstream allocation keeps no
/// memory, and builds once they stop: the epochs above do this at random;
/// here it happens for certain, for each sub-allocator.
#[test]
fn failed_construction_holds_nothing() {
    let builders: [(&str, &Build); 4] = [
        ("pool", &|up| pool(up).map(Built::plain)),
        ("fixed_size", &|up| {
            FixedSizeMemoryResource::new(up.clone(), FixedSizeOptions::default()).map(Built::plain)
        }),
        ("binning", &|up| {
            BinningMemoryResource::with_fixed_bins(up.clone(), 10, 20).map(Built::plain)
        }),
        ("arena", &|up| {
            ArenaMemoryResource::new(up.clone(), ArenaOptions::default().arena_size(GIB)).map(Built::plain)
        }),
    ];
    for (name, build) in builders {
        for nth in 1..=4 {
            let up = FaultyResource::new(SimulatedMemoryResource::new(64 * GIB));
            up.fail(Trigger::Nth(nth));
            match build(&up) {
                Err(e) => assert!(e.is_out_of_memory(), "{name}: {e}"),
                Ok(built) => drop(built),
            }
            assert_eq!(up.live_bytes(), 0, "{name}: fault at upstream call {nth} leaks");
            up.stop();
            let built = build(&up).unwrap_or_else(|e| panic!("{name}: no build once faults stop: {e}"));
            drop(built);
            assert_eq!(up.live_bytes(), 0, "{name}");
        }
    }
}
