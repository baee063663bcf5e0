//! A dry run makes no driver call: every launcher with a policy runs in a
//! dry run over simulated memory, with the sizing helpers, and afterwards
//! this process has never called into the CUDA driver
//! ([`rmm::device::driver_called`]). One test in a process of its own, so
//! that nothing else calls the driver first; it means the same with or
//! without a GPU.

use std::sync::OnceLock;

use rmm::dry_run::DryRun;
use rmm::exec_policy::ExecPolicy;
use rmm::mr::{SimulatedMemoryResource, StatisticsAdaptor};
use rmm::{CudaStreamView, DevicePod, DeviceUvector, Result};
use rmm_suite::scan::{exclusive_scan, exclusive_scan_in_place, inclusive_scan, inclusive_scan_in_place};
use rmm_suite::sort::{sort_keys, sort_keys_copy, sort_pairs, sort_pairs_copy, Order};
use rmm_suite::{reduce, sequence::sequence};

fn simulated<T: DevicePod>(n: usize) -> DeviceUvector<T> {
    // One simulated device for every container, so that they never overlap.
    static DATA: OnceLock<SimulatedMemoryResource> = OnceLock::new();
    let data = DATA.get_or_init(|| SimulatedMemoryResource::new(usize::MAX));
    DeviceUvector::with_resource(n, CudaStreamView::DEFAULT, data.clone()).unwrap()
}

/// Every launcher that takes a policy, once, on `n` elements.
fn every_launcher(n: usize, policy: &ExecPolicy) -> Result<()> {
    let (mut a, mut b) = (simulated::<u32>(n), simulated::<u32>(n));
    let (mut c, mut d) = (simulated::<u32>(n), simulated::<u32>(n));
    let (x, mut y) = (simulated::<f64>(n), simulated::<f64>(n));
    let mut one = simulated::<f64>(1);
    sequence(a.as_span_mut(), 7, 3, policy)?;
    sort_keys(a.as_span_mut(), Order::Ascending, policy)?;
    sort_keys_copy(x.as_span(), y.as_span_mut(), Order::Descending, policy)?;
    sort_pairs(a.as_span_mut(), b.as_span_mut(), Order::Ascending, policy)?;
    sort_pairs_copy(
        a.as_span(),
        b.as_span(),
        c.as_span_mut(),
        d.as_span_mut(),
        Order::Descending,
        policy,
    )?;
    exclusive_scan(a.as_span(), b.as_span_mut(), policy)?;
    inclusive_scan(x.as_span(), y.as_span_mut(), policy)?;
    exclusive_scan_in_place(c.as_span_mut(), policy)?;
    inclusive_scan_in_place(y.as_span_mut(), policy)?;
    assert_eq!(reduce::sum(a.as_span(), policy)?, 0);
    assert_eq!(reduce::min(x.as_span(), policy)?, Some(0.0));
    reduce::max(x.as_span(), policy)?;
    reduce::sum_into(x.as_span(), one.as_span_mut(), policy)?;
    reduce::min_into(x.as_span(), one.as_span_mut(), policy)?;
    reduce::max_into(x.as_span(), one.as_span_mut(), policy)
}

#[test]
fn a_dry_run_never_calls_the_driver() {
    assert!(!rmm::device::driver_called(), "nothing has called the driver yet");
    let stats = StatisticsAdaptor::new(SimulatedMemoryResource::new(usize::MAX));
    for n in [1usize, 5000, 1 << 20, 1 << 30] {
        every_launcher(n, &ExecPolicy::dry_run(stats.clone())).unwrap();
    }
    // A stream handle that is not the default one: a dry run never hands it
    // to the driver (a real reduction would ask for its capture status).
    // SAFETY: the handle is only passed to simulated resources, never to
    // the driver, which is what this test checks.
    let stream = unsafe { CudaStreamView::from_raw(0x5eed) };
    let on_stream = ExecPolicy::new(stream, stats.clone()).with_dry_run(DryRun::default());
    every_launcher(1 << 16, &on_stream).unwrap();
    let counted = stats.allocations_counter().total;
    // Per run: 4 + 4 + 5 + 5 for the sorts, 1 per scan and per reduction.
    assert_eq!(
        counted,
        5 * (18 + 4 + 6),
        "every sort, scan and reduction took its scratch"
    );
    assert_eq!(stats.bytes_counter().value, 0, "and gave it back");

    let report = DryRun::default().report(|p| every_launcher(1 << 24, p)).unwrap();
    assert!(report.smallest_pool_bytes >= report.peak_scratch_bytes);
    assert!(report.peak_scratch_bytes >= 8 << 24, "a sort's alternate buffers");
    assert!(!rmm::device::driver_called(), "a dry run called the CUDA driver");
}
