//! Resources by name: the one factory behind `rmm-replay --resource`, the
//! demo's resources and the allocator benchmark's rows.
//!
//! A name is `[ADAPTOR_]...BASE[_unchecked]`:
//!
//! * `BASE` is one of [`BASES`]: `simulated` (a simulated device of
//!   [`ByNameOptions::simulated_size`] bytes), `cuda`, `cuda_async`,
//!   `cuda_async_managed` (the device's managed driver pool, CUDA 13),
//!   `managed`, `pinned`, `pinned_pool` (a `pool` over `pinned`: the
//!   pinned host memory pool), `vmpool`, the system memory resources
//!   `system` and `sam_headroom` (keeping [`ByNameOptions::sam_headroom`]
//!   bytes of device memory free; both need a GPU that can access pageable
//!   memory), and the sub-allocators `pool`, `binning`
//!   (bins of 256 KiB .. 4 MiB over a `pool`), `arena` and `fixed_size`
//!   (1 MiB blocks). A sub-allocator is over `cuda`, or over the simulated
//!   device when its name starts with `simulated-` (`simulated-pool`, ...) or
//!   [`ByNameOptions::simulate`] is set; `simulated-system` is
//!   [`SystemMemoryResource::without_gpu`] and `simulated-sam_headroom`
//!   [`SamHeadroomMemoryResource::simulated`] over the simulated device;
//! * each `ADAPTOR_` prefix (one of [`ADAPTORS`]: `statistics`, `tracking`,
//!   `thread_safe`) wraps what follows, so `statistics_pool` is a
//!   [`StatisticsAdaptor`] over a pool;
//! * `_unchecked` trusts frees instead of checking them (`unchecked_frees`
//!   on every layer that has it), to measure what the check costs; the
//!   resources without the check (`cuda`, `cuda_async`, `cuda_async_managed`, `managed`,
//!   `pinned`, `simulated`) and the system memory resources (which always
//!   check) refuse it.
//!
//! Sizes come from [`ByNameOptions`]; what is not set there is the
//! resource's default, except over the simulated device, where a pool may
//! grow to the whole device and an arena takes the whole device.
//!
//! ```
//! use rmm_replay::by_name::{resource, ByNameOptions};
//! use rmm::mr::MemoryResource;
//! let opts = ByNameOptions::default().simulated_size(1 << 30);
//! let pool = resource("statistics_simulated-pool", &opts)?;
//! let p = pool.allocate_sync(1000, 256)?;
//! // SAFETY: `p` came from `pool` with these arguments.
//! unsafe { pool.deallocate_sync(p, 1000, 256) };
//! let e = resource("bogus", &opts).unwrap_err();
//! assert!(e.to_string().contains("known: simulated, cuda"));
//! # Ok::<(), rmm::Error>(())
//! ```

#![forbid(unsafe_code)]

use rmm::align::align_down;
use rmm::mr::{
    ArenaMemoryResource, ArenaOptions, BinningMemoryResource, CudaAsyncManagedMemoryResource,
    CudaAsyncMemoryResource, CudaMemoryResource, FixedSizeMemoryResource, FixedSizeOptions,
    ManagedMemoryResource, PinnedHostMemoryResource, PoolMemoryResource, PoolOptions,
    SamHeadroomMemoryResource, SharedResource, SimulatedMemoryResource, StatisticsAdaptor,
    SystemMemoryResource, ThreadSafeAdaptor, TrackingAdaptor, VirtualPoolMemoryResource, VirtualPoolOptions,
};
use rmm::{Error, Result};

/// The base resources a name can end in (see the module docs).
pub const BASES: &[&str] = &[
    "simulated",
    "cuda",
    "cuda_async",
    "cuda_async_managed",
    "managed",
    "pinned",
    "pinned_pool",
    "vmpool",
    "system",
    "sam_headroom",
    "pool",
    "binning",
    "arena",
    "fixed_size",
    "simulated-pool",
    "simulated-binning",
    "simulated-arena",
    "simulated-fixed_size",
    "simulated-system",
    "simulated-sam_headroom",
];

/// The adaptor prefixes (`statistics_pool`, `tracking_thread_safe_arena`, ...).
pub const ADAPTORS: &[&str] = &["statistics", "tracking", "thread_safe"];

/// The suffix that trusts frees instead of checking them.
pub const UNCHECKED_SUFFIX: &str = "_unchecked";

