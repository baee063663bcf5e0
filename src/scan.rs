//! Prefix sums for `u32`, `i32`, `u64`, `i64`, `f32` and `f64`: exclusive
//! (`out[i] = in[0] + ... + in[i - 1]`, `out[0] = 0`) and inclusive
//! (`out[i] = in[0] + ... + in[i]`).
//!
//! One launch, one read and one write of the data: a single-pass scan with
//! decoupled look-back (Merrill & Garland). Each block takes a tile index
//! from a counter, publishes its tile's sum, looks back over its
//! predecessors' published sums and prefixes for its own prefix, publishes
//! that, and writes its outputs. The counter and the tile descriptors live
//! in scratch from the [`ExecPolicy`], cleared on the policy's stream before
//! the launch (layout: [`kernel_abi::scan`]). Integer sums wrap; float sums
//! are grouped differently from a sequential loop, so they may round
//! differently, and they start from `+0.0`.

use kernel_abi::scan::BLOCK;
use kernel_abi::scan::{state_bytes, tiles, MODE_INCLUSIVE};
use rmm::exec_policy::ExecPolicy;
use rmm::{CudaStreamView, DevicePtr, DeviceSpan, DeviceSpanMut, Error, Result, SpanInfo};

use crate::kernels::Kernels;
use crate::numeric::Numeric;

/// Exclusive or inclusive scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `out[i]` sums the elements before `i`.
    Exclusive,
    /// `out[i]` sums the elements up to and including `i`.
    Inclusive,
}

/// Bytes of scratch a scan of `n` elements of `T` needs (its tile state).
pub(crate) fn state_bytes_for<T>(n: usize) -> usize {
    state_bytes(std::mem::size_of::<T>(), tiles(std::mem::size_of::<T>(), n))
}

/// Bytes of scratch one scan of `n` elements of `T` takes from its policy
/// (one allocation: the tile state); 0 for no elements.
///
/// ```
/// let b = rmm_suite::scan::scratch_bytes::<u32>(1 << 20);
/// assert!(b > 0 && b % 256 == 0 && b < 4096);
/// assert_eq!(rmm_suite::scan::scratch_bytes::<f64>(0), 0);
/// ```
pub fn scratch_bytes<T: Numeric>(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    state_bytes_for::<T>(n) / 8 * 8
}

/// Scans `n >= 1` elements from `input` to `output` (which may be the same
/// address) with the tile state at `state`: clears the state (counter and
/// descriptors), then launches one block per tile, both on `stream`.
///
/// # Safety
/// `input`/`output` hold `n` elements of `T` and are identical or disjoint;
/// `state` is 8-byte aligned device memory of [`state_bytes_for::<T>(n)`](state_bytes_for)
/// bytes used by nothing else until the scan has run; all valid in `stream`
/// order.
///
/// # Errors
/// [`Error::InvalidArgument`] for more tiles than a grid holds; driver errors.
pub(crate) unsafe fn scan_raw<T: Numeric>(
    k: &Kernels,
    input: u64,
    output: u64,
    n: usize,
    mode: Mode,
    state: DevicePtr,
    stream: CudaStreamView,
) -> Result<()> {
    let t = tiles(std::mem::size_of::<T>(), n);
    let grid = u32::try_from(t)
        .ok()
        .filter(|&g| g <= i32::MAX as u32)
        .ok_or_else(|| Error::InvalidArgument(format!("scan: {n} elements need {t} blocks")))?;
    let state_len = state_bytes(std::mem::size_of::<T>(), t);
    let (mut i, mut o, mut cnt, mut st, mut md) = (
        input,
        output,
        n as u64,
        state.addr(),
        if mode == Mode::Inclusive {
            MODE_INCLUSIVE
        } else {
            0
        },
    );
    let mut params = crate::kernel_params!(i, o, cnt, st, md);
    // SAFETY: the memset covers the state's `state_len` bytes (a multiple
    // of 4, per contract); the parameters match the
    // kernel's signature `(input, output, n, state, mode)`; the grid has one
    // block per tile, as the kernel requires; memory per contract.
    unsafe {
        rmm::launch::memset_async(state, 0, 4, state_len / 4, stream)?;
        k.launch(T::KERNELS.scan, grid, BLOCK, 0, stream, &mut params)
    }
}

