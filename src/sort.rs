//! Stable LSD radix sort of `u32`, `i32`, `u64`, `i64`, `f32` and `f64`
//! keys, ascending or descending, alone or with `u32` values.
//!
//! 8-bit digits: 4 passes for 32-bit keys, 8 for 64-bit keys, in onesweep
//! form: one launch counts the digits of every pass in one read of the
//! keys, a second turns the counts into each digit's first output position,
//! then each pass is one launch that reads and writes every key once (its
//! tiles find their output positions by decoupled look-back); see
//! `kernels/src/sort.rs`. Every temporary (one key buffer of `n`, one value
//! buffer for pairs, the digit counts and positions, the passes' look-back
//! state) comes from the policy's
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

use kernel_abi::sort::{
    portion_tiles, state_words, tile, HIST_BATCH, MODE_DESCENDING, MODE_FLOAT, MODE_SIGNED, OFFSETS, RADIX,
};
use kernel_abi::BLOCK;
use rmm::exec_policy::ExecPolicy;
use rmm::{CudaStreamView, DeviceSpan, DeviceSpanMut, Error, Result, SpanInfo};

use crate::kernels::Kernels;

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

/// Tiling of one sort: tiles of `BLOCK * items` keys, launched per pass in
/// portions of at most `portion_tiles` tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Plan {
    tiles: usize,
    portion_tiles: usize,
}

impl Plan {
    fn new(n: usize, items: usize) -> Plan {
        Plan {
            tiles: n.div_ceil(tile(items)),
            portion_tiles: portion_tiles(items),
        }
    }

    fn portions(&self) -> usize {
        self.tiles.div_ceil(self.portion_tiles)
    }

    /// `(first tile, tiles)` of portion `q`.
    fn portion(&self, q: usize) -> (usize, usize) {
        let first = q * self.portion_tiles;
        (first, self.portion_tiles.min(self.tiles - first))
    }

    /// Words between two passes' rows of digit positions: one row of
    /// `RADIX` per portion plus the one the last portion writes.
    fn bases_stride(&self) -> usize {
        (self.portions() + 1) * RADIX
    }
}

/// The scratch of one sort, in the order it is taken (element counts):
/// the alternate keys (`K`), the alternate values (`u32`, pairs only), the
/// digit counts, the digit positions and the look-back state (`u32`s). All
/// of it is live at once, so its sum is the sort's peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ScratchPlan {
    keys: usize,
    values: Option<usize>,
    hist: usize,
    bases: usize,
    state: usize,
}

impl ScratchPlan {
    fn new<K: RadixKey>(n: usize, pairs: bool, plan: &Plan) -> ScratchPlan {
        let passes = std::mem::size_of::<K>(); // one digit per byte
        ScratchPlan {
            keys: n,
            values: pairs.then_some(n),
            hist: passes * RADIX,
            bases: passes * plan.bases_stride(),
            state: state_words(plan.portion_tiles.min(plan.tiles)),
        }
    }

    fn bytes<K>(&self) -> usize {
        let words = self.values.unwrap_or(0) + self.hist + self.bases + self.state;
        self.keys * std::mem::size_of::<K>() + words * 4
    }
}

