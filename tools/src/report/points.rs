//! Benchmark measurements as the charts and the summary see them: repeated
//! rows merged by their median, the project's ratios to the anchors (RMM for
//! the allocators, CuPy and PyTorch for the kernels), and the orders in which
//! resources, workloads and implementations are shown.
//!
//! Rows with a non-finite or non-positive value are left out and counted.
#![forbid(unsafe_code)]

use std::collections::HashMap;

use super::csv::{AllocRow, KernelRow};

/// The `impl` of the allocator anchor (the real RMM).
pub const RMM_IMPL: &str = "rmm";
/// The `impl`s of the kernel anchors.
pub const KERNEL_ANCHORS: [&str; 2] = ["cupy", "torch"];
/// Resources in the order WORKLOADS.md lists them; others follow alphabetically.
pub const RESOURCE_ORDER: [&str; 5] = ["cuda", "cuda_async", "pool", "binning", "arena"];

/// The (workload, params) rows of WORKLOADS.md in its order; others follow
/// in order of appearance.
pub const WORKLOAD_ORDER: [(&str, &str); 6] = [
    ("random", "n=100000 max=1MiB"),
    ("random", "n=10000 max=64MiB"),
    ("random", "n=1000 max=4096MiB"),
    ("hot_pair", "size=256"),
    ("hot_pair", "size=1048576"),
    ("threads8", "n=20000 max=1MiB"),
];

/// Sorts (workload, params) groups into [`WORKLOAD_ORDER`], keeping the
/// order of the others (after the known ones, grouped by workload name).
pub(super) fn sort_groups(groups: &mut [(String, String)]) {
    let names: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
    groups.sort_by_key(|(w, p)| {
        let known = WORKLOAD_ORDER.iter().position(|(a, b)| a == w && b == p);
        let first_name = names.iter().position(|n| n == w).unwrap_or(usize::MAX);
        (known.unwrap_or(usize::MAX), first_name)
    });
}

/// One allocator measurement after merging repeated rows.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocPoint {
    /// The implementation.
    pub impl_name: String,
    /// The resource.
    pub resource: String,
    /// The workload.
    pub workload: String,
    /// The workload's parameters.
    pub params: String,
    /// Median ns per op of the rows merged.
    pub ns_per_op: f64,
    /// Largest `failed` of the rows merged.
    pub failed: u64,
    /// Rows merged.
    pub runs: usize,
}

/// Project ns/op over RMM ns/op for one (impl, resource, workload, params).
#[derive(Debug, Clone, PartialEq)]
pub struct AllocRatio {
    /// The project's implementation name.
    pub impl_name: String,
    /// The resource.
    pub resource: String,
    /// The workload.
    pub workload: String,
    /// The workload's parameters.
    pub params: String,
    /// RMM's ns per op.
    pub rmm_ns: f64,
    /// The project's ns per op.
    pub project_ns: f64,
    /// `project_ns / rmm_ns`: below 1.0 the project is faster.
    pub ratio: f64,
    /// RMM's failed allocations.
    pub rmm_failed: u64,
    /// The project's failed allocations.
    pub project_failed: u64,
}

/// Project throughput over the best anchor's for one (impl, kernel, params).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelRatio {
    /// The project's implementation name.
    pub impl_name: String,
    /// The kernel.
    pub kernel: String,
    /// Its parameters.
    pub params: String,
    /// The best anchor (`cupy` or `torch`).
    pub anchor: String,
    /// The anchor's throughput.
    pub anchor_value: f64,
    /// The project's throughput.
    pub project_value: f64,
    /// The unit of both.
    pub unit: String,
    /// `project_value / anchor_value`: above 1.0 the project is faster.
    pub ratio: f64,
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

pub(super) fn resource_rank(resource: &str) -> (usize, String) {
    let rank = RESOURCE_ORDER
        .iter()
        .position(|r| *r == resource)
        .unwrap_or(RESOURCE_ORDER.len());
    (rank, resource.to_string())
}

/// (impl, resource or kernel, workload or params, params or unit).
type Key4 = (String, String, String, String);

/// Merges repeated allocator rows (median ns/op), dropping non-finite or
/// non-positive values. Returns the points in file order of first appearance
/// and the number of rows dropped.
pub fn alloc_points(rows: &[AllocRow]) -> (Vec<AllocPoint>, usize) {
    let mut order: Vec<Key4> = Vec::new();
    let mut groups: HashMap<Key4, (Vec<f64>, u64)> = HashMap::new();
    let mut dropped = 0;
    for r in rows {
        if !(r.ns_per_op.is_finite() && r.ns_per_op > 0.0) {
            dropped += 1;
            continue;
        }
        let key = (
            r.impl_name.clone(),
            r.resource.clone(),
            r.workload.clone(),
            r.params.clone(),
        );
        let entry = groups.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            (Vec::new(), 0)
        });
        entry.0.push(r.ns_per_op);
        entry.1 = entry.1.max(r.failed);
    }
    let points = order
        .into_iter()
        .filter_map(|key| {
            let (mut values, failed) = groups.remove(&key)?;
            let runs = values.len();
            Some(AllocPoint {
                ns_per_op: median(&mut values),
                impl_name: key.0,
                resource: key.1,
                workload: key.2,
                params: key.3,
                failed,
                runs,
            })
        })
        .collect();
    (points, dropped)
}

