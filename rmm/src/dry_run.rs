//! Dry runs: an algorithm's real code path with its kernels skipped, to
//! learn its peak scratch memory and the smallest pool it fits in without a
//! GPU.
//!
//! A policy made by [`ExecPolicy::dry_run`] (or marked with
//! [`ExecPolicy::with_dry_run`]) makes the device algorithms (`rmm-suite`'s
//! sort, scan, reduce, sequence) take every scratch allocation exactly as on
//! the GPU (same sizes, same order, same frees, from the policy's resource)
//! and then enqueue nothing: no kernel, no memset, no event, no driver call.
//! Their inputs and outputs may be containers over a
//! [`SimulatedMemoryResource`] (addresses without memory), which
//! [`ExecPolicy::launch_ordered`] accepts in a dry run and refuses
//! otherwise. Nothing is computed: outputs keep whatever they held. While
//! a dry run's launch closure runs, a kernel launch, memset or copy of
//! [`crate::launch`] on that thread is refused with [`Error::Logic`], so a
//! closure that forgets to check [`ExecPolicy::is_dry_run`] fails instead
//! of handing simulated addresses to the driver. Whether a process has
//! called the driver at all: [`crate::device::driver_called`].
//!
//! | Question | Answer |
//! |---|---|
//! | Peak scratch bytes of a call (sum of the live requested sizes at its highest) | [`DryRun::peak_scratch`] |
//! | Smallest pool it runs in ([`PoolMemoryResource`] whose initial size is its maximum) | [`DryRun::smallest_pool`] |
//! | Both | [`DryRun::report`] |
//!
//! The one device property a scratch size depends on is the number of
//! multiprocessors (a reduction's per-block partials); [`DryRun`] names it,
//! 132 (an H200) unless set with [`DryRun::with_multiprocessors`].
//!
//! ```
//! use rmm::dry_run::DryRun;
//! use rmm::mr::SimulatedMemoryResource;
//! use rmm::{CudaStreamView, DeviceUvector};
//! // Input over simulated memory: addresses only, no GPU needed.
//! let data = SimulatedMemoryResource::new(usize::MAX);
//! let keys = DeviceUvector::<u32>::with_resource(1 << 20, CudaStreamView::DEFAULT, data)?;
//! let report = DryRun::default().report(|policy| {
//!     // What an algorithm does with a policy: take scratch, then (in a dry
//!     // run) launch nothing. rmm-suite's launchers do exactly this.
//!     let _alt = policy.scratch::<u32>(keys.len())?;
//!     let _counts = policy.scratch::<u32>(1024)?;
//!     policy.launch_ordered("demo", &[keys.as_span().info()], |_stream| {
//!         assert!(policy.is_dry_run()); // a real launcher returns here
//!         Ok(())
//!     })
//! })?;
//! assert_eq!(report.peak_scratch_bytes, 4 << 20 | 4096);
//! assert_eq!(report.scratch_allocations, 2);
//! assert_eq!(report.smallest_pool_bytes, 4 << 20 | 4096);
//! # Ok::<(), rmm::Error>(())
//! ```

use std::cell::Cell;

use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};
use crate::exec_policy::ExecPolicy;
use crate::mr::{PoolMemoryResource, PoolOptions, SimulatedMemoryResource, StatisticsAdaptor};
use crate::stream::CudaStreamView;

