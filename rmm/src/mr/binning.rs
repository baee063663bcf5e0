//! [`BinningMemoryResource`]: requests routed by size to bins.

use std::fmt;
use std::sync::Arc;

use super::detail::live_set::LiveSet;
use super::{
    check_base_alignment, FixedSizeMemoryResource, FixedSizeOptions, MemoryResource, SharedResource,
};
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::device::DeviceId;
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

struct BinningInner<U> {
    upstream: U,
    /// Bins by increasing size, each with whether it checks its own frees
    /// (the fixed-size bins made here do).
    bins: Vec<(usize, SharedResource, bool)>,
    /// Live allocations served by the upstream or by bins that were handed
    /// in (which may trust frees).
    live: LiveSet,
}

/// Routes each request to the smallest bin that holds it, and larger ones
/// to the upstream (RMM's `binning_memory_resource`).
///
/// Bins are any resources; [`add_bin`](Self::add_bin) with `None` makes a
/// [`FixedSizeMemoryResource`] of that block size over the upstream, and
/// [`with_fixed_bins`](Self::with_fixed_bins) makes one per power of two.
/// A free must name the size it was allocated with (to find the bin).
/// Misuse is detected, never trusted: the fixed-size bins made here check
/// their own frees, and allocations served by the upstream or by bins
/// handed to [`add_bin`](Self::add_bin) are recorded here; a double free, a
/// foreign, never-allocated or interior pointer, or a wrong size (which
/// would pick another bin) is logged at error level and ignored.
/// Zero-byte requests return null. Bins are added before the resource is
/// shared: `add_bin` takes `&mut self` and fails on a resource that has
/// been cloned, so the allocation path needs no lock.
///
/// ```
/// use rmm::mr::{BinningMemoryResource, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let sim = SimulatedMemoryResource::new(1 << 34);
/// let mr = BinningMemoryResource::with_fixed_bins(sim.clone(), 10, 12)?; // 1, 2 and 4 KiB
/// let small = mr.allocate(1500, 256, CudaStreamView::DEFAULT)?; // from the 2 KiB bin
/// let big = mr.allocate(1 << 20, 256, CudaStreamView::DEFAULT)?; // from the upstream
/// unsafe {
///     mr.deallocate(small, 1500, 256, CudaStreamView::DEFAULT);
///     mr.deallocate(big, 1 << 20, 256, CudaStreamView::DEFAULT);
/// }
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct BinningMemoryResource<U: MemoryResource = SharedResource> {
    inner: Arc<BinningInner<U>>,
}

impl<U: MemoryResource> Clone for BinningMemoryResource<U> {
    fn clone(&self) -> Self {
        BinningMemoryResource {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> fmt::Debug for BinningMemoryResource<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinningMemoryResource")
            .field("bins", &self.bin_sizes())
            .field("upstream", &self.inner.upstream)
            .finish()
    }
}

impl<U: MemoryResource + Clone> BinningMemoryResource<U> {
    /// A resource without bins: everything goes to the upstream until
    /// [`add_bin`](Self::add_bin) is called.
    pub fn new(upstream: U) -> Self {
        BinningMemoryResource {
            inner: Arc::new(BinningInner {
                upstream,
                bins: Vec::new(),
                live: LiveSet::default(),
            }),
        }
    }

    /// A resource with fixed-size bins of `2^min_exp ..= 2^max_exp` bytes
    /// over `upstream` (RMM's conventional 18..=22 gives 256 KiB .. 4 MiB).
    ///
    /// # Errors
    /// [`Error::Logic`] when `min_exp > max_exp` or `max_exp >= 48`; the
    /// upstream's error when a bin's first chunk cannot be allocated.
    pub fn with_fixed_bins(upstream: U, min_exp: u32, max_exp: u32) -> Result<Self> {
        if min_exp > max_exp || max_exp >= 48 {
            return Err(Error::Logic(format!(
                "BinningMemoryResource: bad bin exponent range {min_exp}..={max_exp}"
            )));
        }
        let mut mr = Self::new(upstream);
        for e in min_exp..=max_exp {
            mr.add_bin(1usize << e, None)?;
        }
        Ok(mr)
    }

