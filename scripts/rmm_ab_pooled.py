#!/usr/bin/env python3
"""Pools the repetitions of several benches/rmm_ab runs (scripts/rmm-ab.sh).

Each repetition of a row runs every side once, so each side's time divided
by RMM's time *of the same repetition* is a paired ratio that the machine's
drift between repetitions does not enter. This prints, per label and row,
the median of those paired ratios over every repetition of every run given
that label, for our resource (`rmm-rs`) and for each layer that ran.

    python3 scripts/rmm_ab_pooled.py lean=run1/rmm_ab.csv lean=run2/rmm_ab.csv old=run3/rmm_ab.csv

Output: a Markdown table per label (rows in the order they first appear;
`n` is the number of paired repetitions of `rmm-rs`).
"""
import csv
import statistics
import sys
from collections import defaultdict

SIDES = ["rmm-rs", "cudart@rmm", "driver@rmm", "driver@rs", "binding@rs"]


def main(args):
    if not args or any("=" not in a for a in args):
        sys.exit(__doc__)
    ratios = defaultdict(list)  # (label, row, impl) -> paired ratios
    rows, labels = [], []
    for arg in args:
        label, path = arg.split("=", 1)
        if label not in labels:
            labels.append(label)
        reps = defaultdict(dict)  # (row, rep) -> impl -> ns/op
        with open(path, newline="") as f:
            for rec in csv.reader(f):
                if len(rec) != 7 or rec[0] in ("impl", "summary", "layer"):
                    continue
                impl, resource, workload, params, rep, ns, _failed = rec
                row = f"{resource} {workload} {params}"
                if row not in rows:
                    rows.append(row)
                reps[(row, rep)][impl] = float(ns)
        for (row, _rep), times in reps.items():
            base = times.get("rmm")
            if not base:
                continue
            for impl, ns in times.items():
                if impl != "rmm":
                    ratios[(label, row, impl)].append(ns / base)
    for label in labels:
        print(f"\n{label}: median paired ratio to RMM's resource (below 1 is faster)\n")
        print("| row | n | " + " | ".join(SIDES) + " |")
        print("|---|---:|" + "---:|" * len(SIDES))
        for row in rows:
            ours = ratios.get((label, row, "rmm-rs"))
            if not ours:
                continue
            cells = []
            for impl in SIDES:
                r = ratios.get((label, row, impl))
                cells.append(f"{statistics.median(r):.3f}" if r else "-")
            print(f"| {row} | {len(ours)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
