//! # rmm-suite: Rust GPU kernels that draw their memory from `rmm`
//!
//! The kernels live in `kernels/` (a `#![no_std]` crate compiled to PTX by
//! `build.rs` with rustc's NVPTX backend, and to sm_80 and sm_90 machine
//! code where NVIDIA's `ptxas` is at hand); this crate embeds both, loads
//! the image that fits each device once ([`kernel_image`]) and offers typed
//! host functions that launch the kernels.
//!
//! | Item | What |
//! |---|---|
//! | [`kernel_abi`] | kernel names, block and tile sizes, mode bits (shared with `kernels/`) |
//! | [`kernels::PTX`] | the embedded PTX text |
//! | [`kernel_image`] | the embedded machine code (sm_80, sm_90) and which image a device loads |
//! | [`kernels::Kernels`] | the loaded module of one device, kernels by name |
//! | [`fill`] | fill device memory with a 1, 2, 4 or 8-byte value |
//! | [`copy`] | device-to-device copies: the driver's (`cuMemcpyAsync`) or the copy kernel |
//! | [`containers`] | fill and copy over `rmm`'s containers (length checked, stream ordered) |
//! | [`sequence`] | iota: `init + i * step` |
//! | [`reduce`] | sum, min, max to a host value |
//! | [`scan`] | exclusive and inclusive prefix sums (single pass, decoupled look-back) |
//! | [`sort`] | stable LSD radix sort of keys and key-value pairs |
//!
//! Algorithms take [`rmm::DeviceSpan`]/[`rmm::DeviceSpanMut`] views and an
//! [`rmm::exec_policy::ExecPolicy`] (stream + scratch resource).
//!
//! # Stream capture
//! Every launcher can be captured into a CUDA graph ([`rmm::graph`],
//! e.g. [`ExecPolicy::capture`](rmm::exec_policy::ExecPolicy::capture))
//! and replayed: each enqueues only kernels, `cuMemsetAsync`,
//! device-to-device `cuMemcpyAsync` and stream-ordered scratch from the
//! policy, which the resource keeps for the graph (graph memory nodes for
//! `cuda_async`, a graph-private pool for rmm's pools). The exceptions and
//! rules:
//!
//! | Launcher | Under capture |
//! |---|---|
//! | [`reduce::sum`], [`reduce::min`], [`reduce::max`] | refused with [`rmm::Error::Capture`] (a host value needs a synchronisation); use [`reduce::sum_into`] and friends |
//! | every launcher | spans of streams outside the capture are synchronised at capture time; spans of a capturing stream from a policy outside that capture are refused ([`ExecPolicy::launch_ordered`](rmm::exec_policy::ExecPolicy::launch_ordered)) |
//! | first use | the kernels module loads and resolves every kernel in relaxed capture mode ([`kernels::Kernels::current`]) |
//!
//! A replay writes the addresses captured: buffers the graph uses must stay
//! allocated while it may run, and new input goes into the same buffers
//! before each launch.
//!
//! # Dry run
//! Under a dry-run policy ([`ExecPolicy::dry_run`](rmm::exec_policy::ExecPolicy::dry_run),
//! module [`rmm::dry_run`]) the policy launchers ([`sort`], [`scan`],
//! [`reduce`], [`sequence`]) take every scratch allocation exactly as on
//! the GPU (same sizes, order and frees) and then enqueue nothing and make
//! no driver call; their spans may be of simulated memory. That answers
//! "how much scratch, and how small a pool" without a GPU. The functions
//! `scratch_bytes` of [`sort`], [`scan`] and [`reduce`] give one call's
//! scratch directly. [`fill`], [`copy`] and [`containers`] take no policy and
//! no scratch; they have no dry-run form.
//!
//! ```
//! use rmm::dry_run::DryRun;
//! use rmm::mr::SimulatedMemoryResource;
//! use rmm::{CudaStreamView, DeviceUvector};
//! use rmm_suite::sort::{sort_pairs, Order};
//! let data = SimulatedMemoryResource::new(usize::MAX); // no GPU needed
//! let n = 1 << 24;
//! let mut keys = DeviceUvector::<u32>::with_resource(n, CudaStreamView::DEFAULT, data.clone())?;
//! let mut vals = DeviceUvector::<u32>::with_resource(n, CudaStreamView::DEFAULT, data)?;
//! let report = DryRun::default().report(|policy| {
//!     sort_pairs(keys.as_span_mut(), vals.as_span_mut(), Order::Ascending, policy)
//! })?;
//! assert_eq!(report.peak_scratch_bytes, rmm_suite::sort::scratch_bytes::<u32>(n, true));
//! assert!(report.smallest_pool_bytes >= report.peak_scratch_bytes);
//! assert!(!rmm::device::driver_called());
//! # Ok::<(), rmm::Error>(())
//! ```

pub mod containers;
pub mod copy;
pub mod fill;
pub mod kernel_image;
pub mod kernels;
pub mod numeric;
pub mod reduce;
pub mod scan;
pub mod sequence;
pub mod sort;

pub use kernel_abi;
pub use rmm;

/// The README's examples, compiled as doc tests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The examples of docs/dry-run.md, compiled as doc tests.
#[doc = include_str!("../docs/dry-run.md")]
#[cfg(doctest)]
pub struct DryRunDocDoctests;

/// The examples of docs/graphs.md, compiled as doc tests.
#[doc = include_str!("../docs/graphs.md")]
#[cfg(doctest)]
pub struct GraphsDocDoctests;
