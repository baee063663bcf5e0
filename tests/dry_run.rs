//! Dry runs of the launchers (`rmm::dry_run`): the scratch a dry run takes
//! against the launchers' own `scratch_bytes` and against a pool, the
//! refusal of simulated memory outside a dry run, and (on a GPU) the dry
//! run's peak against the peak measured on the device.
//!
//! That a dry run makes no driver call is `tests/dry_run_no_driver.rs` (a
//! process of its own: the test here that asks for a GPU calls the driver).

use std::sync::{Arc, Mutex, OnceLock};

use rmm::align::align_up;
use rmm::dry_run::DryRun;
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{
    CallbackMemoryResource, CudaMemoryResource, MemoryResource, PoolMemoryResource, PoolOptions,
    SimulatedMemoryResource, StatisticsAdaptor,
};
use rmm::{CudaStream, CudaStreamView, DevicePod, DeviceUvector, Error, Result};
use rmm_suite::scan::{exclusive_scan, inclusive_scan_in_place};
use rmm_suite::sort::{sort_keys, sort_keys_copy, sort_pairs, sort_pairs_copy, Order};
use rmm_suite::{reduce, scan, sort};

/// Sizes from one element to 2^30 (past a sort portion and a scan grid of
/// one wave), all in simulated memory.
const SIZES: [usize; 8] = [
    1,
    1000,
    6145,
    1 << 16,
    (1 << 20) + 3,
    1 << 24,
    (1 << 26) + 7,
    1 << 30,
];

/// `n` uninitialised elements of simulated memory (addresses only).
fn simulated<T: DevicePod>(n: usize) -> DeviceUvector<T> {
    // One simulated device for every container, so that they never overlap.
    static DATA: OnceLock<SimulatedMemoryResource> = OnceLock::new();
    let data = DATA.get_or_init(|| SimulatedMemoryResource::new(usize::MAX));
    DeviceUvector::with_resource(n, CudaStreamView::DEFAULT, data.clone()).unwrap()
}

/// The scratch events of one call: `(+bytes)` for an allocation, `(-bytes)`
/// for a free, in order.
type Events = Arc<Mutex<Vec<i64>>>;

/// A dry-run policy over a simulated device that records every scratch
/// allocation and free.
fn recording_policy() -> (ExecPolicy, Events) {
    let device = SimulatedMemoryResource::new(usize::MAX);
    let events: Events = Arc::default();
    let (d1, d2, e1, e2) = (device.clone(), device, events.clone(), events.clone());
    let mr = CallbackMemoryResource::new(
        move |bytes, align, s| {
            e1.lock().unwrap().push(bytes as i64);
            d1.allocate(bytes, align, s)
        },
        move |p, bytes, align, s| {
            e2.lock().unwrap().push(-(bytes as i64));
            // SAFETY: forwarded from the callback resource's contract.
            unsafe { d2.deallocate(p, bytes, align, s) }
        },
    )
    .without_gpu();
    (ExecPolicy::dry_run(mr), events)
}

/// Runs `work` under a recording dry-run policy and checks that its scratch
/// is stack-like (every allocation first, then frees in reverse order);
/// returns the allocation sizes.
fn scratch_of(work: impl FnOnce(&ExecPolicy) -> Result<()>) -> Vec<usize> {
    let (policy, events) = recording_policy();
    work(&policy).unwrap();
    let events = events.lock().unwrap().clone();
    let sizes: Vec<usize> = events
        .iter()
        .take_while(|&&e| e > 0)
        .map(|&e| e as usize)
        .collect();
    let frees: Vec<usize> = events[sizes.len()..].iter().map(|&e| (-e) as usize).collect();
    let mut reversed = sizes.clone();
    reversed.reverse();
    assert_eq!(
        frees, reversed,
        "frees in reverse order of the allocations: {events:?}"
    );
    sizes
}

