//! Stable LSD radix sort of `u32`, `i32`, `u64`, `i64`, `f32` and `f64`
//! keys, ascending or descending, alone or with `u32` values.
//!
//! 8-bit digits: 4 passes for 32-bit keys, 8 for 64-bit keys; each pass is
//! an upsweep (per-block digit counts), a scan of the counts and a
//! downsweep (stable in-block ranking and a coalesced scatter); see
//! `kernels/src/sort.rs`. Every temporary (one key buffer of `n`, one value
//! buffer for pairs, the digit counts, the counts scan's tile state) comes
//! from the policy's
//! [`scratch`](ExecPolicy::scratch), all allocated before the first launch,
//! so an allocation failure leaves the input untouched.
//!
//! # Order
//! Integers sort numerically. Floats sort by the total order of their bits:
//! `-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN` (so `-0.0` comes
//! before `+0.0`, and NaNs go to the ends according to their sign bit).
//! [`Order::Descending`] is the exact reverse order of keys; equal keys keep
//! their input order in both directions (the sort is stable).
//!
//! At most `u32::MAX` keys per call.

use kernel_abi::sort::{MODE_DESCENDING, MODE_FLOAT, MODE_SIGNED, RADIX};
use kernel_abi::BLOCK;
use rmm::exec_policy::ExecPolicy;
use rmm::{CudaStreamView, DeviceSpan, DeviceSpanMut, Error, Result, SpanInfo};

use crate::kernels::Kernels;
use crate::scan;

/// Sort direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// Smallest first.
    #[default]
    Ascending,
    /// Largest first.
    Descending,
}

/// A key type the radix sort supports. Sealed.
pub trait RadixKey: Copy + Send + Sync + sealed::Sealed + 'static {
    /// True for 64-bit keys.
    const WIDE: bool;
    /// The kernels' key transform (signed / float bits).
    const MODE: u32;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! radix_key {
    ($($t:ty: $wide:expr, $mode:expr);*) => {$(
        impl sealed::Sealed for $t {}
        impl RadixKey for $t {
            const WIDE: bool = $wide;
            const MODE: u32 = $mode;
        }
    )*};
}
radix_key!(
    u32: false, 0; i32: false, MODE_SIGNED; f32: false, MODE_FLOAT;
    u64: true, 0; i64: true, MODE_SIGNED; f64: true, MODE_FLOAT
);

fn overlaps(a: u64, a_bytes: usize, b: u64, b_bytes: usize) -> bool {
    a_bytes > 0 && b_bytes > 0 && a < b.saturating_add(b_bytes as u64) && b < a.saturating_add(a_bytes as u64)
}

/// Addresses of one sort: input and output keys (and values).
struct Buffers {
    keys_in: u64,
    keys_out: u64,
    vals: Option<(u64, u64)>,
}

/// Launch shape of one sort: downsweep tile size, tiles per block, blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    tile: usize,
    tiles_per_block: usize,
    grid: usize,
}

/// Contiguous ranges of whole tiles, at most `resident` blocks (one wave).
fn shape(n: usize, items: usize, resident: usize) -> Shape {
    let tile = BLOCK as usize * items;
    let tiles = n.div_ceil(tile).max(1);
    let tiles_per_block = tiles.div_ceil(resident.max(1));
    Shape {
        tile,
        tiles_per_block,
        grid: tiles.div_ceil(tiles_per_block),
    }
}

/// `(source, destination)` of pass `pass`: pass 0 reads the input; then the
/// data alternates between the scratch buffer (even passes write it) and the
/// output (odd passes), so the last pass of an even count ends in the output
/// and the input is only ever read.
fn pass_buffers(pass: u32, input: u64, output: u64, scratch: u64) -> (u64, u64) {
    match pass {
        0 => (input, scratch),
        p if p % 2 == 1 => (scratch, output),
        _ => (output, scratch),
    }
}

