//! Misuse is detected, never trusted (DESIGN.md §3, issue 13).
//!
//! A model-based test drives every sub-allocator and checking adaptor over
//! [`SimulatedMemoryResource`] with four fake streams, mixing valid
//! allocations and frees with adversarial frees (double free, a
//! never-allocated address, an interior pointer, a wrong size, a foreign
//! pointer that is live in the upstream), and checks after every step:
//!
//! * every allocation is disjoint from every live one (by the model);
//! * a valid operation logs no error, an adversarial free logs one and
//!   changes nothing observable (free bytes, pool size, limiter and
//!   statistics counters, the upstream's bytes), and the resource's own
//!   refused-free count rises by exactly one;
//! * the resource's counters match the model (free + live = pool size, the
//!   limiter's count = live bytes rounded to 256, and so on);
//! * at the end, with everything freed and the resource dropped, the
//!   upstream holds nothing and saw no bad free: no adversarial free was
//!   ever passed on.
//!
//! The system memory resources (without a GPU, over real host memory, and
//! the SAM headroom resource over a simulated device) are driven the same
//! way: there a free that reached the allocator would corrupt the heap.
//!
//! 150 000 steps per resource, 10 resources (the simulated one included):
//! 1.5 x 10^6 steps in all.
//! `VirtualPoolMemoryResource` shares the stream-ordered core (and its live
//! record) with the pool but cannot be built without a GPU, so it is not
//! driven here.
//!
//! Below the model test, one unit test per defect of issue 13, named after it.

use std::collections::BTreeMap;

use rmm::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, FixedSizeMemoryResource, FixedSizeOptions,
    LimitingAdaptor, MemoryResource, PoolMemoryResource, PoolOptions, SamHeadroomMemoryResource,
    SimulatedMemoryResource, StatisticsAdaptor, SystemMemoryResource, TrackingAdaptor,
};
use rmm::{CudaStreamView, DevicePtr};
use rmm_testing::SplitMix64;

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;
const STEPS: usize = 150_000;

// Error-level log records of this thread so far (tests run in parallel).
use rmm_testing::error_log_count as errors;

fn stream(i: usize) -> CudaStreamView<'static> {
    // SAFETY: simulated resources never pass stream handles to the driver
    // (as `Streams::new` does for them in tests/common).
    unsafe { CudaStreamView::from_raw(0x1000 + 16 * i) }
}

const S: CudaStreamView = CudaStreamView::DEFAULT;

fn round(bytes: usize) -> usize {
    bytes.div_ceil(256) * 256
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Model {
    /// Live allocations: address to requested bytes.
    live: BTreeMap<u64, usize>,
    keys: Vec<u64>,
    bytes: usize,
    rounded: usize,
    /// Recently freed blocks, for double frees.
    freed: Vec<(u64, usize)>,
}

impl Model {
    fn check_disjoint(&self, a: u64, bytes: usize) -> Result<(), String> {
        let end = a + round(bytes) as u64;
        if let Some((&b, &n)) = self.live.range(..=a).next_back() {
            if b + round(n) as u64 > a {
                return Err(format!("{a:#x}+{bytes} overlaps live {b:#x}+{n}"));
            }
        }
        if let Some((&b, &n)) = self.live.range(a..).next() {
            if b < end {
                return Err(format!("{a:#x}+{bytes} overlaps live {b:#x}+{n}"));
            }
        }
        Ok(())
    }
    fn add(&mut self, a: u64, bytes: usize) {
        self.live.insert(a, bytes);
        self.keys.push(a);
        self.bytes += bytes;
        self.rounded += round(bytes);
    }
    fn take(&mut self, i: usize) -> (u64, usize) {
        let a = self.keys.swap_remove(i);
        let bytes = self.live.remove(&a).expect("model key");
        self.bytes -= bytes;
        self.rounded -= round(bytes);
        if self.freed.len() >= 64 {
            self.freed.swap_remove(0);
        }
        self.freed.push((a, bytes));
        (a, bytes)
    }
}

/// Checks a resource's counters against the model.
type Consistent<'a> = dyn Fn(&Model) -> Result<(), String> + 'a;

/// A resource under test and what it lets the model observe.
struct Subject<'a> {
    name: &'static str,
    mr: &'a dyn MemoryResource,
    /// Request sizes for this resource.
    size: fn(&mut SplitMix64) -> usize,
    /// Most live allocations the driver keeps.
    max_live: usize,
    /// Everything an ignored free must leave unchanged.
    snapshot: Box<dyn Fn() -> Vec<usize> + 'a>,
    /// Counters checked against the model after every step.
    consistent: Box<Consistent<'a>>,
    /// The resource's own count of refused frees, where it has one.
    refused: Option<Box<dyn Fn() -> usize + 'a>>,
    /// Live upstream pointers the resource never handed out.
    foreign: Vec<(u64, usize)>,
}

fn small(r: &mut SplitMix64) -> usize {
    match r.below(10) {
        0 => 1 + r.below(1024),
        1..=7 => 1 + r.below(16 * KIB),
        _ => 1 + r.below(256 * KIB),
    }
}

fn up_to_4k(r: &mut SplitMix64) -> usize {
    1 + r.below(4 * KIB)
}

fn with_large(r: &mut SplitMix64) -> usize {
    if r.below(20) == 0 {
        MIB + 1 + r.below(2 * MIB)
    } else {
        1 + r.below(64 * KIB)
    }
}

#[derive(Debug, Clone, Copy)]
enum Bad {
    Double,
    NeverAllocated,
    Interior,
    WrongSize,
    Foreign,
}