/// Bytes of scratch one sort of `n` keys of `K` takes from its policy
/// (`pairs`: with `u32` values): the sum of its allocations, which are all
/// live at once, so its peak; 0 for no keys. As many bytes as the keys
/// (and values) plus the digit counts, positions and look-back state (for
/// `u32` keys about 180 KiB at 2^20 keys, 43 MiB at 2^30); a pool rounds
/// each of its 4 or 5 allocations up to 256 bytes.
///
/// ```
/// use rmm_suite::sort::scratch_bytes;
/// let n = 1 << 20;
/// assert!(scratch_bytes::<u32>(n, false) >= 4 * n);
/// assert!(scratch_bytes::<u32>(n, true) >= 8 * n);
/// assert_eq!(scratch_bytes::<f64>(0, true), 0);
/// ```
pub fn scratch_bytes<K: RadixKey>(n: usize, pairs: bool) -> usize {
    if n == 0 {
        return 0;
    }
    let (items, _, _) = kernel_abi::sort::kernels(K::WIDE, pairs, true);
    ScratchPlan::new::<K>(n, pairs, &Plan::new(n, items)).bytes::<K>()
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
/// ([`ExecPolicy::launch_ordered`]); in a dry run takes the scratch and
/// launches nothing.
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
    let passes = std::mem::size_of::<K>(); // one digit per byte: 4 or 8 (even)
    let mode = K::MODE
        | if order == Order::Descending {
            MODE_DESCENDING
        } else {
            0
        };
    let (items, histogram, onesweep) = kernel_abi::sort::kernels(K::WIDE, b.vals.is_some(), mode == 0);
    let plan = Plan::new(n, items);
    let stride = plan.bases_stride();
    let sizes = ScratchPlan::new::<K>(n, b.vals.is_some(), &plan);

    // Every temporary first: a failure here has touched nothing.
    let alt_keys = policy.scratch::<K>(sizes.keys)?;
    let alt_vals = match sizes.values {
        Some(len) => Some(policy.scratch::<u32>(len)?),
        None => None,
    };
    let hist = policy.scratch::<u32>(sizes.hist)?;
    let bases = policy.scratch::<u32>(sizes.bases)?;
    let state = policy.scratch::<u32>(sizes.state)?;
    if policy.is_dry_run() {
        // The scratch drops here, in the order it does after the passes.
        return Ok(());
    }

    let k = Kernels::current()?;
    let resident = k.max_active_blocks(histogram, BLOCK)? as usize * k.multiprocessors as usize;
    let hist_grid = n.div_ceil(BLOCK as usize * HIST_BATCH).min(resident.max(1)) as u32;
    let (mut keys, mut cnt, mut md, mut hp, mut bp, mut st) = (
        b.keys_in,
        n as u64,
        mode,
        hist.ptr().addr(),
        bases.ptr().addr(),
        stride as u64,
    );
    let mut hist_params = crate::kernel_params!(keys, cnt, md, hp);
    let mut offsets_params = crate::kernel_params!(hp, bp, st);
    // SAFETY: the memset covers `hist`; the parameters match the kernels'
    // signatures `(keys, n, mode, hist)` and `(hist, bases, stride)`; the
    // input holds `n` keys, `hist` passes * RADIX words, `bases` passes *
    // stride; one offsets block per pass; stream ordered.
    unsafe {
        rmm::launch::memset_async(hist.ptr(), 0, 4, passes * RADIX, stream)?;
        k.launch(histogram, hist_grid, BLOCK, 0, stream, &mut hist_params)?;
        k.launch(OFFSETS, passes as u32, BLOCK, 0, stream, &mut offsets_params)?;
    }

    let alt_k = alt_keys.ptr().addr();
    let alt_v = alt_vals.as_ref().map(|s| s.ptr().addr()).unwrap_or(0);
    for pass in 0..passes as u32 {
        let (src_k, dst_k) = pass_buffers(pass, b.keys_in, b.keys_out, alt_k);
        let (src_v, dst_v) = match b.vals {
            None => (0, 0),
            Some((vi, vo)) => pass_buffers(pass, vi, vo, alt_v),
        };
        for q in 0..plan.portions() {
            let (first, tiles) = plan.portion(q);
            let row = bases.ptr().addr() + 4 * (pass as usize * stride + q * RADIX) as u64;
            let (mut ks, mut kd, mut vs, mut vd) = (src_k, dst_k, src_v, dst_v);
            let (mut cnt, mut ft, mut shift, mut md, mut sp, mut b_in, mut b_out) = (
                n as u64,
                first as u64,
                pass * kernel_abi::sort::DIGIT_BITS,
                mode,
                state.ptr().addr(),
                row,
                row + 4 * RADIX as u64,
            );
            // SAFETY: the memset zeroes the state's words for `tiles` tiles
            // (it holds that many: `tiles <= portion_tiles` and `<= plan.tiles`);
            // the parameters match the kernels' signatures; one block per
            // tile of the portion; buffers hold `n` keys (values), disjoint
            // between source and destination (`pass_buffers`); the row and
            // the next one lie inside `bases`; stream ordered.
            unsafe {
                rmm::launch::memset_async(state.ptr(), 0, 4, state_words(tiles), stream)?;
                if b.vals.is_some() {
                    // `(keys_in, keys_out, vals_in, vals_out, n, first_tile, shift, mode, state, bases_in, bases_out)`.
                    let mut p = crate::kernel_params!(ks, kd, vs, vd, cnt, ft, shift, md, sp, b_in, b_out);
                    k.launch(onesweep, tiles as u32, BLOCK, 0, stream, &mut p)?;
                } else {
                    // `(keys_in, keys_out, n, first_tile, shift, mode, state, bases_in, bases_out)`.
                    let mut p = crate::kernel_params!(ks, kd, cnt, ft, shift, md, sp, b_in, b_out);
                    k.launch(onesweep, tiles as u32, BLOCK, 0, stream, &mut p)?;
                }
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
    fn portions_cover_every_tile_once() {
        use kernel_abi::sort::{ITEMS_32, ITEMS_32_PAIRS, ITEMS_64, ITEMS_64_PAIRS, PORTION_KEYS};
        for n in [
            1usize,
            6143,
            6144,
            6145,
            1 << 20,
            PORTION_KEYS,
            PORTION_KEYS + 1,
            u32::MAX as usize,
        ] {
            for items in [ITEMS_32, ITEMS_32_PAIRS, ITEMS_64, ITEMS_64_PAIRS] {
                let plan = Plan::new(n, items);
                assert_eq!(plan.tiles, n.div_ceil(BLOCK as usize * items));
                let mut next = 0;
                for q in 0..plan.portions() {
                    let (first, tiles) = plan.portion(q);
                    assert_eq!(first, next, "{n} {items}");
                    assert!(tiles >= 1 && tiles <= plan.portion_tiles);
                    assert!(tiles * tile(items) <= PORTION_KEYS);
                    next += tiles;
                }
                assert_eq!(next, plan.tiles, "{n} {items}");
                assert_eq!(plan.bases_stride(), (plan.portions() + 1) * RADIX);
            }
        }
        assert_eq!(Plan::new(PORTION_KEYS + 1, ITEMS_64).portions(), 2);
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