/// Refuses simulated memory and orders the passes with the spans' streams
/// ([`ExecPolicy::launch_ordered`]).
///
/// # Safety
/// `keys_in`/`keys_out` hold `n` keys of `K` (identical or disjoint);
/// values likewise hold `n` `u32`s; `spans` describe all of them; valid in
/// the order `launch_ordered` gives the policy's stream.
unsafe fn radix_sort<K: RadixKey>(
    b: Buffers,
    n: usize,
    order: Order,
    policy: &ExecPolicy,
    spans: &[SpanInfo<'_>],
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    if n > u32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "sort: {n} keys exceed the supported {} per call",
            u32::MAX
        )));
    }
    policy.launch_ordered("sort", spans, |stream| {
        // SAFETY: forwarded contract; `stream` is the policy's, ordered with
        // the spans' owners.
        unsafe { radix_passes::<K>(b, n, order, policy, stream) }
    })
}

/// The passes of [`radix_sort`] on `stream` (the policy's).
///
/// # Safety
/// As [`radix_sort`], with `1 <= n <= u32::MAX`.
unsafe fn radix_passes<K: RadixKey>(
    b: Buffers,
    n: usize,
    order: Order,
    policy: &ExecPolicy,
    stream: CudaStreamView<'_>,
) -> Result<()> {
    let k = Kernels::current()?;
    let key_bytes = std::mem::size_of::<K>();
    // Keys per thread per downsweep tile, as compiled into each kernel.
    let (items, up, down) = kernel_abi::sort::kernels(K::WIDE, b.vals.is_some());
    let resident = k.max_active_blocks(down, BLOCK)? as usize * k.multiprocessors as usize;
    let Shape {
        tile,
        tiles_per_block,
        grid,
    } = shape(n, items, resident);
    let counts_len = RADIX * grid;

    // Every temporary first: a failure here has touched nothing.
    let alt_keys = policy.scratch::<K>(n)?;
    let alt_vals = match b.vals {
        Some(_) => Some(policy.scratch::<u32>(n)?),
        None => None,
    };
    let counts = policy.scratch::<u32>(counts_len)?;
    let scan_state = policy.scratch::<u64>(scan::state_bytes_for::<u32>(counts_len) / 8)?;

    let mode = K::MODE
        | if order == Order::Descending {
            MODE_DESCENDING
        } else {
            0
        };
    let passes = key_bytes as u32; // one digit per byte: 4 or 8 (even)
    let alt_k = alt_keys.ptr().addr();
    let alt_v = alt_vals.as_ref().map(|s| s.ptr().addr()).unwrap_or(0);
    for pass in 0..passes {
        let (src_k, dst_k) = pass_buffers(pass, b.keys_in, b.keys_out, alt_k);
        let (src_v, dst_v) = match b.vals {
            None => (0, 0),
            Some((vi, vo)) => pass_buffers(pass, vi, vo, alt_v),
        };
        let (mut ks, mut kd, mut vs, mut vd) = (src_k, dst_k, src_v, dst_v);
        let (mut cnt, mut shift, mut md, mut tpb, mut kpb, mut cp) = (
            n as u64,
            pass * kernel_abi::sort::DIGIT_BITS,
            mode,
            tiles_per_block as u64,
            (tiles_per_block * tile) as u64,
            counts.ptr().addr(),
        );
        // Upsweep: `(keys, n, shift, mode, keys_per_block, counts)`.
        let mut up_params = crate::kernel_params!(ks, cnt, shift, md, kpb, cp);
        // SAFETY: parameters match the kernels' signatures; buffers hold `n`
        // keys (values) and `counts` 256 * grid words; the scan runs in place
        // on `counts` with `scan_state` sized for it (scratch: 8-byte
        // aligned, used by nothing else; the scan clears it per launch);
        // stream ordered.
        unsafe {
            k.launch(up, grid as u32, BLOCK, 0, stream, &mut up_params)?;
            scan::scan_raw::<u32>(
                k,
                cp,
                cp,
                counts_len,
                scan::Mode::Exclusive,
                scan_state.ptr(),
                stream,
            )?;
            if b.vals.is_some() {
                // `(keys_in, keys_out, vals_in, vals_out, n, shift, mode, tiles_per_block, offsets)`.
                let mut p = crate::kernel_params!(ks, kd, vs, vd, cnt, shift, md, tpb, cp);
                k.launch(down, grid as u32, BLOCK, 0, stream, &mut p)?;
            } else {
                // `(keys_in, keys_out, n, shift, mode, tiles_per_block, offsets)`.
                let mut p = crate::kernel_params!(ks, kd, cnt, shift, md, tpb, cp);
                k.launch(down, grid as u32, BLOCK, 0, stream, &mut p)?;
            }
        }
    }
    // The scratch buffers drop here: freed in stream order after the passes.
    Ok(())
}