#[test]
fn sort_scratch_matches_its_scratch_bytes() {
    for n in SIZES {
        let mut keys = simulated::<u32>(n);
        let mut vals = simulated::<u32>(n);
        let sizes = scratch_of(|p| sort_keys(keys.as_span_mut(), Order::Ascending, p));
        assert_eq!(sizes.len(), 4, "keys, counts, positions, state");
        assert_eq!(sizes[0], 4 * n, "the alternate keys");
        assert_eq!(
            sizes.iter().sum::<usize>(),
            sort::scratch_bytes::<u32>(n, false),
            "{n}"
        );
        let peak = DryRun::default()
            .peak_scratch(|p| sort_keys(keys.as_span_mut(), Order::Descending, p))
            .unwrap();
        assert_eq!(peak, sort::scratch_bytes::<u32>(n, false), "{n}");

        let sizes = scratch_of(|p| sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p));
        assert_eq!(sizes.len(), 5, "keys, values, counts, positions, state");
        assert_eq!(sizes[..2], [4 * n, 4 * n]);
        let peak = DryRun::default()
            .peak_scratch(|p| sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p))
            .unwrap();
        assert_eq!(peak, sort::scratch_bytes::<u32>(n, true), "{n}");
        assert_eq!(peak, sizes.iter().sum::<usize>());
    }
}

#[test]
fn wide_and_copying_sorts_match_their_scratch_bytes() {
    for n in [1000usize, 1 << 20, (1 << 28) + 1] {
        let (input, mut output) = (simulated::<f64>(n), simulated::<f64>(n));
        let peak = DryRun::default()
            .peak_scratch(|p| sort_keys_copy(input.as_span(), output.as_span_mut(), Order::Ascending, p))
            .unwrap();
        assert_eq!(peak, sort::scratch_bytes::<f64>(n, false), "{n}");
        assert!(peak >= 8 * n);
        let (keys, vals) = (simulated::<i64>(n), simulated::<u32>(n));
        let (mut keys_out, mut vals_out) = (simulated::<i64>(n), simulated::<u32>(n));
        let sizes = scratch_of(|p| {
            sort_pairs_copy(
                keys.as_span(),
                vals.as_span(),
                keys_out.as_span_mut(),
                vals_out.as_span_mut(),
                Order::Descending,
                p,
            )
        });
        assert_eq!(sizes[..2], [8 * n, 4 * n]);
        assert_eq!(
            sizes.iter().sum::<usize>(),
            sort::scratch_bytes::<i64>(n, true),
            "{n}"
        );
    }
}

#[test]
fn scan_and_reduce_scratch_match_their_scratch_bytes() {
    for n in SIZES {
        let (input, mut output) = (simulated::<u32>(n), simulated::<u32>(n));
        let sizes = scratch_of(|p| exclusive_scan(input.as_span(), output.as_span_mut(), p));
        assert_eq!(sizes, [scan::scratch_bytes::<u32>(n)], "{n}");
        let mut wide = simulated::<f64>(n);
        let peak = DryRun::default()
            .peak_scratch(|p| inclusive_scan_in_place(wide.as_span_mut(), p))
            .unwrap();
        assert_eq!(peak, scan::scratch_bytes::<f64>(n), "{n}");

        for multiprocessors in [1, 132] {
            let dry = DryRun::default().with_multiprocessors(multiprocessors);
            let peak = dry
                .peak_scratch(|p| reduce::sum(input.as_span(), p).map(drop))
                .unwrap();
            assert_eq!(peak, reduce::scratch_bytes::<u32>(n, multiprocessors), "{n}");
            let mut out = simulated::<f64>(1);
            let peak = dry
                .peak_scratch(|p| reduce::max_into(wide.as_span(), out.as_span_mut(), p))
                .unwrap();
            assert_eq!(peak, reduce::scratch_bytes::<f64>(n, multiprocessors), "{n}");
        }
    }
}

#[test]
fn dry_run_reductions_compute_nothing() {
    let v = simulated::<i32>(1 << 20);
    let policy = ExecPolicy::dry_run(SimulatedMemoryResource::new(1 << 20));
    assert_eq!(reduce::sum(v.as_span(), &policy).unwrap(), 0);
    assert_eq!(reduce::min(v.as_span(), &policy).unwrap(), Some(0));
    let empty = simulated::<i32>(0);
    assert_eq!(reduce::max(empty.as_span(), &policy).unwrap(), None);
}

