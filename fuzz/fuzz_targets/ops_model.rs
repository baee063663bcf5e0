//! The model and the driver of the `ops` target (see ops.rs).

use std::collections::BTreeMap;

use rmm::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, FixedSizeMemoryResource, FixedSizeOptions,
    MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource,
};
use rmm::{CudaStreamView, DevicePtr};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

/// The input, read a few bytes at a time; zeros once it is used up.
struct Input<'a> {
    data: &'a [u8],
}

impl Input<'_> {
    fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> usize {
        usize::from(self.u8()) | usize::from(self.u8()) << 8
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |v, i| v | u64::from(self.u8()) << (8 * i))
    }
    fn below(&mut self, n: usize) -> usize {
        self.u16() % n.max(1)
    }
    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

// Error-level log records of this thread so far (tests run in parallel).
use rmm_testing::error_log_count as errors;

/// Whether to print every operation (`RMM_FUZZ_TRACE=1`, for reading a
/// crash: `RMM_FUZZ_TRACE=1 bash scripts/fuzz.sh repro ops FILE`).
fn tracing() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("RMM_FUZZ_TRACE").is_some())
}

macro_rules! trace {
    ($($arg:tt)*) => {
        if tracing() {
            eprintln!($($arg)*);
        }
    };
}

fn stream(i: usize) -> CudaStreamView<'static> {
    // SAFETY: simulated resources never pass stream handles to the driver.
    unsafe { CudaStreamView::from_raw(0x1000 + 16 * (i % 4)) }
}

fn round(bytes: usize) -> usize {
    bytes.div_ceil(256) * 256
}

// ---------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------

#[derive(Default)]
struct Model {
    /// Live allocations: address to (requested bytes, alignment).
    live: BTreeMap<u64, (usize, usize)>,
    /// Sum of the live allocations rounded up to 256.
    rounded: usize,
    /// Recently freed allocations, for double frees.
    freed: Vec<(u64, usize)>,
}

impl Model {
    fn check_disjoint(&self, a: u64, bytes: usize) {
        let end = a
            .checked_add(round(bytes) as u64)
            .expect("allocation wraps the address space");
        if let Some((&b, &(n, _))) = self.live.range(..=a).next_back() {
            assert!(
                b + round(n) as u64 <= a,
                "{a:#x}+{bytes} overlaps live {b:#x}+{n}"
            );
        }
        if let Some((&b, &(n, _))) = self.live.range(a..).next() {
            assert!(b >= end, "{a:#x}+{bytes} overlaps live {b:#x}+{n}");
        }
    }
    fn nth(&self, i: usize) -> Option<(u64, usize, usize)> {
        let n = self.live.len();
        (n > 0).then(|| {
            let (&a, &(b, al)) = self.live.iter().nth(i % n).expect("in range");
            (a, b, al)
        })
    }
    fn take(&mut self, a: u64) -> (usize, usize) {
        let (bytes, al) = self.live.remove(&a).expect("model key");
        self.rounded -= round(bytes);
        if self.freed.len() >= 64 {
            self.freed.swap_remove(0);
        }
        self.freed.push((a, bytes));
        (bytes, al)
    }
}

/// The resource under test and what the model may observe of it.
struct Subject<'a> {
    mr: &'a dyn MemoryResource,
    /// Everything a refused free must leave unchanged.
    snapshot: Box<dyn Fn() -> Vec<usize> + 'a>,
    /// The resource's counters against the model.
    consistent: Box<dyn Fn(&Model) + 'a>,
    /// The resource's count of refused frees.
    refused: Box<dyn Fn() -> usize + 'a>,
    /// Live upstream allocations the resource never handed out.
    foreign: &'a [(u64, usize)],
}

