//! [`Snapshot`]: what a resource stack knows at one moment, and its JSON
//! (schema `rmm-snapshot`, version [`SNAPSHOT_VERSION`], docs/snapshots.md).
#![forbid(unsafe_code)]

use std::time::SystemTime;

use serde_json::{json, Map, Value};

use super::layer::{Block, BlockState, Chunk, Counters, LayerState, LiveAllocation};
use crate::error::{Error, Result};
use crate::mr::{GraphMemoryStats, MemoryResource};

/// The schema name of a snapshot's JSON.
pub const SNAPSHOT_SCHEMA: &str = "rmm-snapshot";
/// The version of the snapshot JSON this crate writes; readers accept any
/// file of this major version (fields may be added, never renamed).
pub const SNAPSHOT_VERSION: u64 = 1;

/// What a resource stack knows at one moment: every layer from the top down
/// and the live allocations of a tracking adaptor in it.
///
/// ```
/// use rmm::mr::{MemoryResource, PoolMemoryResource, PoolOptions, SimulatedMemoryResource, Snapshot};
/// let pool = PoolMemoryResource::new(SimulatedMemoryResource::new(1 << 30), PoolOptions::default().initial_pool_size(1 << 20))?;
/// let p = pool.allocate(1000, 256, rmm::CudaStreamView::DEFAULT)?;
/// let snap = rmm::mr::snapshot(&pool);
/// assert_eq!(snap.layers[0].name, "pool");
/// assert_eq!(snap.layers[0].used_bytes, Some(1024));
/// assert_eq!(snap.layers[1].name, "simulated");
/// let back = Snapshot::from_json(&snap.to_json())?;
/// assert_eq!(back, snap);
/// unsafe { pool.deallocate(p, 1000, 256, rmm::CudaStreamView::DEFAULT) };
/// # Ok::<(), rmm::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// UTC time of day, `HH:MM:SS.micros` (the logging adaptor's format).
    pub time: String,
    /// Nanoseconds since the Unix epoch.
    pub unix_time_ns: u64,
    /// The device of the stack, where bound to one.
    pub device: Option<i32>,
    /// The layers, the top first; each one's upstream follows it.
    pub layers: Vec<LayerState>,
    /// A tracking adaptor's live allocations (the topmost one), else empty.
    pub live_allocations: Vec<LiveAllocation>,
}

/// The current time as (time of day, Unix nanoseconds).
pub(crate) fn now() -> (String, u64) {
    let t = SystemTime::now();
    let ns = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    (crate::logger::format_time(t, '.'), ns)
}

/// The layers of the stack under `top` (itself first), each asked once.
pub(crate) fn walk(top: &dyn MemoryResource) -> Vec<LayerState> {
    fn walk_into(r: &dyn MemoryResource, out: &mut Vec<LayerState>) {
        out.push(r.layer_state());
        r.visit_upstream(&mut |u| walk_into(u, out));
    }
    let mut layers = Vec::new();
    walk_into(top, &mut layers);
    layers
}

/// A [`Snapshot`] of `resource` and every layer under it.
pub fn snapshot(resource: &dyn MemoryResource) -> Snapshot {
    Snapshot::of_layers(walk(resource), resource.device().map(|d| d.0))
}

impl Snapshot {
    /// A snapshot taken now of already collected layers.
    pub(crate) fn of_layers(mut layers: Vec<LayerState>, device: Option<i32>) -> Self {
        let (time, unix_time_ns) = now();
        let mut live_allocations = None;
        for l in &mut layers {
            let live = l.live_allocations.take();
            live_allocations = live_allocations.or(live);
        }
        let live_allocations = live_allocations.unwrap_or_default();
        Snapshot {
            time,
            unix_time_ns,
            device,
            layers,
            live_allocations,
        }
    }

    /// The JSON text (schema `rmm-snapshot`, docs/snapshots.md).
    pub fn to_json(&self) -> String {
        self.to_value().to_string()
    }

    /// The JSON value.
    pub(crate) fn to_value(&self) -> Value {
        let mut resource = Value::Null;
        for layer in self.layers.iter().rev() {
            resource = layer_value(layer, resource);
        }
        json!({
            "schema": SNAPSHOT_SCHEMA,
            "version": SNAPSHOT_VERSION,
            "time": self.time,
            "unix_time_ns": self.unix_time_ns,
            "device": self.device,
            "resource": resource,
            "live_allocations": self.live_allocations.iter().map(live_value).collect::<Vec<_>>(),
        })
    }