/// One adversarial free the model knows must be refused, or `None` when
/// the model has nothing to aim at this time.
fn pick_bad(m: &Model, foreign: &[(u64, usize)], rng: &mut SplitMix64) -> Option<(Bad, u64, usize)> {
    let kind = [
        Bad::Double,
        Bad::NeverAllocated,
        Bad::Interior,
        Bad::WrongSize,
        Bad::Foreign,
    ][rng.below(5)];
    let live_pick = |rng: &mut SplitMix64| {
        let a = *m.keys.get(rng.below(m.keys.len().max(1)))?;
        Some((a, m.live[&a]))
    };
    match kind {
        Bad::Double => {
            let &(a, b) = m.freed.get(rng.below(m.freed.len().max(1)))?;
            // Reused since with the same size: that free would be valid.
            (m.live.get(&a) != Some(&b)).then_some((kind, a, b))
        }
        Bad::NeverAllocated => {
            let (a, _) = live_pick(rng)?;
            let step = if rng.below(2) == 0 { 256 } else { 4096 };
            let addr = a.wrapping_add(step * (1 + rng.below(4096)) as u64);
            let bytes = 1 + rng.below(64 * KIB);
            (!m.live.contains_key(&addr)).then_some((kind, addr, bytes))
        }
        Bad::Interior => {
            let (a, b) = live_pick(rng)?;
            if b < 2 {
                return None;
            }
            let off = if b > 256 && rng.below(2) == 0 {
                256 * (1 + rng.below((b - 1) / 256)) as u64
            } else {
                1 + rng.below(b - 1) as u64
            };
            Some((
                kind,
                a + off,
                if rng.below(2) == 0 { b } else { b - off as usize },
            ))
        }
        Bad::WrongSize => {
            let (a, b) = live_pick(rng)?;
            let wrong = match rng.below(7) {
                0 => b + 1,
                1 => b - 1,
                2 => b * 2,
                3 => b + 256,
                4 => usize::MAX,
                5 => b + MIB,
                _ => 0,
            };
            (wrong != b).then_some((kind, a, wrong))
        }
        Bad::Foreign => match foreign.get(rng.below(foreign.len().max(1))) {
            Some(&(a, b)) if rng.below(2) == 0 => Some((kind, a, b)),
            // A fake pointer below every simulated address.
            _ => Some((kind, 0x10_0000 + 256 * rng.below(1024) as u64, 1 + rng.below(MIB))),
        },
    }
}

fn drive(sub: &Subject<'_>, steps: usize, seed: u64) {
    let mut rng = SplitMix64(seed);
    let mut m = Model::default();
    let name = sub.name;
    let refused = || sub.refused.as_ref().map_or(0, |f| f());
    let (mut allocs, mut frees, mut bad) = (0usize, 0usize, 0usize);
    for step in 0..steps {
        let st = stream(rng.below(4));
        let roll = rng.below(100);
        let alloc_pct = if m.keys.len() >= sub.max_live { 10 } else { 45 };
        if roll < alloc_pct || m.keys.is_empty() {
            let bytes = (sub.size)(&mut rng);
            let e0 = errors();
            match sub.mr.allocate(bytes, 256, st) {
                Ok(p) => {
                    assert!(!p.is_null() && p.is_aligned(256), "{name} step {step}: {p:?}");
                    if let Err(e) = m.check_disjoint(p.addr(), bytes) {
                        panic!("{name} step {step}: {e}");
                    }
                    m.add(p.addr(), bytes);
                    assert_eq!(
                        errors(),
                        e0,
                        "{name} step {step}: a valid allocation logged an error"
                    );
                    allocs += 1;
                }
                Err(e) => assert!(e.is_out_of_memory(), "{name} step {step}: {e}"),
            }
        } else if roll < 85 {
            let (a, bytes) = m.take(rng.below(m.keys.len()));
            let (e0, r0) = (errors(), refused());
            // SAFETY: simulated memory, allocated by `sub.mr` with these arguments.
            unsafe { sub.mr.deallocate(DevicePtr::new(a), bytes, 256, st) };
            assert_eq!(
                errors(),
                e0,
                "{name} step {step}: a valid free of {a:#x}+{bytes} logged an error"
            );
            assert_eq!(refused(), r0, "{name} step {step}: a valid free was refused");
            frees += 1;
        } else if let Some((kind, a, bytes)) = pick_bad(&m, &sub.foreign, &mut rng) {
            let (before, e0, r0) = ((sub.snapshot)(), errors(), refused());
            // SAFETY: simulated memory: nothing is touched, whatever the
            // resource does with the pointer (it must ignore it).
            unsafe { sub.mr.deallocate(DevicePtr::new(a), bytes, 256, st) };
            assert!(
                errors() > e0,
                "{name} step {step}: {kind:?} free of {a:#x}+{bytes} was not logged"
            );
            if sub.refused.is_some() {
                assert_eq!(
                    refused(),
                    r0 + 1,
                    "{name} step {step}: {kind:?} free not counted once"
                );
            }
            assert_eq!(
                (sub.snapshot)(),
                before,
                "{name} step {step}: {kind:?} free of {a:#x}+{bytes} changed the resource"
            );
            bad += 1;
        }
        if let Err(e) = (sub.consistent)(&m) {
            panic!("{name} step {step}: {e}");
        }
    }
    while !m.keys.is_empty() {
        let (a, bytes) = m.take(0);
        // SAFETY: allocated by `sub.mr` with these arguments.
        unsafe { sub.mr.deallocate(DevicePtr::new(a), bytes, 256, stream(0)) };
        if let Err(e) = (sub.consistent)(&m) {
            panic!("{name} final free: {e}");
        }
    }
    assert!(
        allocs > steps / 4 && frees > steps / 4 && bad > steps / 20,
        "{name}: {allocs} allocations, {frees} frees, {bad} bad frees"
    );
}