/// A request size: mostly small, sometimes large, zero, or beyond any device.
fn size(input: &mut Input<'_>) -> usize {
    let class = input.u8();
    let v = input.u16();
    match class % 8 {
        0 => v % 257,
        1..=3 => 1 + v % (16 * KIB),
        4 => 1 + v * 16,
        5 => 1 + v * 256,
        6 => MIB * (1 + v % 64) + v % 256,
        _ => match v % 4 {
            0 => 0,
            1 => usize::MAX - v,
            2 => usize::MAX / 2 + 1,
            _ => 64 * GIB + v,
        },
    }
}

fn alignment(input: &mut Input<'_>) -> usize {
    [256, 256, 256, 256, 1, 8, 128, 512, 4096, 3, 0, 257][input.below(12)]
}

fn allocate(sub: &Subject<'_>, m: &mut Model, input: &mut Input<'_>) {
    let bytes = size(input);
    let align = alignment(input);
    let st = stream(input.below(4));
    let e0 = errors();
    let result = sub.mr.allocate(bytes, align, st);
    trace!("allocate {bytes} align {align} on {st:?}: {result:?}");
    match result {
        Ok(p) if p.is_null() => assert_eq!(bytes, 0, "a null pointer for {bytes} bytes"),
        Ok(p) => {
            assert!(bytes > 0, "{bytes} bytes gave {p:?}, not null");
            assert!(
                align.is_power_of_two() && p.is_aligned(align.max(256)),
                "{p:?} for alignment {align}"
            );
            m.check_disjoint(p.addr(), bytes);
            m.live.insert(p.addr(), (bytes, align));
            m.rounded += round(bytes);
            assert_eq!(errors(), e0, "a valid allocation logged an error");
        }
        Err(e) => {
            let valid = align.is_power_of_two() && align <= 256;
            assert!(
                !valid || e.is_out_of_memory(),
                "{bytes} bytes, alignment {align}: {e}"
            );
        }
    }
}

fn free(sub: &Subject<'_>, m: &mut Model, input: &mut Input<'_>) {
    let Some((a, _, _)) = m.nth(input.u16()) else {
        return;
    };
    let (bytes, align) = m.take(a);
    let (e0, r0) = (errors(), (sub.refused)());
    let st = stream(input.u8().into());
    trace!("free {a:#x} {bytes} align {align} on {st:?}");
    // SAFETY: simulated memory, allocated by `sub.mr` with these arguments.
    unsafe { sub.mr.deallocate(DevicePtr::new(a), bytes, align, st) };
    assert_eq!(errors(), e0, "a valid free of {a:#x}+{bytes} logged an error");
    assert_eq!((sub.refused)(), r0, "a valid free of {a:#x}+{bytes} was refused");
}

/// An adversarial free the model knows must be refused, if the input and
/// the model give one.
fn pick_bad(
    m: &Model,
    foreign: &[(u64, usize)],
    input: &mut Input<'_>,
) -> Option<(&'static str, u64, usize)> {
    let kind = input.below(5);
    let pick = input.u16();
    let live = m.nth(pick);
    match kind {
        0 => {
            let &(a, b) = m.freed.get(pick % m.freed.len().max(1))?;
            (m.live.get(&a).map(|l| l.0) != Some(b)).then_some(("double free", a, b))
        }
        1 => {
            let addr = match (input.u8() % 2, live) {
                (0, Some((a, _, _))) => a.wrapping_add(256 * (1 + input.u16() as u64)),
                _ => input.u64(),
            };
            let bytes = size(input);
            (addr != 0 && !m.live.contains_key(&addr)).then_some(("never allocated", addr, bytes))
        }
        2 => {
            let (a, b, _) = live?;
            let off = 1 + input.below(round(b).max(2) - 1) as u64;
            let bytes = if input.u8().is_multiple_of(2) {
                b
            } else {
                b.saturating_sub(off as usize)
            };
            Some(("interior", a + off, bytes))
        }
        3 => {
            let (a, b, _) = live?;
            let wrong = match input.u8() % 6 {
                0 => b + 1,
                1 => b - 1,
                2 => b + 256,
                3 => usize::MAX,
                4 => 0,
                _ => size(input),
            };
            (wrong != b).then_some(("wrong size", a, wrong))
        }
        _ => {
            let &(a, b) = foreign.get(pick % foreign.len().max(1))?;
            Some(("foreign", a, b))
        }
    }
}

