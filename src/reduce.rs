//! Reductions to a host value: [`sum`], [`min`], [`max`].
//!
//! One kernel per operation and type runs twice: a grid of blocks writes one
//! partial per block into policy scratch, then one block reduces the
//! partials. The result is copied to the host and the policy's stream is
//! synchronised. Integer sums wrap; float sums are computed in a tree order
//! (so they may differ from a sequential sum in the last bits); float `min`
//! and `max` ignore NaNs (like `f32::min`) and give NaN only when every
//! element is NaN.

use kernel_abi::BLOCK;
use rmm::exec_policy::ExecPolicy;
use rmm::launch::memcpy_async;
use rmm::{DevicePtr, DeviceSpan, Result};

use crate::kernels::Kernels;
use crate::numeric::Numeric;

fn reduce<T: Numeric>(input: DeviceSpan<'_, T>, kernel: &'static str, policy: &ExecPolicy) -> Result<T> {
    policy.launch_ordered(kernel, &[input.info()], |stream| {
        reduce_on(input, kernel, policy, stream)
    })
}

/// [`reduce`] on `stream` (the policy's, ordered with the span's owner).
fn reduce_on<T: Numeric>(
    input: DeviceSpan<'_, T>,
    kernel: &'static str,
    policy: &ExecPolicy,
    stream: rmm::CudaStreamView<'_>,
) -> Result<T> {
    let n = input.len();
    let k = Kernels::current()?;
    let grid = k.grid_for(n.div_ceil(4), BLOCK).max(1);
    let partials = policy.scratch::<T>(grid as usize + 1)?;
    let (mut src, mut count, mut dst) = (input.ptr().addr(), n as u64, partials.ptr().addr());
    let mut params = crate::kernel_params!(src, count, dst);
    // SAFETY: parameters match `(input: *const T, n: usize, out: *mut T)`;
    // the span holds `n` elements and `partials` `grid + 1`, disjoint.
    unsafe { k.launch(kernel, grid, BLOCK, 0, stream, &mut params)? };
    let (mut src2, mut count2, mut dst2) = (
        partials.ptr().addr(),
        grid as u64,
        partials
            .ptr()
            .offset(grid as usize * std::mem::size_of::<T>())
            .addr(),
    );
    let mut params = crate::kernel_params!(src2, count2, dst2);
    // SAFETY: reads the `grid` partials, writes the slot after them.
    unsafe { k.launch(kernel, 1, BLOCK, 0, stream, &mut params)? };
    let mut result = T::ZERO;
    // SAFETY: copies one `T` into `result`, which outlives the copy because
    // the stream is synchronised before returning.
    unsafe {
        memcpy_async(
            DevicePtr::new(&mut result as *mut T as u64),
            DevicePtr::new(dst2),
            std::mem::size_of::<T>(),
            stream,
        )?
    };
    stream.synchronize()?;
    Ok(result)
}

/// Sum of the elements (0 for an empty span), on the policy's stream;
/// synchronises the stream.
///
/// # Errors
/// Scratch allocation errors (e.g. [`rmm::Error::OutOfMemory`]); driver errors.
///
/// ```no_run
/// # fn demo(v: rmm::DeviceSpan<'_, f64>) -> rmm::Result<()> {
/// let total = rmm_suite::reduce::sum(v, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn sum<T: Numeric>(input: DeviceSpan<'_, T>, policy: &ExecPolicy) -> Result<T> {
    if input.is_empty() {
        return Ok(T::ZERO);
    }
    reduce(input, T::KERNELS.reduce_sum, policy)
}

/// Smallest element, `None` for an empty span; synchronises the stream.
///
/// # Errors
/// As [`sum`].
///
/// ```no_run
/// # fn demo(v: rmm::DeviceSpan<'_, i32>) -> rmm::Result<()> {
/// let lo = rmm_suite::reduce::min(v, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn min<T: Numeric>(input: DeviceSpan<'_, T>, policy: &ExecPolicy) -> Result<Option<T>> {
    if input.is_empty() {
        return Ok(None);
    }
    reduce(input, T::KERNELS.reduce_min, policy).map(Some)
}

/// Largest element, `None` for an empty span; synchronises the stream.
///
/// # Errors
/// As [`sum`].
///
/// ```no_run
/// # fn demo(v: rmm::DeviceSpan<'_, u64>) -> rmm::Result<()> {
/// let hi = rmm_suite::reduce::max(v, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn max<T: Numeric>(input: DeviceSpan<'_, T>, policy: &ExecPolicy) -> Result<Option<T>> {
    if input.is_empty() {
        return Ok(None);
    }
    reduce(input, T::KERNELS.reduce_max, policy).map(Some)
}