/// Upstream pointers allocated directly (live, but never the subject's).
fn foreign_of(sim: &SimulatedMemoryResource) -> Vec<(u64, usize)> {
    (0..4)
        .map(|i| {
            let b = 1000 + i * 4096;
            (sim.allocate(b, 256, S).expect("foreign").addr(), b)
        })
        .collect()
}

/// Frees the foreign pointers and checks the upstream saw nothing wrong.
fn finish(sim: &SimulatedMemoryResource, foreign: &[(u64, usize)]) {
    for &(a, b) in foreign {
        // SAFETY: allocated from `sim` with these arguments.
        unsafe { sim.deallocate(DevicePtr::new(a), b, 256, S) };
    }
    assert_eq!(sim.bad_frees(), 0, "a bad free reached the upstream");
    assert_eq!(sim.allocated_bytes(), 0, "the upstream still holds memory");
}

fn check(cond: bool, what: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(what())
    }
}

#[test]
fn model_pool() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    let pool =
        PoolMemoryResource::new(sim.clone(), PoolOptions::default().initial_pool_size(4 * MIB)).unwrap();
    let sub = Subject {
        name: "pool",
        mr: &pool,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| vec![pool.free_bytes(), pool.pool_size(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (free, size) = (pool.free_bytes(), pool.pool_size());
            check(free + m.rounded == size, || {
                format!("free {free} + live {} != pool size {size}", m.rounded)
            })
        }),
        refused: Some(Box::new(|| pool.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 1);
    drop(sub);
    drop(pool);
    finish(&sim, &foreign);
}

#[test]
fn model_fixed_size() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    let opts = FixedSizeOptions::default()
        .block_size(4096)
        .blocks_to_preallocate(64);
    let mr = FixedSizeMemoryResource::new(sim.clone(), opts).unwrap();
    let sub = Subject {
        name: "fixed_size",
        mr: &mr,
        size: up_to_4k,
        max_live: 300,
        snapshot: Box::new(|| vec![mr.free_bytes(), mr.pool_size(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (free, size) = (mr.free_bytes(), mr.pool_size());
            check(free + m.keys.len() * 4096 == size, || {
                format!("free {free} + {} live blocks != pool size {size}", m.keys.len())
            })
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 2);
    drop(sub);
    drop(mr);
    finish(&sim, &foreign);
}

#[test]
fn model_binning() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    // Bins of 1 KiB .. 16 KiB; larger requests go to the upstream.
    let mr = BinningMemoryResource::with_fixed_bins(sim.clone(), 10, 14).unwrap();
    let sub = Subject {
        name: "binning",
        mr: &mr,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| vec![sim.allocated_bytes(), sim.live_allocations(), mr.cached_bytes()]),
        consistent: Box::new(|_| Ok(())),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 3);
    drop(sub);
    drop(mr);
    finish(&sim, &foreign);
}

#[test]
fn model_arena() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    let opts = ArenaOptions::default().arena_size(128 * MIB).superblock_size(MIB);
    let mr = ArenaMemoryResource::new(sim.clone(), opts).unwrap();
    let sub = Subject {
        name: "arena",
        mr: &mr,
        size: with_large,
        max_live: 200,
        snapshot: Box::new(|| vec![mr.free_bytes(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (free, size) = (mr.free_bytes(), mr.arena_size());
            check(free + m.rounded == size, || {
                format!("free {free} + live {} != arena size {size}", m.rounded)
            })
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 4);
    drop(sub);
    drop(mr);
    finish(&sim, &foreign);
}

#[test]
fn model_limiting_over_simulated() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    let foreign_bytes = sim.allocated_bytes();
    let limit = 8 * MIB;
    let mr = LimitingAdaptor::new(sim.clone(), limit);
    let sub = Subject {
        name: "limiting",
        mr: &mr,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| vec![mr.allocated_bytes(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (count, upstream) = (mr.allocated_bytes(), sim.allocated_bytes() - foreign_bytes);
            check(
                count == m.rounded && upstream == m.rounded && count <= limit,
                || {
                    format!(
                        "limiter counts {count}, upstream holds {upstream}, live {} (limit {limit})",
                        m.rounded
                    )
                },
            )
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 5);
    drop(sub);
    drop(mr);
    finish(&sim, &foreign);
}

#[test]
fn model_statistics_over_simulated() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    let foreign_bytes = sim.allocated_bytes();
    let mr = StatisticsAdaptor::new(sim.clone());
    let sub = Subject {
        name: "statistics",
        mr: &mr,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| {
            let (b, n) = (mr.bytes_counter(), mr.allocations_counter());
            vec![
                b.value as usize,
                b.total as usize,
                n.value as usize,
                sim.allocated_bytes(),
            ]
        }),
        consistent: Box::new(|m| {
            let (b, n) = (mr.bytes_counter(), mr.allocations_counter());
            let upstream = sim.allocated_bytes() - foreign_bytes;
            check(
                b.value == m.bytes as i64 && n.value == m.keys.len() as i64 && upstream == m.rounded,
                || {
                    format!(
                        "counters {b:?} {n:?}, upstream {upstream}; model {} bytes in {}",
                        m.bytes,
                        m.keys.len()
                    )
                },
            )
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 6);
    drop(sub);
    drop(mr);
    finish(&sim, &foreign);
}

#[test]
fn model_tracking_over_simulated() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    let foreign = foreign_of(&sim);
    let foreign_bytes = sim.allocated_bytes();
    let mr = TrackingAdaptor::new(sim.clone(), false);
    let sub = Subject {
        name: "tracking",
        mr: &mr,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| {
            vec![
                mr.allocated_bytes(),
                mr.outstanding_allocations().len(),
                sim.allocated_bytes(),
            ]
        }),
        consistent: Box::new(|m| {
            let (bytes, live) = (mr.allocated_bytes(), mr.outstanding_allocations().len());
            let upstream = sim.allocated_bytes() - foreign_bytes;
            check(
                bytes == m.bytes && live == m.keys.len() && upstream == m.rounded,
                || {
                    format!(
                        "tracked {bytes} bytes in {live}, upstream {upstream}; model {} bytes in {}",
                        m.bytes,
                        m.keys.len()
                    )
                },
            )
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 7);
    drop(sub);
    drop(mr);
    finish(&sim, &foreign);
}

#[test]
fn model_simulated() {
    let sim = SimulatedMemoryResource::new(GIB);
    let sub = Subject {
        name: "simulated",
        mr: &sim,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| vec![sim.allocated_bytes(), sim.live_allocations()]),
        consistent: Box::new(|m| {
            let (bytes, n) = (sim.allocated_bytes(), sim.live_allocations());
            check(bytes == m.rounded && n == m.keys.len(), || {
                format!(
                    "simulated holds {bytes} in {n}; model {} in {}",
                    m.rounded,
                    m.keys.len()
                )
            })
        }),
        refused: Some(Box::new(|| sim.bad_frees())),
        foreign: Vec::new(),
    };
    drive(&sub, STEPS, 7);
    drop(sub);
    assert_eq!((sim.allocated_bytes(), sim.live_allocations()), (0, 0));
}

/// Live allocations of another system resource (real host memory that the
/// subject never handed out).
fn foreign_host(other: &dyn MemoryResource) -> Vec<(u64, usize)> {
    (0..4)
        .map(|i| {
            let b = 1000 + i * 4096;
            (other.allocate(b, 256, S).expect("foreign").addr(), b)
        })
        .collect()
}

fn free_foreign_host(other: &dyn MemoryResource, foreign: &[(u64, usize)]) {
    for &(a, b) in foreign {
        // SAFETY: allocated from `other` with these arguments, never used.
        unsafe { other.deallocate(DevicePtr::new(a), b, 256, S) };
    }
}

#[test]
fn model_system_without_gpu() {
    let mr = SystemMemoryResource::without_gpu();
    let other = SystemMemoryResource::without_gpu();
    let foreign = foreign_host(&other);
    let sub = Subject {
        name: "system",
        mr: &mr,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| vec![mr.allocated_bytes(), mr.live_allocations()]),
        consistent: Box::new(|m| {
            let (bytes, n) = (mr.allocated_bytes(), mr.live_allocations());
            check(bytes == m.bytes && n == m.keys.len(), || {
                format!(
                    "system holds {bytes} in {n}; model {} in {}",
                    m.bytes,
                    m.keys.len()
                )
            })
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 8);
    drop(sub);
    assert_eq!((mr.allocated_bytes(), mr.live_allocations()), (0, 0));
    free_foreign_host(&other, &foreign);
    assert_eq!((other.bad_frees(), other.live_allocations()), (0, 0));
}

#[test]
fn model_sam_headroom_simulated() {
    // 64 MiB of device, 16 MiB headroom: with up to 300 live allocations of
    // up to 256 KiB, allocations land on both sides of the headroom.
    let sim = SimulatedMemoryResource::new(64 * MIB);
    let mr = SamHeadroomMemoryResource::simulated(16 * MIB, sim.clone());
    let other = SamHeadroomMemoryResource::simulated(16 * MIB, sim.clone());
    let foreign = foreign_host(&other);
    let sub = Subject {
        name: "sam_headroom",
        mr: &mr,
        size: small,
        max_live: 300,
        snapshot: Box::new(|| {
            vec![
                mr.allocated_bytes(),
                mr.live_allocations(),
                mr.device_bytes(),
                sim.allocated_bytes(),
            ]
        }),
        consistent: Box::new(|m| {
            let (bytes, n) = (mr.allocated_bytes(), mr.live_allocations());
            check(bytes == m.bytes && n == m.keys.len(), || {
                format!(
                    "sam_headroom holds {bytes} in {n}; model {} in {}",
                    m.bytes,
                    m.keys.len()
                )
            })?;
            // The device parts are all the simulated device holds, besides
            // the foreign allocations' parts, and never eat the headroom.
            let (device, held) = (mr.device_bytes() + other.device_bytes(), sim.allocated_bytes());
            check(
                device == held && held <= 48 * MIB && mr.device_bytes() <= bytes,
                || format!("device parts {device}, simulated device holds {held}, allocated {bytes}"),
            )
        }),
        refused: Some(Box::new(|| mr.bad_frees())),
        foreign: foreign.clone(),
    };
    drive(&sub, STEPS, 9);
    drop(sub);
    assert_eq!((mr.allocated_bytes(), mr.device_bytes()), (0, 0));
    free_foreign_host(&other, &foreign);
    assert_eq!(
        (other.bad_frees(), sim.allocated_bytes(), sim.bad_frees()),
        (0, 0, 0)
    );
}

// ---------------------------------------------------------------------------
// One test per defect of issue 13
// ---------------------------------------------------------------------------

fn assert_disjoint(blocks: &[(DevicePtr, usize)]) {
    let mut v: Vec<(u64, usize)> = blocks.iter().map(|&(p, b)| (p.addr(), round(b))).collect();
    v.sort_unstable();
    for w in v.windows(2) {
        assert!(
            w[0].0 + w[0].1 as u64 <= w[1].0,
            "{:#x}+{} overlaps {:#x}",
            w[0].0,
            w[0].1,
            w[1].0
        );
    }
}

/// Allocates `n` blocks of `bytes` and checks they are disjoint from each
/// other and from `live`; frees them again.
fn fill_and_check(mr: &dyn MemoryResource, live: &[(DevicePtr, usize)], n: usize, bytes: usize) {
    let mut all = live.to_vec();
    let mut mine = Vec::new();
    for _ in 0..n {
        match mr.allocate(bytes, 256, S) {
            Ok(p) => mine.push((p, bytes)),
            Err(e) => assert!(e.is_out_of_memory(), "{e}"),
        }
    }
    all.extend_from_slice(&mine);
    assert_disjoint(&all);
    for (p, b) in mine {
        // SAFETY: allocated above with these arguments.
        unsafe { mr.deallocate(p, b, 256, S) };
    }
}

fn pool_1mib() -> (
    SimulatedMemoryResource,
    PoolMemoryResource<SimulatedMemoryResource>,
) {
    let sim = SimulatedMemoryResource::new(GIB);
    let pool = PoolMemoryResource::new(sim.clone(), PoolOptions::default().initial_pool_size(MIB)).unwrap();
    (sim, pool)
}

#[test]
fn pool_double_free_of_block_whose_neighbours_coalesced_is_refused() {
    let (_sim, pool) = pool_1mib();
    let [a, b, c] = [0; 3].map(|_| pool.allocate(1024, 256, S).unwrap());
    let guard = pool.allocate(1024, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe {
        pool.deallocate(a, 1024, 256, S);
        pool.deallocate(c, 1024, 256, S);
        pool.deallocate(b, 1024, 256, S);
    }
    let free = pool.free_bytes();
    let e0 = errors();
    // SAFETY: the misuse under test (a second free of `b`), which must be ignored.
    unsafe { pool.deallocate(b, 1024, 256, S) };
    assert!(errors() > e0, "not logged");
    assert_eq!((pool.free_bytes(), pool.bad_frees()), (free, 1));
    fill_and_check(&pool, &[(guard, 1024)], 2000, 1024);
}

#[test]
fn pool_free_of_never_allocated_address_inside_free_range_is_refused() {
    let (_sim, pool) = pool_1mib();
    let p = pool.allocate(256, 256, S).unwrap();
    let free = pool.free_bytes();
    // SAFETY: the misuse under test (never allocated), which must be ignored.
    unsafe { pool.deallocate(DevicePtr::new(p.addr() + 512 * 1024), 4096, 256, S) };
    assert_eq!((pool.free_bytes(), pool.bad_frees()), (free, 1));
    fill_and_check(&pool, &[(p, 256)], 5000, 256);
}

#[test]
fn pool_free_of_interior_pointer_is_refused() {
    let (_sim, pool) = pool_1mib();
    let p = pool.allocate(4096, 256, S).unwrap();
    let free = pool.free_bytes();
    // SAFETY: the misuse under test (interior pointers), which must be ignored.
    unsafe {
        pool.deallocate(DevicePtr::new(p.addr() + 256), 256, 256, S);
        pool.deallocate(DevicePtr::new(p.addr() + 1), 4095, 256, S);
    }
    assert_eq!((pool.free_bytes(), pool.bad_frees()), (free, 2));
    fill_and_check(&pool, &[(p, 4096)], 5000, 256);
}

#[test]
fn pool_free_with_larger_size_is_refused() {
    let (_sim, pool) = pool_1mib();
    let p = pool.allocate(256, 256, S).unwrap();
    let q = pool.allocate(256, 256, S).unwrap();
    let free = pool.free_bytes();
    // SAFETY: the misuse under test (a larger size), which must be ignored.
    unsafe { pool.deallocate(p, 8192, 256, S) };
    assert_eq!((pool.free_bytes(), pool.bad_frees()), (free, 1));
    fill_and_check(&pool, &[(p, 256), (q, 256)], 5000, 256);
    // The right size still frees it.
    // SAFETY: allocated above with these arguments.
    unsafe { pool.deallocate(p, 256, 256, S) };
    assert_eq!(pool.free_bytes() + 256, pool.pool_size(), "only q is live");
}

#[test]
fn pool_unchecked_frees_still_serves() {
    let sim = SimulatedMemoryResource::new(GIB);
    let opts = PoolOptions::default()
        .initial_pool_size(MIB)
        .unchecked_frees(true);
    let pool = PoolMemoryResource::new(sim, opts).unwrap();
    fill_and_check(&pool, &[], 1000, 1000);
    assert_eq!(pool.free_bytes(), MIB);
}

fn fixed_4k() -> FixedSizeMemoryResource<SimulatedMemoryResource> {
    let opts = FixedSizeOptions::default()
        .block_size(4096)
        .blocks_to_preallocate(4);
    FixedSizeMemoryResource::new(SimulatedMemoryResource::new(GIB), opts).unwrap()
}

#[test]
fn fixed_size_double_free_is_refused() {
    let mr = fixed_4k();
    let p = mr.allocate(4096, 256, S).unwrap();
    let q = mr.allocate(4096, 256, S).unwrap();
    // SAFETY: allocated above; the second free is the misuse under test.
    unsafe {
        mr.deallocate(p, 4096, 256, S);
        mr.deallocate(p, 4096, 256, S);
    }
    assert_eq!(mr.bad_frees(), 1);
    assert!(mr.free_bytes() <= mr.pool_size());
    assert_eq!(mr.free_bytes(), 3 * 4096);
    fill_and_check(&mr, &[(q, 4096)], 20, 4096);
}

#[test]
fn fixed_size_free_of_never_allocated_block_aligned_address_is_refused() {
    let mr = fixed_4k();
    let p = mr.allocate(4096, 256, S).unwrap();
    // The next block of the chunk: block aligned, never handed out.
    // SAFETY: the misuse under test, which must be ignored.
    unsafe { mr.deallocate(DevicePtr::new(p.addr() + 4096), 4096, 256, S) };
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (1, 3 * 4096));
    fill_and_check(&mr, &[(p, 4096)], 20, 4096);
}

fn arena_64m() -> ArenaMemoryResource<SimulatedMemoryResource> {
    arena_64m_with(false)
}

/// [`arena_64m`] with its frees trusted, not checked.
fn arena_64m_unchecked() -> ArenaMemoryResource<SimulatedMemoryResource> {
    arena_64m_with(true)
}

fn arena_64m_with(unchecked: bool) -> ArenaMemoryResource<SimulatedMemoryResource> {
    let opts = ArenaOptions::default()
        .arena_size(64 * MIB)
        .superblock_size(MIB)
        .unchecked_frees(unchecked);
    ArenaMemoryResource::new(SimulatedMemoryResource::new(GIB), opts).unwrap()
}

#[test]
fn arena_large_double_free_on_two_streams_is_refused() {
    let mr = arena_64m();
    let big = 4 * MIB;
    let p = mr.allocate(big, 256, stream(0)).unwrap();
    let free = mr.free_bytes();
    // SAFETY: allocated above; the second free (on another stream) is the
    // misuse under test.
    unsafe {
        mr.deallocate(p, big, 256, stream(0));
        mr.deallocate(p, big, 256, stream(1));
    }
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (1, free + big));
    // Both streams allocate large blocks: never the same one twice.
    let mut live = Vec::new();
    for i in 0..12 {
        if let Ok(q) = mr.allocate(big, 256, stream(i % 2)) {
            live.push((q, big));
        }
    }
    assert_disjoint(&live);
}

/// The block a stream frees last comes back to its next allocation of the
/// same size, with a record that skips the hash table: it is still checked
/// like any other (wrong size, double free, a free on another stream, a
/// duplicate after it was displaced into the table), and every byte comes
/// back.
#[test]
fn arena_unchecked_frees_still_serve_and_reuse_the_last_block() {
    let mr = arena_64m_unchecked();
    let all = mr.free_bytes();
    let p = mr.allocate(1000, 256, S).unwrap();
    let q = mr.allocate(1000, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe {
        mr.deallocate(p, 1000, 256, S);
        mr.deallocate(q, 1000, 256, S);
    }
    // Unchecked frees are stashed too: the block freed last comes back,
    // not the lowest free address (where `p` merged with `q`'s space).
    let q = mr.allocate(1000, 256, S).unwrap();
    let r = mr.allocate(1000, 256, S).unwrap();
    assert!(q > p, "the stashed block, not the best fit");
    assert_eq!(r, p);
    fill_and_check(&mr, &[(q, 1000), (r, 1000)], 3000, 1000);
    // SAFETY: allocated above with these arguments.
    unsafe {
        mr.deallocate(q, 1000, 256, S);
        mr.deallocate(r, 1000, 256, S);
    }
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (0, all));
}

/// Unchecked, a double free is trusted and stashed; the block stashed
/// before it overlaps free memory when the next free merges it, and is
/// reported and dropped there, so nothing is handed out twice.
#[test]
fn arena_unchecked_double_free_is_dropped_when_its_stash_is_merged() {
    let mr = arena_64m_unchecked();
    let all = mr.free_bytes();
    let a = mr.allocate(1000, 256, S).unwrap();
    let b = mr.allocate(1000, 256, S).unwrap();
    let c = mr.allocate(1000, 256, S).unwrap();
    let before = errors();
    // SAFETY: allocated above; the second free of `a` is the misuse under
    // test, which unchecked frees trust.
    unsafe {
        mr.deallocate(a, 1000, 256, S);
        mr.deallocate(b, 1000, 256, S);
        mr.deallocate(a, 1000, 256, S);
        mr.deallocate(c, 1000, 256, S);
    }
    assert_eq!(errors() - before, 1, "the stashed double free is reported once");
    assert_eq!(mr.free_bytes(), all);
    fill_and_check(&mr, &[], 3000, 1000);
    assert_eq!(mr.free_bytes(), all);
}

#[test]
fn arena_block_taken_back_from_the_stash_is_checked() {
    let mr = arena_64m();
    let all = mr.free_bytes();
    let p = mr.allocate(1000, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(p, 1000, 256, S) };
    let q = mr.allocate(1000, 256, S).unwrap();
    assert_eq!(q, p, "the stashed block comes back");
    // SAFETY: the misuse under test (a wrong size), which must be ignored.
    unsafe { mr.deallocate(q, 999, 256, S) };
    assert_eq!(mr.bad_frees(), 1);
    // SAFETY: allocated above; then the misuse under test (a double free).
    unsafe {
        mr.deallocate(q, 1000, 256, S);
        mr.deallocate(q, 1000, 256, S);
    }
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (2, all));
    // Taken back, then freed on another stream: accepted once.
    let r = mr.allocate(1000, 256, S).unwrap();
    assert_eq!(r, p);
    // SAFETY: allocated above; the second free is the misuse under test.
    unsafe {
        mr.deallocate(r, 1000, 256, stream(1));
        mr.deallocate(r, 1000, 256, S);
    }
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (3, all));
    // Two blocks taken back in turn: the first one's record moves into the
    // hash table and is still checked there.
    let a = mr.allocate(4096, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(a, 4096, 256, S) };
    let a = mr.allocate(4096, 256, S).unwrap();
    let b = mr.allocate(2048, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(b, 2048, 256, S) };
    let b2 = mr.allocate(2048, 256, S).unwrap();
    assert_eq!(b2, b);
    // SAFETY: `a` is live with 4096 bytes: a wrong size, then the right
    // free, then a double free (the misuse under test, ignored).
    unsafe {
        mr.deallocate(a, 4000, 256, S);
        mr.deallocate(a, 4096, 256, S);
        mr.deallocate(a, 4096, 256, S);
        mr.deallocate(b2, 2048, 256, S);
    }
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (5, all));
    fill_and_check(&mr, &[], 40, 4096);
}

