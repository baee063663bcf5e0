//! The markdown summary of the benchmark ratios.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use super::points::{resource_rank, AllocPoint, AllocRatio, KernelRatio, RMM_IMPL};

fn geomean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The markdown summary: allocator ratios to RMM (with a geometric mean per
/// impl and resource), and kernel ratios to the best anchor.
pub fn summary_markdown(points: &[AllocPoint], ratios: &[AllocRatio], kernels: &[KernelRatio]) -> String {
    let mut md = String::from("# Benchmark summary\n\n");
    if !points.is_empty() {
        md.push_str("## Allocator: project ns/op / RMM ns/op\n\nBelow 1.0 the project is faster. ");
        md.push_str("Repeated rows are merged by their median.\n\n");
        if ratios.is_empty() {
            md.push_str("No (resource, workload) was measured by both the project and `rmm`.\n\n");
        } else {
            md.push_str("| impl | resource | workload | params | rmm ns/op | project ns/op | project/rmm | failed (project/rmm) |\n");
            md.push_str("|---|---|---|---|---:|---:|---:|---:|\n");
            for r in ratios {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {:.1} | {:.1} | {:.3} | {}/{} |\n",
                    r.impl_name,
                    r.resource,
                    r.workload,
                    r.params,
                    r.rmm_ns,
                    r.project_ns,
                    r.ratio,
                    r.project_failed,
                    r.rmm_failed
                ));
            }
            md.push_str("\n### Geometric mean of the ratios\n\n| impl | resource | pairs | geomean project/rmm |\n|---|---|---:|---:|\n");
            let mut by: BTreeMap<(String, (usize, String)), Vec<f64>> = BTreeMap::new();
            for r in ratios {
                by.entry((r.impl_name.clone(), resource_rank(&r.resource)))
                    .or_default()
                    .push(r.ratio);
            }
            for ((name, (_, resource)), values) in &by {
                if let Some(g) = geomean(values.iter().copied()) {
                    md.push_str(&format!("| {name} | {resource} | {} | {g:.3} |\n", values.len()));
                }
            }
            md.push('\n');
        }
        let unpaired: Vec<&AllocPoint> = points
            .iter()
            .filter(|p| {
                !ratios.iter().any(|r| {
                    r.resource == p.resource
                        && r.workload == p.workload
                        && r.params == p.params
                        && (r.impl_name == p.impl_name || p.impl_name == RMM_IMPL)
                })
            })
            .collect();
        if !unpaired.is_empty() {
            md.push_str("### Rows without a counterpart\n\n| impl | resource | workload | params | ns/op |\n|---|---|---|---|---:|\n");
            for p in unpaired {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {:.1} |\n",
                    p.impl_name, p.resource, p.workload, p.params, p.ns_per_op
                ));
            }
            md.push('\n');
        }
    }
    if !kernels.is_empty() {
        md.push_str(
            "## Kernels: project throughput / best anchor throughput\n\nAbove 1.0 the project is faster.\n\n",
        );
        md.push_str("| impl | kernel | params | best anchor | anchor | project | unit | project/anchor |\n");
        md.push_str("|---|---|---|---|---:|---:|---|---:|\n");
        for k in kernels {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {:.2} | {:.2} | {} | {:.3} |\n",
                k.impl_name, k.kernel, k.params, k.anchor, k.anchor_value, k.project_value, k.unit, k.ratio
            ));
        }
        md.push('\n');
    }
    md
}