/// Sorts `keys` in place (stable) on the policy's stream.
///
/// # Errors
/// Scratch allocation errors (e.g. [`Error::OutOfMemory`], with `keys`
/// untouched); [`Error::InvalidArgument`] for more than `u32::MAX` keys;
/// driver errors.
///
/// ```no_run
/// use rmm_suite::sort::{sort_keys, Order};
/// # fn demo(mut keys: rmm::DeviceSpanMut<'_, f32>) -> rmm::Result<()> {
/// sort_keys(keys.reborrow(), Order::Ascending, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn sort_keys<K: RadixKey>(keys: DeviceSpanMut<'_, K>, order: Order, policy: &ExecPolicy) -> Result<()> {
    let p = keys.ptr().addr();
    let b = Buffers {
        keys_in: p,
        keys_out: p,
        vals: None,
    };
    // SAFETY: the span holds `n` keys and is borrowed exclusively.
    unsafe { radix_sort::<K>(b, keys.len(), order, policy, &[keys.info()]) }
}

/// Sorts `input` into `output` (stable), leaving `input` unchanged.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ or the spans overlap;
/// otherwise as [`sort_keys`].
///
/// ```no_run
/// use rmm_suite::sort::{sort_keys_copy, Order};
/// # fn demo(a: rmm::DeviceSpan<'_, u64>, mut b: rmm::DeviceSpanMut<'_, u64>) -> rmm::Result<()> {
/// sort_keys_copy(a, b.reborrow(), Order::Descending, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn sort_keys_copy<K: RadixKey>(
    input: DeviceSpan<'_, K>,
    output: DeviceSpanMut<'_, K>,
    order: Order,
    policy: &ExecPolicy,
) -> Result<()> {
    if input.len() != output.len() {
        return Err(Error::InvalidArgument(format!(
            "sort: input has {} keys, output {}",
            input.len(),
            output.len()
        )));
    }
    if overlaps(
        input.ptr().addr(),
        input.size_bytes(),
        output.ptr().addr(),
        output.size_bytes(),
    ) {
        return Err(Error::InvalidArgument("sort: input and output overlap".into()));
    }
    let b = Buffers {
        keys_in: input.ptr().addr(),
        keys_out: output.ptr().addr(),
        vals: None,
    };
    // SAFETY: both spans hold `n` keys and are disjoint (checked).
    unsafe { radix_sort::<K>(b, input.len(), order, policy, &[input.info(), output.info()]) }
}

/// Sorts `keys` in place and permutes `values` with them (stable: values of
/// equal keys keep their input order).
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ or the spans overlap;
/// otherwise as [`sort_keys`].
///
/// ```no_run
/// use rmm_suite::sort::{sort_pairs, Order};
/// # fn demo(mut k: rmm::DeviceSpanMut<'_, i32>, mut v: rmm::DeviceSpanMut<'_, u32>) -> rmm::Result<()> {
/// sort_pairs(k.reborrow(), v.reborrow(), Order::Ascending, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn sort_pairs<K: RadixKey>(
    keys: DeviceSpanMut<'_, K>,
    values: DeviceSpanMut<'_, u32>,
    order: Order,
    policy: &ExecPolicy,
) -> Result<()> {
    if keys.len() != values.len() {
        return Err(Error::InvalidArgument(format!(
            "sort_pairs: {} keys but {} values",
            keys.len(),
            values.len()
        )));
    }
    if overlaps(
        keys.ptr().addr(),
        keys.size_bytes(),
        values.ptr().addr(),
        values.size_bytes(),
    ) {
        return Err(Error::InvalidArgument(
            "sort_pairs: keys and values overlap".into(),
        ));
    }
    let (kp, vp) = (keys.ptr().addr(), values.ptr().addr());
    let b = Buffers {
        keys_in: kp,
        keys_out: kp,
        vals: Some((vp, vp)),
    };
    // SAFETY: both spans hold `n` elements, are disjoint (checked) and
    // borrowed exclusively.
    unsafe { radix_sort::<K>(b, keys.len(), order, policy, &[keys.info(), values.info()]) }
}