#[test]
fn arena_large_free_of_fake_pointer_is_refused() {
    let mr = arena_64m();
    let p = mr.allocate(2 * MIB, 256, S).unwrap();
    let free = mr.free_bytes();
    // Inside the arena, 256-aligned, never allocated.
    // SAFETY: the misuse under test, which must be ignored.
    unsafe { mr.deallocate(DevicePtr::new(p.addr() + 8 * MIB as u64), 2 * MIB, 256, S) };
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (1, free));
    fill_and_check(&mr, &[(p, 2 * MIB)], 40, 2 * MIB);
}

#[test]
fn arena_large_free_with_oversized_size_is_refused() {
    let mr = arena_64m();
    let p = mr.allocate(2 * MIB, 256, S).unwrap();
    let q = mr.allocate(2 * MIB, 256, S).unwrap();
    let free = mr.free_bytes();
    // SAFETY: the misuse under test (a larger size), which must be ignored.
    unsafe { mr.deallocate(p, 8 * MIB, 256, S) };
    assert_eq!((mr.bad_frees(), mr.free_bytes()), (1, free));
    fill_and_check(&mr, &[(p, 2 * MIB), (q, 2 * MIB)], 40, 2 * MIB);
}

#[test]
fn limiting_double_free_does_not_lower_the_counter() {
    let sim = SimulatedMemoryResource::new(GIB);
    let mr = LimitingAdaptor::new(sim.clone(), 4096);
    let a = mr.allocate(2048, 256, S).unwrap();
    let b = mr.allocate(2048, 256, S).unwrap();
    // SAFETY: allocated above; the second free is the misuse under test.
    unsafe {
        mr.deallocate(a, 2048, 256, S);
        mr.deallocate(a, 2048, 256, S);
    }
    assert_eq!((mr.allocated_bytes(), mr.bad_frees()), (2048, 1));
    assert_eq!(sim.bad_frees(), 0, "the double free reached the upstream");
    // Live bytes may never exceed the limit.
    assert!(mr.allocate(4096, 256, S).unwrap_err().is_out_of_memory());
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(b, 2048, 256, S) };
    assert_eq!((mr.allocated_bytes(), sim.allocated_bytes()), (0, 0));
}