fn bad_free(sub: &Subject<'_>, m: &Model, input: &mut Input<'_>) {
    let Some((kind, a, bytes)) = pick_bad(m, sub.foreign, input) else {
        return;
    };
    let (before, e0, r0) = ((sub.snapshot)(), errors(), (sub.refused)());
    let st = stream(input.u8().into());
    trace!("{kind} free {a:#x} {bytes} on {st:?}");
    // SAFETY: simulated memory: nothing is touched whatever the resource does
    // with the pointer (and it must ignore it).
    unsafe { sub.mr.deallocate(DevicePtr::new(a), bytes, 256, st) };
    assert!(errors() > e0, "{kind} free of {a:#x}+{bytes} was not logged");
    assert_eq!(
        (sub.refused)(),
        r0 + 1,
        "{kind} free of {a:#x}+{bytes} not counted once"
    );
    assert_eq!(
        (sub.snapshot)(),
        before,
        "{kind} free of {a:#x}+{bytes} changed the resource"
    );
}

/// Runs the operations of `input` against `sub`, then frees what is live.
fn drive(sub: &Subject<'_>, input: &mut Input<'_>) {
    let mut m = Model::default();
    while !input.is_empty() {
        match input.u8() % 6 {
            0..=1 => allocate(sub, &mut m, input),
            2..=3 => free(sub, &mut m, input),
            _ => bad_free(sub, &m, input),
        }
        (sub.consistent)(&m);
    }
    while let Some((a, _, _)) = m.nth(0) {
        let (bytes, align) = m.take(a);
        // SAFETY: allocated by `sub.mr` with these arguments.
        unsafe { sub.mr.deallocate(DevicePtr::new(a), bytes, align, stream(0)) };
        (sub.consistent)(&m);
    }
}

/// Runs one input: builds the resource its first bytes name, drives it,
/// and checks the upstream after the resource is gone.
pub fn run(data: &[u8]) {
    let mut input = Input { data };
    let which = input.u8() % 4;
    let capacity = [64 * GIB, 256 * MIB, 16 * MIB, 4 * GIB][input.below(4)];
    let sim = SimulatedMemoryResource::new(capacity);
    let foreign: Vec<(u64, usize)> = (0..2)
        .filter_map(|i| {
            let b = 1000 + i * 4096;
            sim.allocate(b, 256, CudaStreamView::DEFAULT)
                .ok()
                .map(|p| (p.addr(), b))
        })
        .collect();
    let held = sim.allocated_bytes();
    match which {
        0 => run_pool(&sim, &foreign, &mut input),
        1 => run_fixed_size(&sim, &foreign, &mut input),
        2 => run_binning(&sim, &foreign, &mut input),
        _ => run_arena(&sim, &foreign, &mut input),
    }
    assert_eq!(
        sim.allocated_bytes(),
        held,
        "the resource, dropped, left memory in the upstream"
    );
    assert_eq!(sim.bad_frees(), 0, "a bad free reached the upstream");
    for &(a, b) in &foreign {
        // SAFETY: allocated from `sim` with these arguments.
        unsafe { sim.deallocate(DevicePtr::new(a), b, 256, CudaStreamView::DEFAULT) };
    }
    assert_eq!(sim.allocated_bytes(), 0);
}

