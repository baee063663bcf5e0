//! Sequence (iota): `out[i] = init + i * step`.

use kernel_abi::BLOCK;
use rmm::exec_policy::ExecPolicy;
use rmm::{DeviceSpanMut, Result};

use crate::kernels::Kernels;
use crate::numeric::Numeric;

/// Writes `init + i * step` into `out[i]` on the policy's stream (integers
/// wrap; floats compute `init + (i as T) * step` in `T`'s precision).
///
/// # Errors
/// [`rmm::Error::InvalidArgument`] for simulated memory (see
/// [`ExecPolicy::launch_ordered`]); driver errors (no GPU, launch failure).
///
/// ```no_run
/// use rmm::exec_policy::ExecPolicy;
/// # fn demo(mut out: rmm::DeviceSpanMut<'_, u32>) -> rmm::Result<()> {
/// rmm_suite::sequence::sequence(out.reborrow(), 10u32, 2, &ExecPolicy::default())?; // 10, 12, 14, ...
/// # Ok(()) }
/// ```
pub fn sequence<T: Numeric>(out: DeviceSpanMut<'_, T>, init: T, step: T, policy: &ExecPolicy) -> Result<()> {
    let n = out.len();
    if n == 0 {
        return Ok(());
    }
    policy.launch_ordered("sequence", &[out.info()], |stream| {
        if policy.is_dry_run() {
            return Ok(()); // no scratch, nothing to launch
        }
        let k = Kernels::current()?;
        let grid = k.grid_for(n, BLOCK);
        let (mut p, mut count, mut i, mut s) = (out.ptr().addr(), n as u64, init, step);
        let mut params = crate::kernel_params!(p, count, i, s);
        // SAFETY: parameters match `(out: *mut T, n: usize, init: T, step: T)`;
        // the span guarantees `n` writable elements it borrows exclusively,
        // ordered with its owner's stream.
        unsafe { k.launch(T::KERNELS.sequence, grid, BLOCK, 0, stream, &mut params) }
    })
}
