"""Registers and spills of every kernel entry, from `ptxas -v`, against a budget.

Usage: ptxas_budget.py PTXAS OUT_DIR BUDGET [--update]

Reads the report of build.rs's own ptxas run for each architecture of ARCHS
(OUT_DIR/rmm_kernels.sm_XX.ptxas.log, written beside the cubin the crate
embeds: entry, registers, spill stores, shared bytes) and compares it with
BUDGET, one line
per architecture and entry: `arch entry registers spill_bytes smem_bytes`.
Fails (exit 1) when an entry fails to assemble, uses more registers or spills
more bytes than its budget line, or when the entries differ from the budget's.
With --update it writes BUDGET from this build instead.
"""

import os
import re
import subprocess
import sys

ARCHS = ("sm_80", "sm_90")

HEADER = """\
# Registers, spilled bytes (stores) and static shared bytes of every kernel
# entry, as ptxas {version} reports them for the PTX the crate embeds.
# scripts/ptxas-check.sh fails when an entry needs more registers or spills
# more than its line says; `bash scripts/ptxas-check.sh --update` rewrites
# this file (review the diff: a higher count is a regression to explain).
# arch entry registers spill_bytes smem_bytes
"""


def report(out_dir, arch):
    """{entry: (registers, spill_bytes, smem_bytes)} for one architecture."""
    log = os.path.join(out_dir, f"rmm_kernels.{arch}.ptxas.log")
    cubin = os.path.join(out_dir, f"rmm_kernels.{arch}.cubin")
    if not os.path.isfile(log) or not os.path.isfile(cubin):
        sys.exit(f"ptxas-check: the build made no {arch} cubin and report in {out_dir}")
    with open(log, errors="replace") as f:
        text = f.read()
    for line in text.splitlines():
        if "warning" in line:
            print(f"ptxas-check: {arch}: {line.strip()}")
    kernels = {}
    entry = None
    spill = 0
    for line in text.splitlines():
        if m := re.search(r"Compiling entry function '([^']+)'", line):
            entry, spill = m.group(1), 0
        elif entry and (m := re.search(r"(\d+) bytes spill stores", line)):
            spill = int(m.group(1))
        elif entry and (m := re.search(r"Used (\d+) registers", line)):
            smem = re.search(r"(\d+) bytes smem", line)
            kernels[entry] = (int(m.group(1)), spill, int(smem.group(1)) if smem else 0)
            entry = None
    if not kernels:
        sys.exit(f"ptxas-check: no entry found in ptxas's report for {arch}:\n{text}")
    return kernels


def version(ptxas):
    out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else "(unknown version)"


def read_budget(path):
    budget = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            arch, entry, regs, spill, smem = line.split()
            budget[(arch, entry)] = (int(regs), int(spill), int(smem))
    return budget


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv[1:]
    if len(args) != 3:
        sys.exit(__doc__)
    ptxas, out_dir, budget_path = args
    found = {(arch, e): v for arch in ARCHS for e, v in report(out_dir, arch).items()}
    if update:
        with open(budget_path, "w") as f:
            f.write(HEADER.format(version=version(ptxas)))
            for (arch, e), (regs, spill, smem) in sorted(found.items()):
                f.write(f"{arch} {e} {regs} {spill} {smem}\n")
        print(f"ptxas-check: wrote {len(found)} lines to {budget_path}")
        return
    budget = read_budget(budget_path)
    problems = []
    for key in sorted(set(found) | set(budget)):
        arch, e = key
        if key not in budget:
            problems.append(f"{arch} {e}: not in the budget (new entry?)")
            continue
        if key not in found:
            problems.append(f"{arch} {e}: in the budget, but not in the PTX")
            continue
        (regs, spill, _), (b_regs, b_spill, _) = found[key], budget[key]
        over = []
        if regs > b_regs:
            over.append(f"{arch} {e}: {regs} registers, budget {b_regs}")
        if spill > b_spill:
            over.append(f"{arch} {e}: {spill} bytes spilled, budget {b_spill}")
        problems += over
        if not over and (regs, spill) != (b_regs, b_spill):
            print(f"ptxas-check: {arch} {e}: {regs} registers, {spill} bytes spilled, "
                  f"below the budget ({b_regs}, {b_spill}); --update lowers it")
    spilling = sorted(f"{a} {e} ({s} bytes)" for (a, e), (_, s, _) in found.items() if s)
    print(f"ptxas-check: {len(found)} entries assembled for {', '.join(ARCHS)} "
          f"(ptxas {version(ptxas)}); spilling: {', '.join(spilling) or 'none'}")
    if problems:
        print("ptxas-check: over the budget in " + budget_path + ":\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
