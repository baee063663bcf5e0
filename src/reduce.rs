//! Reductions: to a host value ([`sum`], [`min`], [`max`]) or into device
//! memory without waiting ([`sum_into`], [`min_into`], [`max_into`], as
//! CUB's device reductions and CuPy's `sum`/`max` leave their result).
//!
//! Under stream capture only the `_into` forms run (they enqueue work and
//! wait for nothing, so a graph can replay them); the host-value forms
//! refuse a capturing policy stream with [`Error::Capture`] before any
//! work. A [`DeviceScalar`](rmm::DeviceScalar) makes a handy target:
//!
//! ```no_run
//! use rmm::exec_policy::ExecPolicy;
//! use rmm::graph::{begin_capture, CaptureMode};
//! # fn demo(v: rmm::DeviceSpan<'_, u64>) -> rmm::Result<()> {
//! let stream = rmm::CudaStream::non_blocking()?;
//! let policy = ExecPolicy::on_stream(stream.view());
//! let mut total = rmm::DeviceScalar::<u64>::new(stream.view())?;
//! let capture = begin_capture(stream.view(), CaptureMode::ThreadLocal)?;
//! rmm_suite::reduce::sum_into(v, total.as_span_mut(), &policy)?;
//! let graph = capture.end()?.instantiate()?;
//! // SAFETY: `v` and `total` outlive the launch (read back below).
//! unsafe { graph.launch(stream.view())? };
//! let sum = total.value(stream.view())?;
//! # Ok(()) }
//! ```
//!
//! One kernel per operation and type runs twice: a grid of blocks writes one
//! partial per block into policy scratch, then one block reduces the
//! partials. For the host value the result is copied to the host and the
//! policy's stream is synchronised. Integer sums wrap; float sums are computed in a tree order
//! (so they may differ from a sequential sum in the last bits); float `min`
//! and `max` ignore NaNs (like `f32::min`) and give NaN only when every
//! element is NaN.
//!
//! In a dry run ([`ExecPolicy::dry_run`]) the scratch is taken as on the
//! GPU (its size from [`rmm::dry_run::DryRun::multiprocessors`]) and nothing
//! is computed: [`sum`] returns zero, [`min`] and [`max`] `Some(zero)`.

use kernel_abi::BLOCK;
use rmm::exec_policy::ExecPolicy;
use rmm::graph::CaptureStatus;
use rmm::launch::memcpy_async;
use rmm::{DevicePtr, DeviceSpan, DeviceSpanMut, Error, Result};

use crate::kernels::Kernels;
use crate::numeric::Numeric;

fn reduce<T: Numeric>(input: DeviceSpan<'_, T>, kernel: &'static str, policy: &ExecPolicy) -> Result<T> {
    policy.launch_ordered(kernel, &[input.info()], |stream| {
        if !policy.is_dry_run() {
            refuse_capture(kernel, stream)?;
        }
        reduce_on(input, kernel, policy, stream)
    })
}

/// A host value needs the result copied to the host and the stream
/// synchronised, which a capturing stream cannot do (the driver would
/// refuse the synchronisation and invalidate the capture): refuses it
/// before any launch.
fn refuse_capture(kernel: &str, stream: rmm::CudaStreamView<'_>) -> Result<()> {
    match stream.capture_status()? {
        CaptureStatus::None => Ok(()),
        CaptureStatus::Active { .. } | CaptureStatus::Invalidated => Err(Error::Capture {
            stream: stream.as_raw(),
            reason: format!(
                "{kernel} returns a host value, which needs a synchronisation a capture cannot hold; \
                 reduce into device memory instead (sum_into, min_into, max_into)"
            ),
        }),
    }
}

/// Blocks of the first reduction launch over `n` elements of `T` on a
/// device of `multiprocessors` multiprocessors: each thread folds at least
/// one 16-byte vector per round.
fn partial_blocks<T>(n: usize, multiprocessors: u32) -> u32 {
    crate::kernels::grid_for(n.div_ceil(16 / std::mem::size_of::<T>()), BLOCK, multiprocessors).max(1)
}

/// Bytes of scratch one reduction of `n` elements of `T` takes from its
/// policy on a device of `multiprocessors` multiprocessors (one allocation:
/// a partial per block and the result slot). The host-value forms take
/// none for an empty span.
///
/// ```
/// // 2^24 u32 on an H200 (132 multiprocessors): 8 blocks per
/// // multiprocessor and the result slot, 4 bytes each.
/// assert_eq!(rmm_suite::reduce::scratch_bytes::<u32>(1 << 24, 132), 4 * (132 * 8 + 1));
/// ```
pub fn scratch_bytes<T: Numeric>(n: usize, multiprocessors: u32) -> usize {
    (partial_blocks::<T>(n, multiprocessors) as usize + 1) * std::mem::size_of::<T>()
}

