//! Device algorithms on spans of containers: spans of simulated memory (and
//! policies over a simulated resource) are refused before any GPU work (CPU
//! tests), and kernels on a policy stream are ordered after the container's
//! own stream and before its later work (GPU tests).

use rmm::exec_policy::ExecPolicy;
use rmm::mr::{CudaMemoryResource, SimulatedMemoryResource};
use rmm::{CudaStream, CudaStreamView, DeviceUvector, Error};
use rmm_suite::sort::{sort_keys, sort_keys_copy, sort_pairs, sort_pairs_copy, Order};
use rmm_suite::{reduce, scan, sequence};

fn fake_stream(i: usize) -> CudaStreamView<'static> {
    // SAFETY: only used with simulated resources, which never touch streams.
    unsafe { CudaStreamView::from_raw(0x1000 + 16 * i) }
}

fn refused<R: std::fmt::Debug>(what: &str, r: rmm::Result<R>) {
    match r {
        Err(Error::InvalidArgument(m)) if m.contains("simulated") => {}
        other => panic!("{what}: expected a refusal naming simulated memory, got {other:?}"),
    }
}

#[test]
fn spans_of_simulated_memory_are_refused_by_every_algorithm() {
    let sim = SimulatedMemoryResource::new(1 << 24);
    let s = fake_stream(1);
    let a = DeviceUvector::<u32>::with_resource(100, s, sim.clone()).unwrap();
    let mut b = DeviceUvector::<u32>::with_resource(100, s, sim.clone()).unwrap();
    let mut c = DeviceUvector::<u32>::with_resource(100, s, sim.clone()).unwrap();
    let mut d = DeviceUvector::<u32>::with_resource(100, s, sim.clone()).unwrap();
    assert!(a.as_span().info().simulated);
    assert_eq!(a.as_span().info().stream, Some(s));
    // With a policy over a real resource (never reached: simulated spans are
    // refused before the policy's resource or the driver is used), and with
    // one over the simulated resource on the vectors' own stream.
    let policies = [
        ExecPolicy::new(fake_stream(2), CudaMemoryResource::new()),
        ExecPolicy::new(s, sim.clone()),
    ];
    for policy in &policies {
        refused("sequence", sequence::sequence(b.as_span_mut(), 0u32, 1, policy));
        refused("sum", reduce::sum(a.as_span(), policy));
        refused("min", reduce::min(a.as_span(), policy));
        refused("max", reduce::max(a.as_span(), policy));
        refused("scan", scan::exclusive_scan(a.as_span(), b.as_span_mut(), policy));
        refused(
            "scan in place",
            scan::exclusive_scan_in_place(b.as_span_mut(), policy),
        );
        refused(
            "inclusive scan",
            scan::inclusive_scan(a.as_span(), b.as_span_mut(), policy),
        );
        refused(
            "inclusive scan in place",
            scan::inclusive_scan_in_place(b.as_span_mut(), policy),
        );
        refused("sort_keys", sort_keys(b.as_span_mut(), Order::Ascending, policy));
        refused(
            "sort_keys_copy",
            sort_keys_copy(a.as_span(), b.as_span_mut(), Order::Ascending, policy),
        );
        refused(
            "sort_pairs",
            sort_pairs(b.as_span_mut(), c.as_span_mut(), Order::Descending, policy),
        );
        refused(
            "sort_pairs_copy",
            sort_pairs_copy(
                a.as_span(),
                b.as_span(),
                c.as_span_mut(),
                d.as_span_mut(),
                Order::Ascending,
                policy,
            ),
        );
    }
    // Nothing was allocated for scratch: the refusal comes first.
    assert_eq!(sim.live_allocations(), 4);
    // Sub-spans keep what they came from.
    let sub = a.as_span().subspan(10..20).unwrap();
    assert!(sub.info().simulated);
    refused("sum of a subspan", reduce::sum(sub, &policies[0]));
}

/// The same refusal through the policy: real-looking spans (made from raw
/// parts) with a policy over a simulated resource, whose scratch memory
/// the kernels would write.
#[test]
fn a_policy_over_a_simulated_resource_is_refused() {
    let policy = ExecPolicy::new(CudaStreamView::DEFAULT, SimulatedMemoryResource::new(1 << 20));
    // SAFETY: never dereferenced: the call is refused before any GPU work.
    let span = unsafe { rmm::DeviceSpan::<u64>::from_raw_parts(rmm::DevicePtr::new(1 << 40), 10) };
    refused("sum", reduce::sum(span, &policy));
    let e = policy
        .launch_ordered("custom", &[span.info()], |_| Ok(()))
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("custom")),
        "{e:?}"
    );
}

/// A vector written on its own stream and reduced on another: the policy's
/// stream waits for the vector's (an event), so the sum sees every write;
/// the vector's stream then waits for the kernels before its later work.
#[test]
fn kernels_on_a_policy_stream_are_ordered_after_the_containers_stream() {
    rmm_testing::require_gpu!();
    let owner = CudaStream::non_blocking().unwrap();
    let other = CudaStream::non_blocking().unwrap();
    let n = 1 << 22;
    let mut v = DeviceUvector::<u64>::with_resource(n, owner.view(), CudaMemoryResource::new()).unwrap();
    let policy = ExecPolicy::new(other.view(), CudaMemoryResource::new());
    for round in 0..4u64 {
        // Asynchronous writes on the vector's stream...
        rmm_suite::containers::fill(&mut v, round + 1, owner.view()).unwrap();
        // ...then a reduction on the policy's stream, with no host sync between.
        let total = reduce::sum(v.as_span(), &policy).unwrap();
        assert_eq!(total, (round + 1) * n as u64, "round {round}");
        // A sequence on the policy stream, then a read on the owner's stream.
        sequence::sequence(v.as_span_mut(), 0u64, 1, &policy).unwrap();
        let last = v.element(n - 1, owner.view()).unwrap();
        assert_eq!(last, n as u64 - 1, "round {round}");
    }
}