/// The shared body of the public scans over spans at `a` and `b` (the same
/// address for in place; checked to be disjoint otherwise).
fn scan_spans<T: Numeric>(
    what: &'static str,
    a: u64,
    b: u64,
    n: usize,
    infos: &[SpanInfo<'_>],
    mode: Mode,
    policy: &ExecPolicy,
) -> Result<()> {
    policy.launch_ordered(what, infos, |stream| {
        let state = policy.scratch::<u64>(state_bytes_for::<T>(n) / 8)?;
        if policy.is_dry_run() {
            return Ok(());
        }
        let k = Kernels::current()?;
        // SAFETY: the spans hold `n` elements and are identical or disjoint
        // (callers), ordered with their owners' streams; the state is the
        // policy's scratch (`u64`s: 8-byte aligned) of the size the scan needs, freed
        // after the kernel in stream order.
        unsafe { scan_raw::<T>(k, a, b, n, mode, state.ptr(), stream) }
    })
}

/// Out-of-place scan: lengths equal, ranges disjoint.
fn scan_into<T: Numeric>(
    what: &'static str,
    input: DeviceSpan<'_, T>,
    output: DeviceSpanMut<'_, T>,
    mode: Mode,
    policy: &ExecPolicy,
) -> Result<()> {
    if input.len() != output.len() {
        return Err(Error::InvalidArgument(format!(
            "{what}: input has {} elements, output {}",
            input.len(),
            output.len()
        )));
    }
    let n = input.len();
    if n == 0 {
        return Ok(());
    }
    let (a, b, bytes) = (input.ptr().addr(), output.ptr().addr(), input.size_bytes() as u64);
    if a != b && a < b.saturating_add(bytes) && b < a.saturating_add(bytes) {
        return Err(Error::InvalidArgument(format!(
            "{what}: input and output overlap without being the same range"
        )));
    }
    scan_spans::<T>(what, a, b, n, &[input.info(), output.info()], mode, policy)
}

/// In-place scan.
fn scan_in_place<T: Numeric>(
    what: &'static str,
    data: DeviceSpanMut<'_, T>,
    mode: Mode,
    policy: &ExecPolicy,
) -> Result<()> {
    let n = data.len();
    if n == 0 {
        return Ok(());
    }
    let p = data.ptr().addr();
    scan_spans::<T>(what, p, p, n, &[data.info()], mode, policy)
}

/// Exclusive sum of `input` into `output` on the policy's stream.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ or the ranges overlap
/// without being the same; scratch allocation errors; driver errors.
///
/// ```no_run
/// # fn demo(a: rmm::DeviceSpan<'_, u32>, b: rmm::DeviceSpanMut<'_, u32>) -> rmm::Result<()> {
/// rmm_suite::scan::exclusive_scan(a, b, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn exclusive_scan<T: Numeric>(
    input: DeviceSpan<'_, T>,
    output: DeviceSpanMut<'_, T>,
    policy: &ExecPolicy,
) -> Result<()> {
    scan_into("exclusive_scan", input, output, Mode::Exclusive, policy)
}

/// Exclusive sum of `data` in place on the policy's stream.
///
/// # Errors
/// Scratch allocation errors; driver errors.
///
/// ```no_run
/// # fn demo(mut v: rmm::DeviceSpanMut<'_, i64>) -> rmm::Result<()> {
/// rmm_suite::scan::exclusive_scan_in_place(v.reborrow(), &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn exclusive_scan_in_place<T: Numeric>(data: DeviceSpanMut<'_, T>, policy: &ExecPolicy) -> Result<()> {
    scan_in_place("exclusive_scan_in_place", data, Mode::Exclusive, policy)
}

/// Inclusive sum of `input` into `output` on the policy's stream.
///
/// # Errors
/// As [`exclusive_scan`].
///
/// ```no_run
/// # fn demo(a: rmm::DeviceSpan<'_, f32>, b: rmm::DeviceSpanMut<'_, f32>) -> rmm::Result<()> {
/// rmm_suite::scan::inclusive_scan(a, b, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn inclusive_scan<T: Numeric>(
    input: DeviceSpan<'_, T>,
    output: DeviceSpanMut<'_, T>,
    policy: &ExecPolicy,
) -> Result<()> {
    scan_into("inclusive_scan", input, output, Mode::Inclusive, policy)
}

/// Inclusive sum of `data` in place on the policy's stream.
///
/// # Errors
/// As [`exclusive_scan_in_place`].
///
/// ```no_run
/// # fn demo(mut v: rmm::DeviceSpanMut<'_, u64>) -> rmm::Result<()> {
/// rmm_suite::scan::inclusive_scan_in_place(v.reborrow(), &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn inclusive_scan_in_place<T: Numeric>(data: DeviceSpanMut<'_, T>, policy: &ExecPolicy) -> Result<()> {
    scan_in_place("inclusive_scan_in_place", data, Mode::Inclusive, policy)
}
