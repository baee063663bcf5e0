#!/usr/bin/env python3
"""The same-process table of docs/performance.md from benches/rmm_ab runs.

Reads one or more rmm_ab.csv files (scripts/rmm-ab.sh writes them; runs of
the same code, pooled) and prints, per resource, every row's median paired
ratio (ours / RMM's time of the same repetition) and both medians in ns per
operation, as Markdown:

    python3 scripts/rmm_ab_table.py run1/rmm_ab.csv [run2/rmm_ab.csv ...]

Columns follow the rows in the order the first file has them; `n` is the
number of paired repetitions behind each ratio.
"""
import csv
import statistics
import sys
from collections import defaultdict


def label(workload, params):
    """A short column name: `hot_pair 256 B`, `T=4`, `random n=1000 max=4096MiB`."""
    if workload == "hot_pair":
        size = int(params.split("=")[1])
        return f"hot_pair {size} B" if size < 1 << 20 else f"hot_pair {size >> 20} MiB"
    if workload == "threads":
        return params.split()[0].upper()
    if workload == "threads8":
        return "T=8 (threads8)"
    return f"{workload} {params}"


def main(paths):
    if not paths:
        sys.exit(__doc__)
    ours, theirs = defaultdict(list), defaultdict(list)  # (resource, column) -> ns
    paired = defaultdict(list)
    columns, resources = [], []
    for path in paths:
        reps = defaultdict(dict)  # (resource, column, rep) -> impl -> ns
        with open(path, newline="") as f:
            for rec in csv.reader(f):
                if len(rec) != 7 or rec[0] in ("impl", "summary", "layer"):
                    continue
                impl, resource, workload, params, rep, ns, _failed = rec
                col = label(workload, params)
                if col not in columns:
                    columns.append(col)
                if resource not in resources:
                    resources.append(resource)
                reps[(resource, col, rep)][impl] = float(ns)
        for (resource, col, _), sides in reps.items():
            if "rmm" in sides and "rmm-rs" in sides:
                ours[(resource, col)].append(sides["rmm-rs"])
                theirs[(resource, col)].append(sides["rmm"])
                paired[(resource, col)].append(sides["rmm-rs"] / sides["rmm"])
    def ratio(r, c):
        v = paired.get((r, c))
        return f"{statistics.median(v):.3f} (n={len(v)})" if v else ""

    def medians(r, c):
        a, b = ours.get((r, c)), theirs.get((r, c))
        return f"{statistics.median(a):.0f} / {statistics.median(b):.0f}" if a and b else ""

    print_table("Paired ratio, ours / RMM's (median over repetitions; below 1: ours faster)\n", resources, columns, ratio)
    print_table("\nMedian ns per operation, ours / RMM's\n", resources, columns, medians)


def print_table(title, resources, columns, cell):
    """A Markdown table under `title`: a row per resource, `cell(resource, column)` in each column."""
    print(title)
    print("| resource | " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for r in resources:
        print(f"| {r} | " + " | ".join(cell(r, c) for c in columns) + " |")

if __name__ == "__main__":
    main(sys.argv[1:])