#[test]
fn statistics_free_with_absurd_size_does_not_panic() {
    let sim = SimulatedMemoryResource::new(GIB);
    let mr = StatisticsAdaptor::new(sim.clone());
    let p = mr.allocate(1000, 256, S).unwrap();
    let before = (mr.bytes_counter(), mr.allocations_counter());
    // SAFETY: the misuse under test (absurd sizes), which must be ignored.
    unsafe {
        mr.deallocate(p, usize::MAX, 256, S);
        mr.deallocate(p, 1 << 63, 256, S);
        mr.deallocate(DevicePtr::new(0x100), usize::MAX, 256, S);
    }
    assert_eq!((mr.bytes_counter(), mr.allocations_counter()), before);
    assert_eq!((mr.bad_frees(), sim.bad_frees()), (3, 0));
    // SAFETY: allocated above with these arguments.
    unsafe { mr.deallocate(p, 1000, 256, S) };
    assert_eq!(mr.bytes_counter().value, 0);
}

#[test]
fn simulated_capacity_near_usize_max_is_safe() {
    for capacity in [usize::MAX, usize::MAX - 255, 1 << 63] {
        let sim = SimulatedMemoryResource::new(capacity);
        for bytes in [usize::MAX, usize::MAX - 300, 1 << 63, 1 << 50] {
            let e = sim.allocate(bytes, 256, S).unwrap_err();
            assert!(e.is_out_of_memory(), "{capacity} {bytes}: {e}");
        }
        // Alignment padding near the top of the range overflows nothing either.
        let e = sim.allocate(usize::MAX - 300, 1 << 62, S).unwrap_err();
        assert!(e.is_out_of_memory(), "{e}");
        let p = sim.allocate(GIB, 256, S).unwrap();
        // SAFETY: allocated above with these arguments.
        unsafe { sim.deallocate(p, GIB, 256, S) };
        assert_eq!((sim.allocated_bytes(), sim.bad_frees()), (0, 0));
    }
}