/// Whether `work` runs with its scratch from a pool of exactly `bytes` over
/// a simulated device (the pool cannot grow).
fn fits_in_pool(bytes: usize, work: impl FnOnce(&ExecPolicy) -> Result<()>) -> bool {
    let options = PoolOptions::default()
        .initial_pool_size(bytes)
        .maximum_pool_size(bytes);
    let pool = PoolMemoryResource::new(SimulatedMemoryResource::new(bytes), options).unwrap();
    match work(&ExecPolicy::dry_run(pool)) {
        Ok(()) => true,
        Err(e) if e.is_out_of_memory() => false,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn smallest_pool_is_the_blocks_rounded_to_256_and_one_step_less_fails() {
    for n in SIZES {
        let mut keys = simulated::<u32>(n);
        let mut vals = simulated::<u32>(n);
        let sizes = scratch_of(|p| sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p));
        let blocks: usize = sizes.iter().map(|&b| align_up(b, 256).unwrap()).sum();
        let report = DryRun::default()
            .report(|p| sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p))
            .unwrap();
        assert_eq!(report.peak_scratch_bytes, sizes.iter().sum::<usize>());
        assert_eq!(report.scratch_allocations, 5);
        assert_eq!(
            report.smallest_pool_bytes, blocks,
            "{n}: the pool rounds each block to 256"
        );
        let sort = |p: &ExecPolicy| sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p);
        assert!(fits_in_pool(blocks, sort));
        let sort = |p: &ExecPolicy| sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p);
        assert!(!fits_in_pool(blocks - 256, sort));

        let (input, mut output) = (simulated::<u32>(n), simulated::<u32>(n));
        let pool = DryRun::default()
            .smallest_pool(|p| exclusive_scan(input.as_span(), output.as_span_mut(), p))
            .unwrap();
        assert_eq!(pool, align_up(scan::scratch_bytes::<u32>(n), 256).unwrap());
    }
}

#[test]
fn work_without_scratch_fits_an_empty_pool_and_errors_pass_through() {
    let mut v = simulated::<u64>(1 << 20);
    let report = DryRun::default()
        .report(|p| rmm_suite::sequence::sequence(v.as_span_mut(), 1, 2, p))
        .unwrap();
    assert_eq!(report, rmm::dry_run::ScratchReport::default());
    let e = DryRun::default()
        .smallest_pool(|_| Err(Error::Logic("not memory".into())))
        .unwrap_err();
    assert!(matches!(e, Error::Logic(_)), "{e:?}");
}

#[test]
fn a_dry_run_on_a_small_device_reports_out_of_memory() {
    let mut keys = simulated::<u32>(1 << 20);
    let policy = ExecPolicy::dry_run(SimulatedMemoryResource::new(1 << 20));
    let e = sort_keys(keys.as_span_mut(), Order::Ascending, &policy).unwrap_err();
    assert!(e.is_out_of_memory(), "{e:?}");
}

#[test]
fn outside_a_dry_run_simulated_memory_is_refused() {
    let mut keys = simulated::<u32>(1000);
    let mut vals = simulated::<u32>(1000);
    let refused = |e: Error| matches!(&e, Error::InvalidArgument(m) if m.contains("simulated"));
    let sim = SimulatedMemoryResource::new(1 << 30);
    let policies = [
        // Simulated spans, simulated scratch.
        ExecPolicy::new(CudaStreamView::DEFAULT, sim.clone()),
        // Simulated spans, a real resource (refused before it is used).
        ExecPolicy::new(CudaStreamView::DEFAULT, CudaMemoryResource::new()),
    ];
    for policy in &policies {
        assert!(!policy.is_dry_run());
        let e = sort_keys(keys.as_span_mut(), Order::Ascending, policy).unwrap_err();
        assert!(refused(e));
        let e = sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, policy).unwrap_err();
        assert!(refused(e));
        let e = exclusive_scan(keys.as_span(), vals.as_span_mut(), policy).unwrap_err();
        assert!(refused(e));
        assert!(refused(reduce::sum(keys.as_span(), policy).unwrap_err()));
        let e = rmm_suite::sequence::sequence(keys.as_span_mut(), 0, 1, policy).unwrap_err();
        assert!(refused(e));
    }
    assert_eq!(
        (sim.allocated_bytes(), sim.peak_bytes()),
        (0, 0),
        "refused before any scratch"
    );
}

