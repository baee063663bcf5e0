//! [`AlignedAdaptor`]: alignments above 256 bytes.

use crate::mr::forensics::reported;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::lock;
use crate::align::{align_up, CUDA_ALLOCATION_ALIGNMENT};
use crate::error::{Error, Result};
use crate::mr::{check_pow2_alignment, MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Gives allocations an alignment larger than the 256 bytes CUDA resources
/// guarantee (RMM's `aligned_resource_adaptor`).
///
/// The adaptor has a default alignment and a size threshold: allocations of
/// at least `threshold` bytes get the default alignment. An `allocate` call
/// may also ask for any power-of-two alignment itself; the larger of the two
/// applies (requests below the threshold get what they ask for). Alignments
/// below 256 are raised to 256; anything that is not a power of two is an
/// error.
///
/// When the effective alignment `a` is above 256 it asks the upstream for
/// `align_up(bytes, a) + (a - 256)` bytes, returns the first `a`-aligned
/// address inside and remembers, under a mutex, which upstream pointer it
/// came from; otherwise the call passes straight through. Thread safe when
/// the upstream is (the map has its own lock, never held across an upstream
/// call). A free of an aligned pointer it does not know is logged at error
/// level and not passed upstream.
///
/// ```
/// use rmm::mr::{AlignedAdaptor, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let mr = AlignedAdaptor::new(SimulatedMemoryResource::new(1 << 30), 4096, 0)?;
/// let p = mr.allocate(100, 256, CudaStreamView::DEFAULT)?;
/// assert!(p.is_aligned(4096));
/// let q = mr.allocate(100, 1 << 20, CudaStreamView::DEFAULT)?; // per call
/// assert!(q.is_aligned(1 << 20));
/// unsafe {
///     mr.deallocate(p, 100, 256, CudaStreamView::DEFAULT);
///     mr.deallocate(q, 100, 1 << 20, CudaStreamView::DEFAULT);
/// }
/// assert!(AlignedAdaptor::new(SimulatedMemoryResource::new(1 << 30), 3000, 0).is_err());
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug)]
pub struct AlignedAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

#[derive(Debug)]
struct Inner<U> {
    upstream: U,
    alignment: usize,
    threshold: usize,
    /// Aligned pointer handed out -> pointer the upstream returned.
    pointers: Mutex<HashMap<DevicePtr, DevicePtr>>,
}

impl<U: MemoryResource> Clone for AlignedAdaptor<U> {
    fn clone(&self) -> Self {
        AlignedAdaptor {
            inner: self.inner.clone(),
        }
    }
}

impl<U: MemoryResource> AlignedAdaptor<U> {
    /// Aligns allocations of at least `threshold` bytes to `alignment`
    /// (raised to 256 when smaller).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `alignment` is not a power of two.
    pub fn new(upstream: U, alignment: usize, threshold: usize) -> Result<Self> {
        if !crate::align::is_pow2(alignment) {
            return Err(crate::error::Error::InvalidArgument(format!(
                "AlignedAdaptor: alignment {alignment} is not a power of two"
            )));
        }
        Ok(AlignedAdaptor {
            inner: Arc::new(Inner {
                upstream,
                alignment: alignment.max(CUDA_ALLOCATION_ALIGNMENT),
                threshold,
                pointers: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    /// The default alignment (at least 256).
    pub fn alignment(&self) -> usize {
        self.inner.alignment
    }

    /// The size from which the default alignment applies.
    pub fn threshold(&self) -> usize {
        self.inner.threshold
    }

    /// The alignment an allocation of `bytes` asking for `alignment` gets.
    fn effective(&self, bytes: usize, alignment: usize) -> usize {
        let default = if bytes >= self.inner.threshold {
            self.inner.alignment
        } else {
            CUDA_ALLOCATION_ALIGNMENT
        };
        default.max(alignment)
    }
}

/// Bytes to ask the upstream for so that an `a`-aligned block of `bytes` fits.
fn upstream_size(bytes: usize, a: usize) -> Option<usize> {
    align_up(bytes, a)?.checked_add(a - CUDA_ALLOCATION_ALIGNMENT)
}

impl<U: MemoryResource> MemoryResource for AlignedAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            check_pow2_alignment(alignment)?;
            if bytes == 0 {
                return Ok(DevicePtr::NULL);
            }
            let a = self.effective(bytes, alignment);
            if a <= CUDA_ALLOCATION_ALIGNMENT {
                return self.inner.upstream.allocate(bytes, alignment, stream);
            }
            let size = upstream_size(bytes, a).ok_or_else(|| Error::OutOfMemory {
                requested: bytes,
                reason: format!("AlignedAdaptor: {bytes} bytes aligned to {a} overflows"),
                report: None,
            })?;
            let original = self
                .inner
                .upstream
                .allocate(size, CUDA_ALLOCATION_ALIGNMENT, stream)?;
            let Some(aligned) = align_up(original.addr() as usize, a) else {
                // SAFETY: `original` was just allocated with these arguments and is unused.
                unsafe {
                    self.inner
                        .upstream
                        .deallocate(original, size, CUDA_ALLOCATION_ALIGNMENT, stream)
                };
                return Err(Error::BadAlloc(format!(
                    "AlignedAdaptor: cannot align {original} to {a}"
                )));
            };
            let aligned = DevicePtr::new(aligned as u64);
            lock(&self.inner.pointers).insert(aligned, original);
            Ok(aligned)
        })
    }

    unsafe fn deallocate(&self, ptr: DevicePtr, bytes: usize, alignment: usize, stream: CudaStreamView) {
        if ptr.is_null() {
            return;
        }
        let a = self.effective(bytes, alignment);
        if a <= CUDA_ALLOCATION_ALIGNMENT {
            // SAFETY: forwarded contract: this size and alignment passed through.
            unsafe { self.inner.upstream.deallocate(ptr, bytes, alignment, stream) };
            return;
        }
        let Some(original) = lock(&self.inner.pointers).remove(&ptr) else {
            log::error!(
                "AlignedAdaptor: free of unknown pointer {ptr} ({bytes} bytes, alignment {a}); not passed upstream"
            );
            return;
        };
        let size = upstream_size(bytes, a).unwrap_or(bytes);
        // SAFETY: `original` came from the upstream with `size` bytes (the
        // same arguments give the same size) and the caller's contract covers
        // its use.
        unsafe {
            self.inner
                .upstream
                .deallocate(original, size, CUDA_ALLOCATION_ALIGNMENT, stream)
        };
    }

    forward_to_upstream!();
}