    /// Adds a bin for requests up to `size` bytes (rounded up to 256),
    /// served by `resource`, or by a new [`FixedSizeMemoryResource`] of that
    /// block size over the upstream when `None`. A bin of an existing size
    /// is left as it is.
    ///
    /// # Errors
    /// [`Error::Logic`] when the resource has been cloned already or `size`
    /// is 0; the fixed-size resource's error.
    pub fn add_bin(&mut self, size: usize, resource: Option<SharedResource>) -> Result<()> {
        let size = align_up(size, CUDA_ALLOCATION_ALIGNMENT)
            .filter(|&s| s > 0)
            .ok_or_else(|| Error::Logic(format!("BinningMemoryResource: invalid bin size {size}")))?;
        let Some(inner) = Arc::get_mut(&mut self.inner) else {
            return Err(Error::Logic(
                "BinningMemoryResource::add_bin on a shared resource: add bins before cloning it".into(),
            ));
        };
        let at = match inner.bins.binary_search_by_key(&size, |(s, _, _)| *s) {
            Ok(_) => return Ok(()),
            Err(at) => at,
        };
        let (resource, checks_frees) = match resource {
            Some(r) => (r, false),
            None => (
                SharedResource::new(FixedSizeMemoryResource::new(
                    inner.upstream.clone(),
                    FixedSizeOptions::default().block_size(size),
                )?),
                true,
            ),
        };
        inner.bins.insert(at, (size, resource, checks_frees));
        Ok(())
    }
}

impl<U: MemoryResource> BinningMemoryResource<U> {
    /// The bin sizes, increasing.
    pub fn bin_sizes(&self) -> Vec<usize> {
        self.inner.bins.iter().map(|(s, _, _)| *s).collect()
    }

    /// The upstream resource (for requests larger than every bin).
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    /// The bin for `bytes` (and whether it checks its own frees), or `None`
    /// for the upstream.
    fn route(&self, bytes: usize) -> Option<(&SharedResource, bool)> {
        let bins = &self.inner.bins;
        let i = bins.partition_point(|(s, _, _)| *s < bytes);
        bins.get(i).map(|(_, r, checked)| (r, *checked))
    }

    /// Frees refused here so far (those routed to the upstream or to bins
    /// that were handed in; the fixed-size bins made here count their own).
    pub fn bad_frees(&self) -> usize {
        self.inner.live.bad_frees()
    }
}

impl<U: MemoryResource> MemoryResource for BinningMemoryResource<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        check_base_alignment(alignment)?;
        if bytes == 0 {
            return Ok(DevicePtr::NULL);
        }
        let (p, checked) = match self.route(bytes) {
            Some((bin, checked)) => (bin.allocate(bytes, alignment, stream)?, checked),
            None => (self.inner.upstream.allocate(bytes, alignment, stream)?, false),
        };
        if !checked && !p.is_null() {
            self.inner.live.insert("BinningMemoryResource", p.addr(), bytes);
        }
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        let route = self.route(bytes);
        let checked = route.is_some_and(|(_, c)| c);
        if !checked && !self.inner.live.remove("BinningMemoryResource", ptr.addr(), bytes) {
            return;
        }
        match route {
            // SAFETY: the bin checks the free itself, or the record above
            // showed the same size (hence this bin) served the allocation.
            Some((bin, _)) => unsafe { bin.deallocate(ptr, bytes, alignment, stream) },
            // SAFETY: the record above showed the upstream served it.
            None => unsafe { self.inner.upstream.deallocate(ptr, bytes, alignment, stream) },
        }
    }

    fn is_equal(&self, other: &dyn MemoryResource) -> bool {
        other
            .downcast_ref::<BinningMemoryResource<U>>()
            .is_some_and(|o| Arc::ptr_eq(&o.inner, &self.inner))
    }

    fn device(&self) -> Option<DeviceId> {
        // A stateless upstream (cuda) names no device; its fixed-size bins
        // record the one current when they were made.
        self.inner
            .upstream
            .device()
            .or_else(|| self.inner.bins.iter().find_map(|(_, r, _)| r.device()))
    }

    fn is_simulated(&self) -> bool {
        self.inner.upstream.is_simulated()
    }

    fn is_device_accessible(&self) -> bool {
        self.inner.upstream.is_device_accessible()
    }

    fn is_host_accessible(&self) -> bool {
        self.inner.upstream.is_host_accessible()
    }
}