/// `n` elements of real device memory holding `0, 1, ...` (reversed for
/// keys, so the sort moves them).
fn device_sequence(n: usize, descending: bool, policy: &ExecPolicy) -> DeviceUvector<u32> {
    let mut v = DeviceUvector::<u32>::with_resource(n, policy.stream(), CudaMemoryResource::new()).unwrap();
    let (init, step) = if descending {
        (n as u32 - 1, u32::MAX)
    } else {
        (0, 1)
    };
    rmm_suite::sequence::sequence(v.as_span_mut(), init, step, policy).unwrap();
    v
}

/// The peak of `work` on the GPU, its scratch through a statistics adaptor
/// over cudaMalloc.
fn gpu_peak(stream: &CudaStream, work: impl FnOnce(&ExecPolicy) -> Result<()>) -> (usize, usize) {
    let stats = StatisticsAdaptor::new(CudaMemoryResource::new());
    let policy = ExecPolicy::new(stream.view(), stats.clone());
    work(&policy).unwrap();
    stream.synchronize().unwrap();
    let (bytes, allocations) = (stats.bytes_counter(), stats.allocations_counter());
    assert_eq!(bytes.value, 0, "every scratch allocation freed");
    (bytes.peak as usize, allocations.total as usize)
}

#[test]
fn dry_run_peak_equals_the_gpu_peak_at_2_pow_20() {
    rmm_testing::require_gpu!();
    let n = 1 << 20;
    let stream = CudaStream::new().unwrap();
    let plain = ExecPolicy::new(stream.view(), CudaMemoryResource::new());
    let mut keys = device_sequence(n, true, &plain);
    let mut vals = device_sequence(n, false, &plain);
    let mut out = device_sequence(n, false, &plain);
    let (mut sim_keys, mut sim_vals, mut sim_out) =
        (simulated::<u32>(n), simulated::<u32>(n), simulated::<u32>(n));
    let dry = DryRun::default();

    let on_gpu = gpu_peak(&stream, |p| sort_keys(keys.as_span_mut(), Order::Ascending, p));
    let report = dry
        .report(|p| sort_keys(sim_keys.as_span_mut(), Order::Ascending, p))
        .unwrap();
    assert_eq!(
        on_gpu,
        (report.peak_scratch_bytes, report.scratch_allocations),
        "sort keys"
    );

    let on_gpu = gpu_peak(&stream, |p| {
        sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, p)
    });
    let report = dry
        .report(|p| {
            sort_pairs(
                sim_keys.as_span_mut(),
                sim_vals.as_span_mut(),
                Order::Ascending,
                p,
            )
        })
        .unwrap();
    assert_eq!(
        on_gpu,
        (report.peak_scratch_bytes, report.scratch_allocations),
        "sort pairs"
    );

    let on_gpu = gpu_peak(&stream, |p| exclusive_scan(vals.as_span(), out.as_span_mut(), p));
    let report = dry
        .report(|p| exclusive_scan(sim_vals.as_span(), sim_out.as_span_mut(), p))
        .unwrap();
    assert_eq!(
        on_gpu,
        (report.peak_scratch_bytes, report.scratch_allocations),
        "scan"
    );

    // The sort really ran: keys were n-1 .. 0.
    let sorted = keys.copy_to_host(stream.view()).unwrap();
    assert!(sorted.iter().enumerate().all(|(i, &k)| k == i as u32));
}
