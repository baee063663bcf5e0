//! Sub-allocators over an upstream resource: pool, fixed-size and arena
//! (binning has its own file).
#![forbid(unsafe_code)]

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmm::mr::{
    ArenaMemoryResource, ArenaOptions, FixedSizeMemoryResource, FixedSizeOptions, MemoryResource,
    PoolMemoryResource, PoolOptions, SharedResource, SimulatedMemoryResource,
};

use super::base::{check_256, over, upstream_arg, PyUpstream, ALIGNMENT};
use crate::errors::{self, IntoPy};
use crate::sizes::opt_size_arg;

/// Default initial pool size when none is given: half the free device
/// memory (RMM's default), half a simulated device's capacity, 0 over
/// other simulated stacks.
pub(super) fn default_initial_pool(upstream: &SharedResource) -> PyResult<usize> {
    if upstream.is_simulated() {
        let half = upstream
            .inner()
            .downcast_ref::<SimulatedMemoryResource>()
            .map(|s| s.capacity() / 2)
            .unwrap_or(0);
        return Ok(half / ALIGNMENT * ALIGNMENT);
    }
    rmm::device::percent_of_free_device_memory(50).py_err()
}

/// A coalescing best-fit pool (`rmm.mr.PoolMemoryResource`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "PoolMemoryResource")]
pub(crate) struct PyPool {
    mr: PoolMemoryResource,
}

#[pymethods]
impl PyPool {
    #[new]
    #[pyo3(signature = (upstream_mr, initial_pool_size=None, maximum_pool_size=None))]
    fn py_new(
        py: Python<'_>,
        upstream_mr: &Bound<'_, PyAny>,
        initial_pool_size: Option<&Bound<'_, PyAny>>,
        maximum_pool_size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let initial = opt_size_arg(initial_pool_size, "initial_pool_size")?;
        let maximum = opt_size_arg(maximum_pool_size, "maximum_pool_size")?;
        check_256(py, initial, "initial_pool_size")?;
        check_256(py, maximum, "maximum_pool_size")?;
        if let (Some(i), Some(m)) = (initial, maximum) {
            if i > m {
                return Err(errors::config_error(
                    py,
                    format!("Initial pool size exceeds the maximum pool size: {i} > {m} bytes"),
                ));
            }
        }
        let initial = match initial {
            Some(i) => i,
            None => {
                let d = default_initial_pool(&upstream)?;
                maximum.map_or(d, |m| d.min(m))
            }
        };
        let mut opts = PoolOptions::default().initial_pool_size(initial);
        if let Some(m) = maximum {
            opts = opts.maximum_pool_size(m);
        }
        let mr = PoolMemoryResource::new(upstream, opts).py_err()?;
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyPool { mr }))
    }

    /// Bytes the pool holds from its upstream.
    fn pool_size(&self) -> usize {
        self.mr.pool_size()
    }

    /// Bytes held free in the pool.
    fn free_bytes(&self) -> usize {
        self.mr.free_bytes()
    }

    /// The configured maximum, or None.
    fn maximum_pool_size(&self) -> Option<usize> {
        self.mr.maximum_pool_size()
    }
}

/// Equal blocks from upstream chunks (`rmm.mr.FixedSizeMemoryResource`).
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "FixedSizeMemoryResource")]
pub(crate) struct PyFixedSize {
    mr: FixedSizeMemoryResource,
}

#[pymethods]
impl PyFixedSize {
    /// `block_size` defaults to 1 MiB (None means the default).
    #[new]
    #[pyo3(signature = (upstream_mr, block_size=None, blocks_to_preallocate=128))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        block_size: Option<&Bound<'_, PyAny>>,
        blocks_to_preallocate: i64,
    ) -> PyResult<PyClassInitializer<Self>> {
        let upstream = upstream_arg(upstream_mr)?;
        let block = opt_size_arg(block_size, "block_size")?.unwrap_or(1 << 20);
        if block == 0 {
            return Err(PyValueError::new_err("block_size must be positive"));
        }
        if blocks_to_preallocate <= 0 {
            return Err(PyValueError::new_err(format!(
                "blocks_to_preallocate must be positive, got {blocks_to_preallocate}"
            )));
        }
        let opts = FixedSizeOptions::default()
            .block_size(block)
            .blocks_to_preallocate(blocks_to_preallocate as usize);
        let mr = FixedSizeMemoryResource::new(upstream, opts).py_err()?;
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyFixedSize { mr }))
    }

    /// The block size in bytes.
    #[getter]
    fn block_size(&self) -> usize {
        self.mr.block_size()
    }

    /// Bytes held from the upstream.
    fn pool_size(&self) -> usize {
        self.mr.pool_size()
    }
}

/// Per-thread and per-stream arenas (`rmm.mr.ArenaMemoryResource`).
/// `dump_log_on_failure` is accepted for compatibility; failures are
/// reported through the debug log either way.
#[pyclass(extends = PyUpstream, module = "rmm_rs.mr", name = "ArenaMemoryResource")]
pub(crate) struct PyArena {
    mr: ArenaMemoryResource,
}

#[pymethods]
impl PyArena {
    #[new]
    #[pyo3(signature = (upstream_mr, arena_size=None, dump_log_on_failure=false))]
    fn py_new(
        upstream_mr: &Bound<'_, PyAny>,
        arena_size: Option<&Bound<'_, PyAny>>,
        dump_log_on_failure: bool,
    ) -> PyResult<PyClassInitializer<Self>> {
        let _ = dump_log_on_failure;
        let upstream = upstream_arg(upstream_mr)?;
        let mut opts = ArenaOptions::default();
        match opt_size_arg(arena_size, "arena_size")? {
            Some(n) => opts = opts.arena_size(n),
            None => {
                if upstream.is_simulated() {
                    let d = default_initial_pool(&upstream)?;
                    if d == 0 {
                        return Err(PyValueError::new_err(
                            "arena_size is required over this simulated upstream",
                        ));
                    }
                    opts = opts.arena_size(d);
                }
            }
        }
        let mr = ArenaMemoryResource::new(upstream, opts).py_err()?;
        Ok(over(SharedResource::new(mr.clone()), upstream_mr).add_subclass(PyArena { mr }))
    }

    /// The size of the arena's one upstream allocation.
    fn arena_size(&self) -> usize {
        self.mr.arena_size()
    }

    /// Returns free superblocks to the global arena.
    fn defragment(&self) {
        self.mr.defragment()
    }
}