    /// Reads a snapshot's JSON text.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming what is wrong: not JSON, another
    /// schema or version, a missing or mistyped field.
    pub fn from_json(text: &str) -> Result<Snapshot> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::InvalidArgument(format!("snapshot is not JSON: {e}")))?;
        Snapshot::from_value(&v)
    }

    pub(crate) fn from_value(v: &Value) -> Result<Snapshot> {
        if v.get("schema").and_then(Value::as_str) != Some(SNAPSHOT_SCHEMA) {
            return Err(bad("schema is not \"rmm-snapshot\""));
        }
        let version = v
            .get("version")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad("no version"))?;
        if version != SNAPSHOT_VERSION {
            return Err(bad(&format!(
                "version {version}; this reader knows {SNAPSHOT_VERSION}"
            )));
        }
        let mut layers = Vec::new();
        let mut at = v.get("resource").filter(|r| !r.is_null());
        while let Some(r) = at {
            layers.push(layer_from(r)?);
            at = r.get("upstream").filter(|u| !u.is_null());
        }
        Ok(Snapshot {
            time: str_field(v, "time")?,
            unix_time_ns: v.get("unix_time_ns").and_then(Value::as_u64).unwrap_or(0),
            device: opt_u64(v, "device")?.map(|d| d as i32),
            layers,
            live_allocations: list(v, "live_allocations", live_from)?.unwrap_or_default(),
        })
    }
}

fn bad(what: &str) -> Error {
    Error::InvalidArgument(format!("not an rmm snapshot: {what}"))
}

/// `0x…` for an address or stream handle.
pub(crate) fn hex(n: u64) -> String {
    format!("{n:#x}")
}

fn parse_hex(v: &Value, what: &str) -> Result<u64> {
    v.as_str()
        .and_then(|s| s.strip_prefix("0x"))
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .ok_or_else(|| bad(&format!("{what} is not a hex string")))
}

fn str_field(v: &Value, key: &str) -> Result<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| bad(&format!("no string {key}")))
}

fn opt_u64(v: &Value, key: &str) -> Result<Option<u64>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x
            .as_u64()
            .map(Some)
            .ok_or_else(|| bad(&format!("{key} is not a number"))),
    }
}

fn opt_usize(v: &Value, key: &str) -> Result<Option<usize>> {
    Ok(opt_u64(v, key)?.map(|n| n as usize))
}

fn list<T>(v: &Value, key: &str, item: impl Fn(&Value) -> Result<T>) -> Result<Option<Vec<T>>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a.iter().map(item).collect::<Result<Vec<T>>>().map(Some),
        Some(_) => Err(bad(&format!("{key} is not a list"))),
    }
}

fn layer_value(l: &LayerState, upstream: Value) -> Value {
    let by_stream = l.free_bytes_by_stream.as_ref().map(|s| {
        s.iter()
            .map(|(k, n)| (hex(*k as u64), json!(n)))
            .collect::<Map<String, Value>>()
    });
    json!({
        "name": l.name,
        "type": l.type_name,
        "reserved_bytes": l.reserved_bytes,
        "used_bytes": l.used_bytes,
        "free_bytes": l.free_bytes,
        "largest_free_block": l.largest_free_block,
        "fragmentation": l.fragmentation(),
        "free_bytes_by_stream": by_stream,
        "limit_bytes": l.limit_bytes,
        "chunks": l.chunks.as_ref().map(|c| c.iter().map(|c| json!({
            "address": hex(c.address), "size": c.size })).collect::<Vec<_>>()),
        "blocks": l.blocks.as_ref().map(|b| b.iter().map(|b| json!({
            "address": hex(b.address), "size": b.size, "state": b.state.as_str(),
            "stream": b.stream.map(|s| hex(s as u64)) })).collect::<Vec<_>>()),
        "graph_memory": l.graph_memory.map(|g| json!({
            "pools": g.pools, "reserved_bytes": g.reserved_bytes, "live_bytes": g.live_bytes,
            "graphs_alive": g.graphs_alive, "deferred_frees": g.deferred_frees, "bad_frees": g.bad_frees })),
        "counters": l.counters.map(|c| json!({
            "current_bytes": c.current_bytes, "peak_bytes": c.peak_bytes, "total_bytes": c.total_bytes,
            "current_count": c.current_count, "peak_count": c.peak_count, "total_count": c.total_count })),
        "upstream": upstream,
    })
}

