#!/usr/bin/env bash
# Checks the kernels' machine code for sm_80 and sm_90, which the build
# assembles from the PTX it embeds (launch bounds included) with NVIDIA's
# ptxas: no GPU needed. Every entry must assemble, and its registers and spilled bytes must stay within
# kernels/ptxas-budget.txt, so that a change which makes a kernel spill (or
# need more registers than its blocks per multiprocessor allow) shows in CI
# and not only on the GPU machine.
#
#   bash scripts/ptxas-check.sh            # check (.ci/run does)
#   bash scripts/ptxas-check.sh --update   # rewrite the budget from this build
#
# ptxas comes from PyPI's nvidia-cuda-nvcc-cu12 wheel (a pinned version, so
# its counts are reproducible), fetched once by scripts/fetch-ptxas.sh. The
# counts are those of the build's own ptxas run (build.rs writes its `-v`
# report beside each cubin), so the budget covers the machine code the
# crate embeds. For other architectures the driver compiles the same PTX
# itself; on the H200 (driver 580) its counts matched this ptxas for the
# kernels compared (docs/toolchain.md).
#
# It also checks the build without ptxas: RMM_PTXAS pointing nowhere must
# give a PTX-only build that says so in a cargo warning.
set -euo pipefail
cd "$(dirname "$0")/.."
ptxas=$(bash scripts/fetch-ptxas.sh)
# Prints rmm-suite's build-script output folder and whether the build warned
# that it made no machine code; the arguments are environment assignments
# for that build.
build_out() {
  local err
  err=$(mktemp)
  env "$@" cargo check -p rmm-suite --message-format=json 2>"$err" | python3 -c '
import json, sys
dirs = [m["out_dir"] for m in map(json.loads, sys.stdin)
        if m.get("reason") == "build-script-executed" and "#rmm-suite@" in m.get("package_id", "")]
print(dirs[-1] if dirs else "-", end=" ")
'
  if grep -q "no machine code" "$err"; then echo warned; else echo quiet; fi
  rm -f "$err"
}
read -r out_dir said < <(build_out RMM_PTXAS=/nonexistent/ptxas)
if [ "$said" != warned ] || grep -q "Cubin {" "$out_dir/kernel_images.rs"; then
  echo "ptxas-check: a build without ptxas must embed PTX only and warn (it was $said)" >&2
  exit 1
fi
echo "ptxas-check: without ptxas (RMM_PTXAS=/nonexistent/ptxas) the build embeds PTX only and warns"
read -r out_dir said < <(build_out)
if [ "$said" != quiet ]; then
  echo "ptxas-check: with $ptxas the build still made no machine code (see cargo's warning)" >&2
  exit 1
fi
python3 scripts/ptxas_budget.py "$ptxas" "$out_dir" kernels/ptxas-budget.txt "$@"
