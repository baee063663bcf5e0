//! Fault injection for tests (feature `fault-injection`, off by default).
//!
//! Two ways to make a failure happen where a real one could:
//!
//! | what fails | how | where |
//! |---|---|---|
//! | a raw CUDA driver call, *before* it is made | [`DriverFaults::inject`] with a [`FaultPlan`] | every `cu*` call of the crate's driver layer |
//! | an upstream resource's `allocate` | [`FaultyResource`] around any [`MemoryResource`](crate::mr::MemoryResource) | under a pool, an adaptor, a stack |
//!
//! Both pick the failing calls with the same [`Trigger`]: every call, the
//! Nth call only, every Nth call, or a seeded rate (the same seed fails the
//! same calls). A driver fault is selected by the call's name, as the
//! driver layer reports it in [`Error::Cuda`](crate::Error::Cuda)'s `call`
//! (`"cuMemAlloc"` also matches `"cuMemAlloc_v2"`, never
//! `"cuMemAllocManaged"`), and fails with a realistic status
//! ([`InjectedError`]: out-of-memory for allocations, `CUDA_ERROR_UNKNOWN`
//! otherwise, or the one chosen). A faulted call is never made, so it can
//! never leak what a real success would have returned.
//!
//! Injection is scoped: the [`DriverFaults`] guard removes its plan when
//! dropped. A plan applies to the thread that made it unless it is
//! [`process_wide`](FaultPlan::process_wide), so tests running in parallel
//! in one binary do not fail each other's calls. Counters say how many
//! faults were injected, per guard and per call name
//! ([`injected_count`]). Without the feature none of this is compiled: the
//! driver calls carry no check at all. (`cuInit` runs once per process and
//! its result is kept: a fault injected there stays for the process.)
//!
//! ```
//! use rmm::fault::{FaultPlan, FaultyResource, Trigger};
//! use rmm::mr::{MemoryResource, SimulatedMemoryResource};
//! use rmm::CudaStreamView;
//!
//! // An upstream whose 2nd allocation fails with out-of-memory.
//! let upstream = FaultyResource::new(SimulatedMemoryResource::new(1 << 30));
//! upstream.fail(Trigger::Nth(2));
//! let s = CudaStreamView::DEFAULT;
//! let a = upstream.allocate(1024, 256, s)?;
//! assert!(upstream.allocate(1024, 256, s).unwrap_err().is_out_of_memory());
//! assert_eq!((upstream.injected(), upstream.live_bytes()), (1, 1024));
//! unsafe { upstream.deallocate(a, 1024, 256, s) };
//! assert_eq!(upstream.live_bytes(), 0);
//!
//! // The 3rd cuMemAlloc of this thread fails before it reaches the driver
//! // (without a GPU no call is made, so nothing is injected).
//! let faults = rmm::fault::DriverFaults::inject(FaultPlan::call("cuMemAlloc").trigger(Trigger::Nth(3)));
//! assert_eq!(faults.injected(), 0);
//! drop(faults); // the plan ends here
//! # Ok::<(), rmm::Error>(())
//! ```

mod driver;
mod resource;
mod trigger;

pub(crate) use driver::driver_fault;
pub use driver::{injected_count, DriverFaults, FaultPlan};
pub use resource::FaultyResource;
pub use trigger::{InjectedError, Trigger};