#[test]
fn simulated_reuses_freed_addresses() {
    // 1 GiB cycles used to exhaust the 128 TiB range after 131072 rounds.
    let sim = SimulatedMemoryResource::new(2 * GIB);
    let first = sim.allocate(GIB, 256, S).unwrap();
    // SAFETY: allocated above with these arguments.
    unsafe { sim.deallocate(first, GIB, 256, S) };
    for round in 0..140_000 {
        let p = sim
            .allocate(GIB, 256, S)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(p, first);
        // SAFETY: allocated above with these arguments.
        unsafe { sim.deallocate(p, GIB, 256, S) };
    }
    // Large alignments: the padding goes back to the free range.
    let a = sim.allocate(1000, 1 << 20, S).unwrap();
    assert!(a.is_aligned(1 << 20));
    // SAFETY: allocated above with these arguments.
    unsafe { sim.deallocate(a, 1000, 1 << 20, S) };
    assert_eq!(sim.allocate(GIB, 256, S).unwrap(), first);
}

#[test]
fn simulated_refuses_double_interior_foreign_and_wrong_size_frees() {
    let sim = SimulatedMemoryResource::new(GIB);
    let p = sim.allocate(4096, 256, S).unwrap();
    // SAFETY: the misuse under test, which must be ignored.
    unsafe {
        sim.deallocate(DevicePtr::new(p.addr() + 256), 256, 256, S);
        sim.deallocate(p, 4095, 256, S);
        sim.deallocate(DevicePtr::new(0x1000), 4096, 256, S);
    }
    assert_eq!((sim.bad_frees(), sim.allocated_bytes()), (3, 4096));
    // SAFETY: allocated above; the second free is the misuse under test.
    unsafe {
        sim.deallocate(p, 4096, 256, S);
        sim.deallocate(p, 4096, 256, S);
    }
    assert_eq!((sim.bad_frees(), sim.allocated_bytes()), (4, 0));
}