/// The two launches on `stream`: `input`'s partials into policy scratch,
/// then their reduction into `result` (device memory for one `T`, or
/// `None` for a scratch slot). Returns where the result is.
fn launch_reduce<T: Numeric>(
    input: DeviceSpan<'_, T>,
    kernel: &'static str,
    policy: &ExecPolicy,
    stream: rmm::CudaStreamView<'_>,
    result: Option<DevicePtr>,
) -> Result<(DevicePtr, rmm::exec_policy::Scratch<T>)> {
    let n = input.len();
    let (kernels, multiprocessors) = match policy.dry_run_device() {
        Some(dry) => (None, dry.multiprocessors()),
        None => {
            let k = Kernels::current()?;
            (Some(k), k.multiprocessors)
        }
    };
    let grid = partial_blocks::<T>(n, multiprocessors);
    let partials = policy.scratch::<T>(grid as usize + 1)?;
    let at = result.unwrap_or_else(|| partials.ptr().offset(grid as usize * std::mem::size_of::<T>()));
    let Some(k) = kernels else {
        return Ok((at, partials)); // a dry run: scratch taken, nothing launched
    };
    let (mut src, mut count, mut dst) = (input.ptr().addr(), n as u64, partials.ptr().addr());
    let mut params = crate::kernel_params!(src, count, dst);
    // SAFETY: parameters match `(input: *const T, n: usize, out: *mut T)`;
    // the span holds `n` elements and `partials` `grid + 1`, disjoint.
    unsafe { k.launch(kernel, grid, BLOCK, 0, stream, &mut params)? };
    let (mut src2, mut count2, mut dst2) = (partials.ptr().addr(), grid as u64, at.addr());
    let mut params = crate::kernel_params!(src2, count2, dst2);
    // SAFETY: reads the `grid` partials, writes one `T` at `at`: the slot
    // after them, or the caller's device memory (checked by the caller).
    unsafe { k.launch(kernel, 1, BLOCK, 0, stream, &mut params)? };
    Ok((at, partials))
}

/// [`reduce`] on `stream` (the policy's, ordered with the span's owner).
fn reduce_on<T: Numeric>(
    input: DeviceSpan<'_, T>,
    kernel: &'static str,
    policy: &ExecPolicy,
    stream: rmm::CudaStreamView<'_>,
) -> Result<T> {
    // `_partials` (holding the result slot) lives until after the copy.
    let (at, _partials) = launch_reduce(input, kernel, policy, stream, None)?;
    if policy.is_dry_run() {
        return Ok(T::ZERO); // nothing was computed
    }
    let mut result = T::ZERO;
    // SAFETY: copies one `T` into `result`, which outlives the copy because
    // the stream is synchronised before returning.
    unsafe {
        memcpy_async(
            DevicePtr::new(&mut result as *mut T as u64),
            at,
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
/// [`Error::Capture`] when the policy's stream is capturing (use
/// [`sum_into`]); scratch allocation errors (e.g.
/// [`rmm::Error::OutOfMemory`]); driver errors.
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

/// Reduces `input` into `out[0]` on the policy's stream without waiting.
fn reduce_into<T: Numeric>(
    what: &'static str,
    input: DeviceSpan<'_, T>,
    out: DeviceSpanMut<'_, T>,
    kernel: &'static str,
    policy: &ExecPolicy,
) -> Result<()> {
    if out.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{what}: the output span is empty (it needs one element)"
        )));
    }
    let at = out.ptr();
    policy.launch_ordered(what, &[input.info(), out.info()], |stream| {
        launch_reduce(input, kernel, policy, stream, Some(at)).map(|_| ())
    })
}

/// Sum of `input` (0 for an empty span) written to `out[0]` in the policy's
/// stream order, without synchronising: the result stays on the device.
///
/// # Errors
/// [`Error::InvalidArgument`] when `out` is empty; as [`sum`] otherwise.
///
/// ```no_run
/// # fn demo(v: rmm::DeviceSpan<'_, u32>, out: rmm::DeviceSpanMut<'_, u32>) -> rmm::Result<()> {
/// rmm_suite::reduce::sum_into(v, out, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn sum_into<T: Numeric>(
    input: DeviceSpan<'_, T>,
    out: DeviceSpanMut<'_, T>,
    policy: &ExecPolicy,
) -> Result<()> {
    reduce_into("sum_into", input, out, T::KERNELS.reduce_sum, policy)
}

/// Smallest element of a non-empty `input` written to `out[0]`; see
/// [`sum_into`].
///
/// # Errors
/// [`Error::InvalidArgument`] when `input` or `out` is empty; as [`sum`]
/// otherwise.
///
/// ```no_run
/// # fn demo(v: rmm::DeviceSpan<'_, f32>, out: rmm::DeviceSpanMut<'_, f32>) -> rmm::Result<()> {
/// rmm_suite::reduce::min_into(v, out, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn min_into<T: Numeric>(
    input: DeviceSpan<'_, T>,
    out: DeviceSpanMut<'_, T>,
    policy: &ExecPolicy,
) -> Result<()> {
    non_empty("min_into", &input)?;
    reduce_into("min_into", input, out, T::KERNELS.reduce_min, policy)
}

/// Largest element of a non-empty `input` written to `out[0]`; see
/// [`sum_into`].
///
/// # Errors
/// As [`min_into`].
///
/// ```no_run
/// # fn demo(v: rmm::DeviceSpan<'_, f32>, out: rmm::DeviceSpanMut<'_, f32>) -> rmm::Result<()> {
/// rmm_suite::reduce::max_into(v, out, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn max_into<T: Numeric>(
    input: DeviceSpan<'_, T>,
    out: DeviceSpanMut<'_, T>,
    policy: &ExecPolicy,
) -> Result<()> {
    non_empty("max_into", &input)?;
    reduce_into("max_into", input, out, T::KERNELS.reduce_max, policy)
}

fn non_empty<T>(what: &str, input: &DeviceSpan<'_, T>) -> Result<()> {
    if input.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{what}: an empty span has no extreme element"
        )));
    }
    Ok(())
}