pub(crate) fn live_value(a: &LiveAllocation) -> Value {
    json!({
        "address": hex(a.address),
        "size": a.size,
        "stream": a.stream.map(|s| hex(s as u64)),
        "thread": a.thread,
        "time": a.time,
        "backtrace": a.backtrace,
    })
}

fn live_from(v: &Value) -> Result<LiveAllocation> {
    Ok(LiveAllocation {
        address: parse_hex(v.get("address").unwrap_or(&Value::Null), "address")?,
        size: opt_usize(v, "size")?.ok_or_else(|| bad("live allocation without size"))?,
        stream: v
            .get("stream")
            .filter(|s| !s.is_null())
            .map(|s| parse_hex(s, "stream"))
            .transpose()?
            .map(|s| s as usize),
        thread: opt_u64(v, "thread")?,
        time: v.get("time").and_then(Value::as_str).map(str::to_string),
        backtrace: list(v, "backtrace", |f| {
            f.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad("backtrace frame is not a string"))
        })?,
    })
}

fn block_from(v: &Value) -> Result<Block> {
    let state = match v.get("state").and_then(Value::as_str) {
        Some("free") => BlockState::Free,
        Some("used") => BlockState::Used,
        _ => return Err(bad("block state is not \"free\" or \"used\"")),
    };
    Ok(Block {
        address: parse_hex(v.get("address").unwrap_or(&Value::Null), "block address")?,
        size: opt_usize(v, "size")?.ok_or_else(|| bad("block without size"))?,
        state,
        stream: v
            .get("stream")
            .filter(|s| !s.is_null())
            .map(|s| parse_hex(s, "stream"))
            .transpose()?
            .map(|s| s as usize),
    })
}

fn counters_from(v: &Value) -> Result<Counters> {
    let f = |k: &str| {
        v.get(k)
            .and_then(Value::as_i64)
            .ok_or_else(|| bad(&format!("counter {k} missing")))
    };
    Ok(Counters {
        current_bytes: f("current_bytes")?,
        peak_bytes: f("peak_bytes")?,
        total_bytes: f("total_bytes")?,
        current_count: f("current_count")?,
        peak_count: f("peak_count")?,
        total_count: f("total_count")?,
    })
}

fn graph_from(v: &Value) -> Result<GraphMemoryStats> {
    let f = |k: &str| Ok::<usize, Error>(opt_usize(v, k)?.unwrap_or(0));
    Ok(GraphMemoryStats {
        pools: f("pools")?,
        reserved_bytes: f("reserved_bytes")?,
        live_bytes: f("live_bytes")?,
        graphs_alive: f("graphs_alive")?,
        deferred_frees: f("deferred_frees")?,
        bad_frees: f("bad_frees")?,
    })
}

fn layer_from(v: &Value) -> Result<LayerState> {
    let mut l = LayerState::new(&str_field(v, "name")?, &str_field(v, "type")?);
    l.reserved_bytes = opt_usize(v, "reserved_bytes")?;
    l.used_bytes = opt_usize(v, "used_bytes")?;
    l.free_bytes = opt_usize(v, "free_bytes")?;
    l.largest_free_block = opt_usize(v, "largest_free_block")?;
    l.limit_bytes = opt_usize(v, "limit_bytes")?;
    l.free_bytes_by_stream = match v.get("free_bytes_by_stream") {
        Some(Value::Object(m)) => Some(
            m.iter()
                .map(|(k, n)| {
                    let s = parse_hex(&Value::String(k.clone()), "stream")? as usize;
                    Ok((
                        s,
                        n.as_u64().ok_or_else(|| bad("free bytes is not a number"))? as usize,
                    ))
                })
                .collect::<Result<Vec<_>>>()
                .map(|mut s| {
                    s.sort_unstable();
                    s
                })?,
        ),
        _ => None,
    };
    l.chunks = list(v, "chunks", |c| {
        Ok(Chunk {
            address: parse_hex(c.get("address").unwrap_or(&Value::Null), "chunk address")?,
            size: opt_usize(c, "size")?.ok_or_else(|| bad("chunk without size"))?,
        })
    })?;
    l.blocks = list(v, "blocks", block_from)?;
    l.graph_memory = v
        .get("graph_memory")
        .filter(|g| !g.is_null())
        .map(graph_from)
        .transpose()?;
    l.counters = v
        .get("counters")
        .filter(|c| !c.is_null())
        .map(counters_from)
        .transpose()?;
    Ok(l)
}