/// Sorts `(keys_in, values_in)` into `(keys_out, values_out)` (stable),
/// leaving the inputs unchanged.
///
/// # Errors
/// [`Error::InvalidArgument`] when the lengths differ or any two spans
/// overlap; otherwise as [`sort_keys`].
///
/// ```no_run
/// use rmm_suite::sort::{sort_pairs_copy, Order};
/// # fn demo(k: rmm::DeviceSpan<'_, u32>, v: rmm::DeviceSpan<'_, u32>,
/// #         mut ko: rmm::DeviceSpanMut<'_, u32>, mut vo: rmm::DeviceSpanMut<'_, u32>) -> rmm::Result<()> {
/// sort_pairs_copy(k, v, ko.reborrow(), vo.reborrow(), Order::Ascending, &rmm::exec_policy::ExecPolicy::default())?;
/// # Ok(()) }
/// ```
pub fn sort_pairs_copy<K: RadixKey>(
    keys_in: DeviceSpan<'_, K>,
    values_in: DeviceSpan<'_, u32>,
    keys_out: DeviceSpanMut<'_, K>,
    values_out: DeviceSpanMut<'_, u32>,
    order: Order,
    policy: &ExecPolicy,
) -> Result<()> {
    let n = keys_in.len();
    if values_in.len() != n || keys_out.len() != n || values_out.len() != n {
        return Err(Error::InvalidArgument(format!(
            "sort_pairs: lengths differ (keys {n}, values {}, keys out {}, values out {})",
            values_in.len(),
            keys_out.len(),
            values_out.len()
        )));
    }
    let spans = [
        (keys_in.ptr().addr(), keys_in.size_bytes()),
        (values_in.ptr().addr(), values_in.size_bytes()),
        (keys_out.ptr().addr(), keys_out.size_bytes()),
        (values_out.ptr().addr(), values_out.size_bytes()),
    ];
    for i in 0..4 {
        for j in i + 1..4 {
            if overlaps(spans[i].0, spans[i].1, spans[j].0, spans[j].1) {
                return Err(Error::InvalidArgument("sort_pairs: buffers overlap".into()));
            }
        }
    }
    let b = Buffers {
        keys_in: spans[0].0,
        keys_out: spans[2].0,
        vals: Some((spans[1].0, spans[3].0)),
    };
    let infos = [
        keys_in.info(),
        values_in.info(),
        keys_out.info(),
        values_out.info(),
    ];
    // SAFETY: all four spans hold `n` elements and are disjoint (checked).
    unsafe { radix_sort::<K>(b, n, order, policy, &infos) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_cover_every_key_with_one_wave() {
        for n in [
            1usize,
            2,
            6143,
            6144,
            6145,
            1 << 20,
            (1 << 28) + 3,
            u32::MAX as usize,
        ] {
            for items in [8, 16, 24] {
                for resident in [1usize, 3, 264, 528] {
                    let s = shape(n, items, resident);
                    let span = s.tiles_per_block * s.tile;
                    assert_eq!(s.tile, BLOCK as usize * items);
                    assert!(s.grid <= resident, "{n} {items} {resident}: {s:?}");
                    assert!(s.grid * span >= n, "{n} {items} {resident}: {s:?}");
                    assert!(
                        (s.grid - 1) * span < n,
                        "empty block: {n} {items} {resident}: {s:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn passes_read_the_input_once_and_end_in_the_output() {
        let (input, output, scratch) = (0x1000, 0x2000, 0x3000);
        for passes in [4u32, 8] {
            let mut current = input;
            for pass in 0..passes {
                let (src, dst) = pass_buffers(pass, input, output, scratch);
                assert_eq!(src, current, "pass {pass} reads what the previous pass wrote");
                assert_ne!(dst, input, "pass {pass} writes the input");
                assert_ne!(src, dst);
                current = dst;
            }
            assert_eq!(current, output);
        }
        // In place: input == output.
        let mut current = input;
        for pass in 0..4 {
            let (src, dst) = pass_buffers(pass, input, input, scratch);
            assert_eq!(src, current);
            assert_ne!(src, dst);
            current = dst;
        }
        assert_eq!(current, input);
    }

    #[test]
    fn overlap_check() {
        assert!(overlaps(0x1000, 16, 0x100c, 4));
        assert!(!overlaps(0x1000, 16, 0x1010, 4));
        assert!(!overlaps(0x1000, 0, 0x1000, 4));
    }
}