thread_local! {
    /// Dry-run launch closures running on this thread (nested ones count).
    static IN_DRY_RUN: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as running a dry run's launch closure until dropped
/// ([`ExecPolicy::launch_ordered`] holds one around the closure).
pub(crate) struct DryRunScope(());

impl DryRunScope {
    pub(crate) fn enter() -> DryRunScope {
        IN_DRY_RUN.with(|n| n.set(n.get() + 1));
        DryRunScope(())
    }
}

impl Drop for DryRunScope {
    fn drop(&mut self) {
        IN_DRY_RUN.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// The safety net of a dry run: device work enqueued from inside a dry
/// run's launch closure (one that forgot to check
/// [`ExecPolicy::is_dry_run`]) is refused with [`Error::Logic`] before the
/// driver sees its simulated addresses. `rmm::launch`'s kernel launch,
/// memset and copy call it.
#[inline]
pub(crate) fn refuse_in_dry_run(what: &str) -> Result<()> {
    if IN_DRY_RUN.with(Cell::get) == 0 {
        return Ok(());
    }
    Err(Error::Logic(format!(
        "{what} inside a dry run's launch closure: a dry run takes its scratch and enqueues \
         nothing (return once ExecPolicy::is_dry_run() is true)"
    )))
}

/// The largest pool [`DryRun::smallest_pool`] tries: the simulated address
/// range (128 TiB).
const LARGEST_POOL: usize = 1 << 47;

/// The settings of a dry run: the device it stands for. See the
/// [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DryRun {
    multiprocessors: u32,
}

impl Default for DryRun {
    /// A device of [`DryRun::H200_MULTIPROCESSORS`] multiprocessors.
    fn default() -> Self {
        DryRun {
            multiprocessors: Self::H200_MULTIPROCESSORS,
        }
    }
}

/// What [`DryRun::report`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ScratchReport {
    /// The highest sum of live requested scratch bytes.
    pub peak_scratch_bytes: usize,
    /// Scratch allocations taken (zero-byte ones not counted).
    pub scratch_allocations: usize,
    /// The smallest [`PoolMemoryResource`] (initial size = maximum size, a
    /// multiple of 256) the work runs in; see [`DryRun::smallest_pool`].
    pub smallest_pool_bytes: usize,
}

impl DryRun {
    /// Multiprocessors of an NVIDIA H200 (the default).
    pub const H200_MULTIPROCESSORS: u32 = 132;

    /// The same dry run for a device of `multiprocessors` multiprocessors
    /// (at least 1: 0 is taken as 1).
    pub fn with_multiprocessors(self, multiprocessors: u32) -> Self {
        DryRun {
            multiprocessors: multiprocessors.max(1),
        }
    }

    /// Multiprocessors of the device the dry run stands for.
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// Runs `work` once with a dry-run policy (the default stream) whose
    /// scratch comes from a [`StatisticsAdaptor`] over a simulated device of
    /// unlimited capacity, and returns `(peak bytes, allocations)`.
    fn measure(&self, work: &mut impl FnMut(&ExecPolicy) -> Result<()>) -> Result<(usize, usize)> {
        let stats = StatisticsAdaptor::new(SimulatedMemoryResource::new(usize::MAX));
        let policy = ExecPolicy::new(CudaStreamView::DEFAULT, stats.clone()).with_dry_run(*self);
        work(&policy)?;
        let (bytes, allocations) = (stats.bytes_counter(), stats.allocations_counter());
        Ok((
            usize::try_from(bytes.peak).unwrap_or(0),
            usize::try_from(allocations.total).unwrap_or(0),
        ))
    }

    /// The peak scratch of `work` in bytes: the highest sum of the requested
    /// sizes of its live scratch allocations, as a [`StatisticsAdaptor`]
    /// over the GPU's resource reports for the same calls. `work` runs once.
    ///
    /// # Errors
    /// `work`'s error.
    pub fn peak_scratch(&self, mut work: impl FnMut(&ExecPolicy) -> Result<()>) -> Result<usize> {
        self.measure(&mut work).map(|(peak, _)| peak)
    }

    /// The smallest pool `work` runs in: the least multiple of 256, `P`,
    /// such that `work` succeeds with its scratch from a
    /// [`PoolMemoryResource`] of initial and maximum size `P` (so it never
    /// grows) over a simulated device, found by bisection.
    ///
    /// Why it is right: a pool smaller than the peak scratch cannot hold the
    /// live blocks (each at least its request), so the search starts at the
    /// peak rounded up to 256 and doubles until `work` fits; the bisection
    /// between the last size known to fail and the first known to fit then
    /// ends with `P` run and fitting, and `P - 256` either run and failing
    /// or below the peak. It assumes
    /// that a pool that fits the work stays fitting when larger, which holds
    /// for the stack-like scratch of `rmm-suite`'s algorithms (the test
    /// `dry_run` compares `P` with the sum of the sort's blocks rounded to
    /// 256). `work` runs about `log2(P / 256)` times and must do the same
    /// each time.
    ///
    /// # Errors
    /// `work`'s error other than out-of-memory; [`Error::OutOfMemory`] when
    /// no pool up to 128 TiB fits.
    pub fn smallest_pool(&self, mut work: impl FnMut(&ExecPolicy) -> Result<()>) -> Result<usize> {
        let (peak, _) = self.measure(&mut work)?;
        self.bisect_pool(peak, &mut work)
    }

    /// [`peak_scratch`](Self::peak_scratch), the allocation count and
    /// [`smallest_pool`](Self::smallest_pool) in one.
    ///
    /// # Errors
    /// As [`smallest_pool`](Self::smallest_pool).
    pub fn report(&self, mut work: impl FnMut(&ExecPolicy) -> Result<()>) -> Result<ScratchReport> {
        let (peak, allocations) = self.measure(&mut work)?;
        let pool = self.bisect_pool(peak, &mut work)?;
        Ok(ScratchReport {
            peak_scratch_bytes: peak,
            scratch_allocations: allocations,
            smallest_pool_bytes: pool,
        })
    }

    /// Whether `work` runs with its scratch from a pool of exactly `bytes`
    /// (a multiple of 256) that cannot grow.
    fn fits(&self, bytes: usize, work: &mut impl FnMut(&ExecPolicy) -> Result<()>) -> Result<bool> {
        let device = SimulatedMemoryResource::new(bytes);
        let options = PoolOptions::default()
            .initial_pool_size(bytes)
            .maximum_pool_size(bytes);
        let pool = PoolMemoryResource::new(device, options)?;
        let policy = ExecPolicy::new(CudaStreamView::DEFAULT, pool).with_dry_run(*self);
        match work(&policy) {
            Ok(()) => Ok(true),
            Err(e) if e.is_out_of_memory() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The bisection of [`smallest_pool`](Self::smallest_pool) for work of
    /// peak scratch `peak`.
    fn bisect_pool(&self, peak: usize, work: &mut impl FnMut(&ExecPolicy) -> Result<()>) -> Result<usize> {
        let too_big = || {
            Error::out_of_memory(
                peak,
                format!("dry run: no pool up to {LARGEST_POOL} bytes fits the work"),
            )
        };
        let step = CUDA_ALLOCATION_ALIGNMENT;
        let mut fit = align_up(peak, step)
            .filter(|&b| b <= LARGEST_POOL)
            .ok_or_else(too_big)?;
        // Below the peak nothing fits (each block holds at least its request).
        let mut fail: Option<usize> = fit.checked_sub(step);
        while !self.fits(fit, work)? {
            fail = Some(fit);
            fit = if fit == 0 { Some(step) } else { fit.checked_mul(2) }
                .filter(|&b| b <= LARGEST_POOL)
                .ok_or_else(too_big)?;
        }
        // Invariant: `fit` fits; `fail` (when known) does not, or is below the peak.
        while let Some(f) = fail.filter(|&f| fit - f > step) {
            let mid = f + (fit - f) / 2 / step * step;
            if self.fits(mid, work)? {
                fit = mid;
            } else {
                fail = Some(mid);
            }
        }
        Ok(fit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Work that takes scratch of `sizes` bytes, all at once, freed in
    /// reverse order.
    fn stacked(sizes: &'static [usize]) -> impl FnMut(&ExecPolicy) -> Result<()> {
        move |policy| {
            let taken: Result<Vec<_>> = sizes.iter().map(|&b| policy.scratch::<u8>(b)).collect();
            taken.map(drop)
        }
    }

    #[test]
    fn stacked_scratch_needs_its_blocks_rounded_to_256() {
        let dry = DryRun::default();
        let report = dry.report(stacked(&[1000, 300, 5000])).unwrap();
        assert_eq!(report.peak_scratch_bytes, 6300);
        assert_eq!(report.scratch_allocations, 3);
        assert_eq!(report.smallest_pool_bytes, 1024 + 512 + 5120);
        assert!(dry.fits(6656, &mut stacked(&[1000, 300, 5000])).unwrap());
        assert!(!dry.fits(6656 - 256, &mut stacked(&[1000, 300, 5000])).unwrap());
    }

    #[test]
    fn a_freed_hole_the_next_block_cannot_use_needs_a_larger_pool() {
        // a (1 KiB) and b (1 KiB) live, a freed, then c (2 KiB): the peak is
        // 3 KiB, but c cannot use a's hole in front of b, so the pool needs 4.
        let mut work = |policy: &ExecPolicy| {
            let a = policy.scratch::<u8>(1024)?;
            let b = policy.scratch::<u8>(1024)?;
            drop(a);
            let c = policy.scratch::<u8>(2048)?;
            drop((b, c));
            Ok(())
        };
        let dry = DryRun::default();
        assert_eq!(dry.peak_scratch(&mut work).unwrap(), 3072);
        let pool = dry.smallest_pool(&mut work).unwrap();
        assert!(dry.fits(pool, &mut work).unwrap());
        assert!(!dry.fits(pool - 256, &mut work).unwrap());
        assert_eq!(pool, 4096);
    }

    #[test]
    fn no_scratch_fits_an_empty_pool() {
        let report = DryRun::default().report(|_| Ok(())).unwrap();
        assert_eq!(report, ScratchReport::default());
    }

    #[test]
    fn errors_other_than_out_of_memory_pass_through() {
        let e = DryRun::default()
            .smallest_pool(|p| {
                if p.resource()
                    .inner()
                    .downcast_ref::<PoolMemoryResource<SimulatedMemoryResource>>()
                    .is_some()
                {
                    Err(Error::Logic("only in a pool".into()))
                } else {
                    Ok(())
                }
            })
            .unwrap_err();
        assert!(matches!(e, Error::Logic(m) if m == "only in a pool"));
        let e = DryRun::default()
            .peak_scratch(|p| p.scratch::<u8>(usize::MAX / 2).map(drop))
            .unwrap_err();
        assert!(e.is_out_of_memory(), "{e:?}");
    }

    #[test]
    fn device_work_inside_a_dry_run_closure_is_refused() {
        let sim = SimulatedMemoryResource::new(1 << 20);
        let policy = ExecPolicy::dry_run(sim.clone());
        let e = policy
            .launch_ordered("forgetful", &[], |stream| {
                let scratch = policy.scratch::<u32>(64)?;
                // SAFETY: refused before the driver sees the address (what
                // this test checks); nothing is written.
                unsafe { crate::launch::memset_async(scratch.ptr(), 0, 4, 64, stream) }
            })
            .unwrap_err();
        assert!(
            matches!(&e, Error::Logic(m) if m.contains("a memset inside a dry run")),
            "{e:?}"
        );
        assert_eq!(sim.allocated_bytes(), 0);
        // The scope ends with the closure (and a failing one).
        assert!(refuse_in_dry_run("later").is_ok());
        let nested = policy.launch_ordered("outer", &[], |_| {
            policy.launch_ordered("inner", &[], |_| Ok(()))?;
            Ok(refuse_in_dry_run("after inner").is_err())
        });
        assert!(nested.unwrap());
        assert!(refuse_in_dry_run("after outer").is_ok());
    }

    #[test]
    fn the_policy_is_a_dry_run_for_the_device_named() {
        let dry = DryRun::default().with_multiprocessors(0);
        assert_eq!(dry.multiprocessors(), 1);
        let seen = DryRun::default()
            .with_multiprocessors(78)
            .peak_scratch(|p| {
                assert_eq!(p.dry_run_device().map(|d| d.multiprocessors()), Some(78));
                assert!(p.is_dry_run() && p.stream().is_default());
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, 0);
        assert_eq!(DryRun::default().multiprocessors(), DryRun::H200_MULTIPROCESSORS);
    }
}