/// The ratios of every project implementation to RMM, for each
/// (resource, workload, params) both measured; sorted by impl, resource
/// (WORKLOADS.md order) and workload order of appearance.
pub fn alloc_ratios(points: &[AllocPoint]) -> Vec<AllocRatio> {
    let workloads = workload_order(points);
    let rmm: HashMap<(&str, &str, &str), &AllocPoint> = points
        .iter()
        .filter(|p| p.impl_name == RMM_IMPL)
        .map(|p| ((p.resource.as_str(), p.workload.as_str(), p.params.as_str()), p))
        .collect();
    let mut out: Vec<AllocRatio> = points
        .iter()
        .filter(|p| p.impl_name != RMM_IMPL)
        .filter_map(|p| {
            let a = rmm.get(&(p.resource.as_str(), p.workload.as_str(), p.params.as_str()))?;
            Some(AllocRatio {
                impl_name: p.impl_name.clone(),
                resource: p.resource.clone(),
                workload: p.workload.clone(),
                params: p.params.clone(),
                rmm_ns: a.ns_per_op,
                project_ns: p.ns_per_op,
                ratio: p.ns_per_op / a.ns_per_op,
                rmm_failed: a.failed,
                project_failed: p.failed,
            })
        })
        .collect();
    let wrank = |w: &str, p: &str| {
        workloads
            .iter()
            .position(|(a, b)| a == w && b == p)
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| {
        (
            a.impl_name.as_str(),
            resource_rank(&a.resource),
            wrank(&a.workload, &a.params),
        )
            .cmp(&(
                b.impl_name.as_str(),
                resource_rank(&b.resource),
                wrank(&b.workload, &b.params),
            ))
    });
    out
}

/// Project kernel throughput over the best anchor's, for each (kernel, params)
/// both measured. Rows with a non-finite or non-positive throughput are ignored.
pub fn kernel_ratios(rows: &[KernelRow]) -> Vec<KernelRatio> {
    let points = kernel_points(rows);
    let mut best: HashMap<(&str, &str), &KernelPoint> = HashMap::new();
    for p in points.iter().filter(|p| is_kernel_anchor(&p.impl_name)) {
        let slot = best.entry((p.kernel.as_str(), p.params.as_str())).or_insert(p);
        if p.value > slot.value {
            *slot = p;
        }
    }
    points
        .iter()
        .filter(|p| !is_kernel_anchor(&p.impl_name))
        .filter_map(|p| {
            let a = best.get(&(p.kernel.as_str(), p.params.as_str()))?;
            Some(KernelRatio {
                impl_name: p.impl_name.clone(),
                kernel: p.kernel.clone(),
                params: p.params.clone(),
                anchor: a.impl_name.clone(),
                anchor_value: a.value,
                project_value: p.value,
                unit: p.unit.clone(),
                ratio: p.value / a.value,
            })
        })
        .collect()
}

fn is_kernel_anchor(name: &str) -> bool {
    KERNEL_ANCHORS.contains(&name)
}

#[derive(Debug, Clone)]
pub(super) struct KernelPoint {
    pub(super) impl_name: String,
    pub(super) kernel: String,
    pub(super) params: String,
    pub(super) unit: String,
    pub(super) value: f64,
}

pub(super) fn kernel_points(rows: &[KernelRow]) -> Vec<KernelPoint> {
    let mut order = Vec::new();
    let mut groups: HashMap<Key4, Vec<f64>> = HashMap::new();
    for r in rows
        .iter()
        .filter(|r| r.throughput.is_finite() && r.throughput > 0.0)
    {
        let key = (
            r.impl_name.clone(),
            r.kernel.clone(),
            r.params.clone(),
            r.unit.clone(),
        );
        groups
            .entry(key.clone())
            .or_insert_with(|| {
                order.push(key);
                Vec::new()
            })
            .push(r.throughput);
    }
    order
        .into_iter()
        .filter_map(|key| {
            let mut values = groups.remove(&key)?;
            Some(KernelPoint {
                value: median(&mut values),
                impl_name: key.0,
                kernel: key.1,
                params: key.2,
                unit: key.3,
            })
        })
        .collect()
}

pub(super) fn workload_order(points: &[AllocPoint]) -> Vec<(String, String)> {
    let mut order: Vec<(String, String)> = Vec::new();
    // The anchor's order first (it runs every workload), then the rest.
    for pass in [true, false] {
        for p in points.iter().filter(|p| (p.impl_name == RMM_IMPL) == pass) {
            let key = (p.workload.clone(), p.params.clone());
            if !order.contains(&key) {
                order.push(key);
            }
        }
    }
    sort_groups(&mut order);
    order
}

/// Impls in display order: project implementations (alphabetical), then RMM.
pub(super) fn impl_order<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut set: Vec<String> = names.map(str::to_string).collect();
    set.sort();
    set.dedup();
    set.sort_by_key(|n| (n == RMM_IMPL || is_kernel_anchor(n), n.clone()));
    set
}