/// Sizes and switches of the resources [`resource`] builds.
///
/// ```
/// use rmm_replay::by_name::ByNameOptions;
/// let opts = ByNameOptions::default().simulate(true).pool_initial_size(1 << 30);
/// assert_eq!((opts.simulate, opts.pool_initial_size), (true, Some(1 << 30)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByNameOptions {
    /// Bytes of the simulated device (`simulated`, `simulated-*`); default 80 GiB.
    pub simulated_size: usize,
    /// Put every sub-allocator over the simulated device, as if each name
    /// started with `simulated-`; GPU-only resources then refuse to be built.
    pub simulate: bool,
    /// A pool's initial size (rounded down to 256 bytes); `None`: 0, the pool grows on demand.
    pub pool_initial_size: Option<usize>,
    /// A pool's maximum size; `None`: no limit (over the simulated device: the device).
    pub pool_maximum_size: Option<usize>,
    /// An arena's size; `None`: [`ArenaOptions`]' default (over the simulated device: the device).
    pub arena_size: Option<usize>,
    /// Trust frees on every layer, as the `_unchecked` suffix does.
    pub unchecked_frees: bool,
    /// Device memory `sam_headroom` keeps free; default 1 GiB.
    pub sam_headroom: usize,
}

impl Default for ByNameOptions {
    fn default() -> Self {
        ByNameOptions {
            simulated_size: 80 << 30,
            simulate: false,
            pool_initial_size: None,
            pool_maximum_size: None,
            arena_size: None,
            unchecked_frees: false,
            sam_headroom: 1 << 30,
        }
    }
}

impl ByNameOptions {
    /// Sets [`simulated_size`](Self::simulated_size).
    pub fn simulated_size(mut self, bytes: usize) -> Self {
        self.simulated_size = bytes;
        self
    }
    /// Sets [`simulate`](Self::simulate).
    pub fn simulate(mut self, simulate: bool) -> Self {
        self.simulate = simulate;
        self
    }
    /// Sets [`pool_initial_size`](Self::pool_initial_size).
    pub fn pool_initial_size(mut self, bytes: usize) -> Self {
        self.pool_initial_size = Some(bytes);
        self
    }
    /// Sets [`pool_maximum_size`](Self::pool_maximum_size).
    pub fn pool_maximum_size(mut self, bytes: usize) -> Self {
        self.pool_maximum_size = Some(bytes);
        self
    }
    /// Sets [`arena_size`](Self::arena_size).
    pub fn arena_size(mut self, bytes: usize) -> Self {
        self.arena_size = Some(bytes);
        self
    }
    /// Sets [`sam_headroom`](Self::sam_headroom).
    pub fn sam_headroom(mut self, bytes: usize) -> Self {
        self.sam_headroom = bytes;
        self
    }
    /// Sets [`unchecked_frees`](Self::unchecked_frees).
    pub fn unchecked_frees(mut self, unchecked: bool) -> Self {
        self.unchecked_frees = unchecked;
        self
    }
}