#[test]
fn binning_wrong_size_that_picks_another_bin_or_the_upstream_is_refused() {
    let sim = SimulatedMemoryResource::new(GIB);
    let mr = BinningMemoryResource::with_fixed_bins(sim.clone(), 10, 12).unwrap();
    let small = mr.allocate(1000, 256, S).unwrap(); // 1 KiB bin
    let big = mr.allocate(MIB, 256, S).unwrap(); // upstream
    let held = sim.allocated_bytes();
    let e0 = errors();
    // SAFETY: the misuse under test, which must be ignored.
    unsafe {
        mr.deallocate(small, 4000, 256, S); // 4 KiB bin
        mr.deallocate(small, MIB, 256, S); // upstream
        mr.deallocate(big, 1000, 256, S); // 1 KiB bin
        mr.deallocate(big, 2 * MIB, 256, S); // upstream, wrong size
        mr.deallocate(DevicePtr::new(big.addr() + 256), MIB - 256, 256, S); // interior
    }
    assert_eq!(errors() - e0, 5);
    assert_eq!((sim.allocated_bytes(), sim.bad_frees()), (held, 0));
    assert_eq!(mr.bad_frees(), 5, "every refusal is counted here");
    fill_and_check(&mr, &[(small, 1000), (big, MIB)], 200, 1000);
    // SAFETY: allocated above with these arguments.
    unsafe {
        mr.deallocate(small, 1000, 256, S);
        mr.deallocate(big, MIB, 256, S);
    }
    assert_eq!(sim.bad_frees(), 0);
}

