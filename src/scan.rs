//! Exclusive prefix sum (`out[i] = in[0] + ... + in[i - 1]`, `out[0] = 0`)
//! for `u32`, `i32`, `u64`, `i64`, `f32` and `f64`.
//!
//! Three launches: per-block sums of contiguous ranges, a single-block scan
//! of those sums, and a downsweep that scans each range from its block's
//! offset. Integer sums wrap; float sums are grouped differently from a
//! sequential loop, so they may round differently.

use kernel_abi::scan::TILE;
use kernel_abi::BLOCK;
use rmm::exec_policy::ExecPolicy;
use rmm::{CudaStreamView, DeviceSpan, DeviceSpanMut, Error, Result};

use crate::kernels::Kernels;
use crate::numeric::Numeric;

/// The launch shape of a scan over `n` elements: `(grid, tiles_per_block)`.
pub(crate) fn plan(k: &Kernels, n: usize) -> (u32, usize) {
    let tiles = n.div_ceil(TILE).max(1);
    let wanted = (k.multiprocessors as usize * 4).max(1);
    let per_block = tiles.div_ceil(wanted);
    (tiles.div_ceil(per_block) as u32, per_block)
}

/// Scans `n` elements from `input` to `output` (which may be the same
/// address) using `block_sums` (`grid` elements) as scratch.
///
/// # Safety
/// `input`/`output` hold `n` elements of `T` and are identical or disjoint;
/// `block_sums` holds `grid` elements; `(grid, tiles_per_block)` comes from
/// [`plan`] for `n`; all valid in `stream` order.
pub(crate) unsafe fn scan_raw<T: Numeric>(
    k: &Kernels,
    input: u64,
    output: u64,
    n: usize,
    block_sums: u64,
    (grid, tiles_per_block): (u32, usize),
    stream: CudaStreamView,
) -> Result<()> {
    let (mut i, mut o, mut cnt, mut tpb, mut bs, mut g) = (
        input,
        output,
        n as u64,
        tiles_per_block as u64,
        block_sums,
        grid as u64,
    );
    let mut p1 = crate::kernel_params!(i, cnt, tpb, bs);
    // SAFETY: (three launches) parameters match the kernels' signatures
    // `(input, n, tiles_per_block, block_sums)`, `(data, m)` and
    // `(input, output, n, tiles_per_block, block_sums)`; memory per contract.
    unsafe {
        k.launch(T::KERNELS.scan_partials, grid, BLOCK, 0, stream, &mut p1)?;
        let mut p2 = crate::kernel_params!(bs, g);
        k.launch(T::KERNELS.scan_single, 1, BLOCK, 0, stream, &mut p2)?;
        let mut p3 = crate::kernel_params!(i, o, cnt, tpb, bs);
        k.launch(T::KERNELS.scan_down, grid, BLOCK, 0, stream, &mut p3)
    }
}

/// Exclusive sum of `input` into `output` on the policy's stream.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ; scratch allocation
/// errors; driver errors.
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
    if input.len() != output.len() {
        return Err(Error::InvalidArgument(format!(
            "exclusive_scan: input has {} elements, output {}",
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
        return Err(Error::InvalidArgument(
            "exclusive_scan: input and output overlap without being the same range".into(),
        ));
    }
    policy.launch_ordered("exclusive_scan", &[input.info(), output.info()], |stream| {
        let k = Kernels::current()?;
        let shape = plan(k, n);
        let sums = policy.scratch::<T>(shape.0 as usize)?;
        // SAFETY: the spans hold `n` elements and are disjoint (checked),
        // ordered with their owners' streams; `sums` holds `grid` elements
        // and is freed after the kernels in stream order.
        unsafe { scan_raw::<T>(k, a, b, n, sums.ptr().addr(), shape, stream) }
    })
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
    let n = data.len();
    if n == 0 {
        return Ok(());
    }
    let p = data.ptr().addr();
    policy.launch_ordered("exclusive_scan_in_place", &[data.info()], |stream| {
        let k = Kernels::current()?;
        let shape = plan(k, n);
        let sums = policy.scratch::<T>(shape.0 as usize)?;
        // SAFETY: in place is allowed by the kernels; ordering and `sums` as above.
        unsafe { scan_raw::<T>(k, p, p, n, sums.ptr().addr(), shape, stream) }
    })
}