fn run_pool(sim: &SimulatedMemoryResource, foreign: &[(u64, usize)], input: &mut Input<'_>) {
    let mut opts = PoolOptions::default().initial_pool_size(256 * input.u16());
    if input.u8() % 2 == 1 {
        opts = opts.maximum_pool_size(256 * input.u16() * 64);
    }
    let pool = PoolMemoryResource::new(sim.clone(), opts);
    trace!("pool {opts:?}: {pool:?}");
    let Ok(pool) = pool else {
        return;
    };
    let sub = Subject {
        mr: &pool,
        snapshot: Box::new(|| vec![pool.free_bytes(), pool.pool_size(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (free, size) = (pool.free_bytes(), pool.pool_size());
            assert_eq!(
                free + m.rounded,
                size,
                "free {free} + live {} != pool size {size}",
                m.rounded
            );
        }),
        refused: Box::new(|| pool.bad_frees()),
        foreign,
    };
    drive(&sub, input);
}

fn run_fixed_size(sim: &SimulatedMemoryResource, foreign: &[(u64, usize)], input: &mut Input<'_>) {
    let opts = FixedSizeOptions::default()
        .block_size(input.u16())
        .blocks_to_preallocate(input.below(300));
    let mr = FixedSizeMemoryResource::new(sim.clone(), opts);
    trace!("fixed size {opts:?}: {mr:?}");
    let Ok(mr) = mr else {
        return;
    };
    let sub = Subject {
        mr: &mr,
        snapshot: Box::new(|| vec![mr.free_bytes(), mr.pool_size(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (free, size, block) = (mr.free_bytes(), mr.pool_size(), round(opts.block_size));
            let live = m.live.len() * block;
            assert_eq!(
                free + live,
                size,
                "free {free} + {} live blocks != pool size {size}",
                m.live.len()
            );
        }),
        refused: Box::new(|| mr.bad_frees()),
        foreign,
    };
    drive(&sub, input);
}

fn run_binning(sim: &SimulatedMemoryResource, foreign: &[(u64, usize)], input: &mut Input<'_>) {
    let held = sim.allocated_bytes();
    let (min_exp, max_exp) = (u32::from(input.u8() % 32), u32::from(input.u8() % 32));
    let mr = BinningMemoryResource::with_fixed_bins(sim.clone(), min_exp, max_exp);
    trace!("binning 2^{min_exp}..=2^{max_exp}: {}", mr.is_ok());
    let Ok(mut mr) = mr else {
        return;
    };
    if input.u8() % 2 == 1 {
        match mr.with_cache_budget(256 * input.u16()) {
            Ok(m) => mr = m,
            Err(_) => return,
        }
    }
    let sub = Subject {
        mr: &mr,
        snapshot: Box::new(|| vec![sim.allocated_bytes(), sim.live_allocations(), mr.cached_bytes()]),
        // Bins hand out blocks of upstream chunks, larger requests go to the
        // upstream whole: it holds at least what is live.
        consistent: Box::new(|m| {
            let upstream = sim.allocated_bytes() - held;
            assert!(
                upstream >= m.rounded,
                "upstream holds {upstream} < live {}",
                m.rounded
            );
        }),
        refused: Box::new(|| mr.bad_frees()),
        foreign,
    };
    drive(&sub, input);
}

fn run_arena(sim: &SimulatedMemoryResource, foreign: &[(u64, usize)], input: &mut Input<'_>) {
    let arena = MIB / 2 + 256 * input.u16() * 16;
    let superblock = [MIB, 2 * MIB, MIB + 256, 4 * MIB, MIB / 2, 3 * MIB + 512][input.below(6)];
    let opts = ArenaOptions::default()
        .arena_size(arena)
        .superblock_size(superblock);
    let mr = ArenaMemoryResource::new(sim.clone(), opts);
    trace!("arena {opts:?}: {mr:?}");
    let Ok(mr) = mr else {
        return;
    };
    let sub = Subject {
        mr: &mr,
        snapshot: Box::new(|| vec![mr.free_bytes(), sim.allocated_bytes()]),
        consistent: Box::new(|m| {
            let (free, size) = (mr.free_bytes(), mr.arena_size());
            assert_eq!(
                free + m.rounded,
                size,
                "free {free} + live {} != arena size {size}",
                m.rounded
            );
        }),
        refused: Box::new(|| mr.bad_frees()),
        foreign,
    };
    drive(&sub, input);
}