/// The names [`resource`] knows, for help texts and errors.
///
/// ```
/// assert!(rmm_replay::by_name::known_names().contains("simulated-pool"));
/// ```
pub fn known_names() -> String {
    format!(
        "{}; adaptor prefixes {}; suffix {UNCHECKED_SUFFIX}",
        BASES.join(", "),
        ADAPTORS
            .iter()
            .map(|a| format!("{a}_"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Builds the resource `name` names (see the module docs).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown name (the message lists the
/// known ones) or `_unchecked` on a resource without the check;
/// [`Error::Logic`] when a GPU resource is asked for without a usable GPU
/// (or with [`ByNameOptions::simulate`]); the resource's own errors.
pub fn resource(name: &str, opts: &ByNameOptions) -> Result<SharedResource> {
    let (base, unchecked) = match name.trim().strip_suffix(UNCHECKED_SUFFIX) {
        Some(base) => (base, true),
        None => (name.trim(), opts.unchecked_frees),
    };
    layer(name, base, unchecked, opts)
}

/// Builds `rest` of `name`: adaptor prefixes, then the base.
fn layer(name: &str, rest: &str, unchecked: bool, opts: &ByNameOptions) -> Result<SharedResource> {
    for &adaptor in ADAPTORS {
        let Some(inner) = rest.strip_prefix(adaptor).and_then(|r| r.strip_prefix('_')) else {
            continue;
        };
        let upstream = layer(name, inner, unchecked, opts)?;
        return Ok(match adaptor {
            "statistics" => {
                let stats = StatisticsAdaptor::new(upstream);
                SharedResource::new(if unchecked { stats.unchecked_frees() } else { stats })
            }
            "tracking" => SharedResource::new(TrackingAdaptor::new(upstream, false)),
            _ => SharedResource::new(ThreadSafeAdaptor::new(upstream)),
        });
    }
    base(name, rest, unchecked, opts)
}

/// Something over which sub-allocators are built: cuda or the simulated device.
fn upstream(simulated: bool, opts: &ByNameOptions) -> SharedResource {
    if simulated {
        SharedResource::new(SimulatedMemoryResource::new(opts.simulated_size))
    } else {
        SharedResource::new(CudaMemoryResource::new())
    }
}

fn pool(
    simulated: bool,
    unchecked: bool,
    opts: &ByNameOptions,
) -> Result<PoolMemoryResource<SharedResource>> {
    pool_over(upstream(simulated, opts), simulated, unchecked, opts)
}

fn pool_over(
    upstream: SharedResource,
    simulated: bool,
    unchecked: bool,
    opts: &ByNameOptions,
) -> Result<PoolMemoryResource<SharedResource>> {
    let mut o = PoolOptions::default().unchecked_frees(unchecked);
    if let Some(initial) = opts.pool_initial_size {
        o = o.initial_pool_size(align_down(initial, 256));
    }
    match opts.pool_maximum_size {
        Some(max) => o = o.maximum_pool_size(align_down(max, 256)),
        None if simulated => o = o.maximum_pool_size(align_down(opts.simulated_size, 256)),
        None => {}
    }
    PoolMemoryResource::new(upstream, o)
}

fn base(name: &str, base: &str, unchecked: bool, opts: &ByNameOptions) -> Result<SharedResource> {
    let (explicit, base) = match base.strip_prefix("simulated-") {
        Some(b) => (true, b),
        None => (false, base),
    };
    let simulated = explicit || opts.simulate;
    let gpu_only = matches!(
        base,
        "cuda" | "cuda_async" | "cuda_async_managed" | "managed" | "pinned" | "pinned_pool" | "vmpool"
    );
    let sub_allocator = matches!(base, "pool" | "binning" | "arena" | "fixed_size");
    // Resources with a form over the simulated device.
    let simulable = sub_allocator || matches!(base, "system" | "sam_headroom");
    if !(gpu_only || simulable || base == "simulated") || (explicit && !simulable) {
        return Err(Error::InvalidArgument(format!(
            "unknown resource {name:?}; known: {}",
            known_names()
        )));
    }
    if unchecked && !(sub_allocator || matches!(base, "vmpool" | "pinned_pool")) {
        return Err(Error::InvalidArgument(format!(
            "resource {name:?}: {base} does not check frees, so it has no {UNCHECKED_SUFFIX} form"
        )));
    }
    if (gpu_only || (simulable && !simulated)) && (simulated || !rmm::device::is_available()) {
        return Err(Error::Logic(format!(
            "resource {name:?} needs a GPU and {}",
            if simulated {
                "the simulated device was asked for"
            } else {
                "none is usable"
            }
        )));
    }
    Ok(match base {
        "simulated" => SharedResource::new(SimulatedMemoryResource::new(opts.simulated_size)),
        "cuda" => SharedResource::new(CudaMemoryResource::new()),
        "cuda_async" => SharedResource::new(CudaAsyncMemoryResource::new()?),
        "cuda_async_managed" => SharedResource::new(CudaAsyncManagedMemoryResource::new()?),
        "managed" => SharedResource::new(ManagedMemoryResource::new()),
        "pinned" => SharedResource::new(PinnedHostMemoryResource::new()),
        "pinned_pool" => SharedResource::new(pool_over(
            SharedResource::new(PinnedHostMemoryResource::new()),
            false,
            unchecked,
            opts,
        )?),
        "system" if simulated => SharedResource::new(SystemMemoryResource::without_gpu()),
        "system" => SharedResource::new(SystemMemoryResource::new()?),
        "sam_headroom" if simulated => SharedResource::new(SamHeadroomMemoryResource::simulated(
            opts.sam_headroom,
            SimulatedMemoryResource::new(opts.simulated_size),
        )),
        "sam_headroom" => SharedResource::new(SamHeadroomMemoryResource::new(opts.sam_headroom)?),
        "vmpool" => SharedResource::new(VirtualPoolMemoryResource::new(
            VirtualPoolOptions::default().unchecked_frees(unchecked),
        )?),
        "pool" => SharedResource::new(pool(simulated, unchecked, opts)?),
        "binning" => SharedResource::new(BinningMemoryResource::with_fixed_bins(
            pool(simulated, unchecked, opts)?,
            18,
            22,
        )?),
        "arena" => {
            let mut o = ArenaOptions::default().unchecked_frees(unchecked);
            match opts.arena_size {
                Some(size) => o = o.arena_size(align_down(size, 256)),
                None if simulated => o = o.arena_size(align_down(opts.simulated_size, 256)),
                None => {}
            }
            SharedResource::new(ArenaMemoryResource::new(upstream(simulated, opts), o)?)
        }
        _ => SharedResource::new(FixedSizeMemoryResource::new(
            upstream(simulated, opts),
            FixedSizeOptions::default().unchecked_frees(unchecked),
        )?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmm::mr::MemoryResource;

    fn sim() -> ByNameOptions {
        ByNameOptions::default().simulated_size(1 << 30)
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        for bad in [
            "bogus",
            "statistics_",
            "statistics_bogus",
            "simulated-cuda",
            "pool_unchecked_unchecked",
            "",
        ] {
            let e = resource(bad, &sim()).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument(_)), "{bad}: {e}");
            let text = e.to_string();
            assert!(
                text.contains("unknown resource") && text.contains("known: simulated, cuda"),
                "{bad}: {text}"
            );
            assert!(
                text.contains("simulated-pool") && text.contains("statistics_"),
                "{text}"
            );
        }
    }

    #[test]
    fn unchecked_only_where_frees_are_checked() {
        for name in [
            "simulated_unchecked",
            "simulated-system_unchecked",
            "simulated-sam_headroom_unchecked",
        ] {
            let e = resource(name, &sim()).unwrap_err();
            assert!(e.to_string().contains("no _unchecked form"), "{name}: {e}");
        }
        assert!(resource("simulated-pool_unchecked", &sim()).is_ok());
        assert!(resource("statistics_simulated-arena_unchecked", &sim()).is_ok());
    }

    #[test]
    fn simulated_names_build_without_a_gpu() {
        for name in [
            "simulated",
            "simulated-pool",
            "simulated-binning",
            "simulated-arena",
            "simulated-fixed_size",
            "simulated-system",
            "simulated-sam_headroom",
            "statistics_simulated-sam_headroom",
            "statistics_simulated-pool",
            "tracking_simulated-pool",
            "thread_safe_simulated-binning",
            "tracking_statistics_simulated-arena_unchecked",
        ] {
            let mr = resource(name, &sim()).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(mr.is_simulated() || name != "simulated", "{name}");
            // Not freed: the resource and its bookkeeping go with it.
            assert!(!mr.allocate_sync(4096, 256).unwrap().is_null(), "{name}");
        }
        // `simulate` puts the plain names over the simulated device, and the
        // GPU-only ones refuse.
        let opts = sim().simulate(true);
        assert!(resource("binning", &opts).is_ok());
        assert!(resource("system", &opts).unwrap().is_simulated());
        assert!(resource("sam_headroom", &opts).unwrap().is_simulated());
        let e = resource("pinned_pool", &opts).unwrap_err();
        assert!(e.to_string().contains("needs a GPU"), "{e}");
        assert!(resource("simulated-pinned_pool", &sim()).is_err());
        let e = resource("cuda", &opts).unwrap_err();
        assert!(
            matches!(e, Error::Logic(_)) && e.to_string().contains("needs a GPU"),
            "{e}"
        );
    }

    #[test]
    fn gpu_names_say_they_need_a_gpu() {
        if rmm::device::is_available() {
            return;
        }
        for name in [
            "cuda",
            "cuda_async",
            "managed",
            "pinned",
            "pinned_pool",
            "vmpool",
            "system",
            "sam_headroom",
            "pool",
            "statistics_arena",
        ] {
            let e = resource(name, &sim()).unwrap_err();
            assert!(e.to_string().contains("needs a GPU"), "{name}: {e}");
        }
    }
}