// ---------------------------------------------------------------------------
// Concurrent misuse: threads on their own streams, interior and wrong-size
// frees of their own live blocks (always invalid, whatever other threads
// do), every allocation checked against the live blocks of all threads
// ---------------------------------------------------------------------------

fn threads_adversarial(mr: &(dyn MemoryResource + Sync), threads: usize, ops: usize) {
    let all = std::sync::Mutex::new(BTreeMap::<u64, usize>::new());
    std::thread::scope(|scope| {
        for t in 0..threads {
            let all = &all;
            scope.spawn(move || {
                let st = stream(t);
                let mut rng = SplitMix64(500 + t as u64);
                let mut live: Vec<(u64, usize)> = Vec::new();
                for _ in 0..ops {
                    let roll = rng.below(100);
                    if live.is_empty() || roll < 45 {
                        let bytes = 1 + rng.below(64 * KIB);
                        let Ok(p) = mr.allocate(bytes, 256, st) else {
                            continue;
                        };
                        let mut all = all.lock().unwrap();
                        let a = p.addr();
                        if let Some((&b, &n)) = all.range(..=a).next_back() {
                            assert!(b + round(n) as u64 <= a, "{a:#x} overlaps live {b:#x}+{n}");
                        }
                        if let Some((&b, &n)) = all.range(a..).next() {
                            assert!(
                                a + round(bytes) as u64 <= b,
                                "{a:#x}+{bytes} overlaps live {b:#x}+{n}"
                            );
                        }
                        all.insert(a, bytes);
                        live.push((a, bytes));
                    } else if roll < 85 {
                        let (a, bytes) = live.swap_remove(rng.below(live.len()));
                        all.lock().unwrap().remove(&a);
                        // SAFETY: allocated above with these arguments.
                        unsafe { mr.deallocate(DevicePtr::new(a), bytes, 256, st) };
                    } else {
                        let (a, bytes) = live[rng.below(live.len())];
                        let (addr, size) = if bytes > 256 && rng.below(2) == 0 {
                            (a + 256, bytes - 256)
                        } else {
                            (a, bytes + 1 + rng.below(4096))
                        };
                        // SAFETY: the misuse under test (an interior pointer
                        // or a wrong size), which must be ignored.
                        unsafe { mr.deallocate(DevicePtr::new(addr), size, 256, st) };
                    }
                }
                for (a, bytes) in live {
                    all.lock().unwrap().remove(&a);
                    // SAFETY: allocated above with these arguments.
                    unsafe { mr.deallocate(DevicePtr::new(a), bytes, 256, st) };
                }
            });
        }
    });
}

#[test]
fn threads_adversarial_pool_arena_binning_limiting_statistics() {
    let sim = SimulatedMemoryResource::new(64 * GIB);
    {
        let pool = PoolMemoryResource::new(sim.clone(), PoolOptions::default()).unwrap();
        threads_adversarial(&pool, 4, 20_000);
        assert_eq!(pool.free_bytes(), pool.pool_size());
        assert!(pool.bad_frees() > 1000);
    }
    {
        let opts = ArenaOptions::default().arena_size(256 * MIB).superblock_size(MIB);
        let arena = ArenaMemoryResource::new(sim.clone(), opts).unwrap();
        threads_adversarial(&arena, 4, 20_000);
        assert_eq!(arena.free_bytes(), arena.arena_size());
        assert!(arena.bad_frees() > 1000);
    }
    {
        let binning = BinningMemoryResource::with_fixed_bins(sim.clone(), 10, 14).unwrap();
        threads_adversarial(&binning, 4, 20_000);
    }
    {
        let limiting = LimitingAdaptor::new(sim.clone(), 64 * MIB);
        threads_adversarial(&limiting, 4, 20_000);
        assert_eq!(limiting.allocated_bytes(), 0);
        assert!(limiting.bad_frees() > 1000);
    }
    {
        let stats = StatisticsAdaptor::new(sim.clone());
        threads_adversarial(&stats, 4, 20_000);
        assert_eq!(
            (stats.bytes_counter().value, stats.allocations_counter().value),
            (0, 0)
        );
        assert!(stats.bad_frees() > 1000);
    }
    assert_eq!((sim.allocated_bytes(), sim.bad_frees()), (0, 0));
}
