//! Out-of-memory forensics: what each layer of a resource stack says about
//! itself ([`LayerState`]), [`Snapshot`]s of a whole stack as JSON, the
//! [`OomReport`] every out-of-memory error carries, and observers called
//! on every out-of-memory error. The JSON formats are in docs/snapshots.md.
//!
//! ```
//! use rmm::mr::{MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource, StatisticsAdaptor};
//! let pool = PoolMemoryResource::new(SimulatedMemoryResource::new(1 << 20), PoolOptions::default().initial_pool_size(1 << 20))?;
//! let mr = StatisticsAdaptor::new(pool);
//! let e = mr.allocate(2 << 20, 256, rmm::CudaStreamView::DEFAULT).unwrap_err();
//! let report = e.oom_report().unwrap();
//! let names: Vec<&str> = report.snapshot.layers.iter().map(|l| l.name.as_str()).collect();
//! assert_eq!(names, ["statistics", "pool", "simulated"]);
//! assert_eq!(report.failed_layer, "pool");
//! println!("{e}"); // the request, then each layer: reserved, in use, free, largest free block, ...
//! # Ok::<(), rmm::Error>(())
//! ```

mod layer;
mod observers;
mod oom;
mod snapshot;

pub(crate) use layer::{default_layer_state, layer_name, short_type_name};
pub use layer::{Block, BlockState, Chunk, Counters, LayerState, LiveAllocation};
pub use observers::{
    add_oom_observer, notify_oom_observers, remove_oom_observer, write_oom_reports_to, OomObserver,
    OomObserverId,
};
pub(crate) use observers::{nested, outermost};
pub(crate) use oom::{reported, ReportOom};
pub use oom::{
    LiveSite, OomReport, OomRequest, OOM_REPORT_SCHEMA, OOM_REPORT_VERSION, REPORT_BLOCKS, REPORT_SITES,
};
pub use snapshot::{snapshot, Snapshot, SNAPSHOT_SCHEMA, SNAPSHOT_VERSION};
