#!/usr/bin/env bash
# Assembles the kernels' PTX, as the crate embeds it (launch bounds
# included), with NVIDIA's ptxas for sm_80 and sm_90: no GPU needed. Every
# entry must assemble, and its registers and spilled bytes must stay within
# kernels/ptxas-budget.txt, so that a change which makes a kernel spill (or
# need more registers than its blocks per multiprocessor allow) shows in CI
# and not only on the GPU machine.
#
#   bash scripts/ptxas-check.sh            # check (.ci/run does)
#   bash scripts/ptxas-check.sh --update   # rewrite the budget from this build
#
# ptxas comes from PyPI's nvidia-cuda-nvcc-cu12 wheel (a pinned version, so
# its counts are reproducible), unpacked once into target/tools/. The GPU
# machine's driver compiles the same PTX itself; its counts matched this
# ptxas for the kernels compared (docs/toolchain.md).
set -euo pipefail
cd "$(dirname "$0")/.."
version=12.9.86
tools=target/tools/cuda-nvcc-$version
ptxas=$tools/nvidia/cuda_nvcc/bin/ptxas
if [ ! -x "$ptxas" ]; then
  echo "ptxas-check: fetching ptxas $version (PyPI nvidia-cuda-nvcc-cu12)"
  rm -rf "$tools"
  mkdir -p "$tools"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    "nvidia-cuda-nvcc-cu12==$version" -d "$tools/wheel"
  python3 - "$tools" <<'PY'
import glob, os, sys, zipfile
tools = sys.argv[1]
wheel = glob.glob(os.path.join(tools, "wheel", "*.whl"))[0]
with zipfile.ZipFile(wheel) as z:
    z.extract("nvidia/cuda_nvcc/bin/ptxas", tools)
os.chmod(os.path.join(tools, "nvidia/cuda_nvcc/bin/ptxas"), 0o755)
PY
  rm -rf "$tools/wheel"
fi
# The PTX the crate embeds: the build script's output, found through cargo.
out_dir=$(cargo check -p rmm-suite --message-format=json 2>/dev/null | python3 -c '
import json, sys
dirs = [m["out_dir"] for m in map(json.loads, sys.stdin)
        if m.get("reason") == "build-script-executed" and "#rmm-suite@" in m.get("package_id", "")]
print(dirs[-1] if dirs else "")
')
ptx=$out_dir/rmm_kernels.ptx
if [ -z "$out_dir" ] || [ ! -f "$ptx" ]; then
  echo "ptxas-check: the build did not produce rmm_kernels.ptx" >&2
  exit 1
fi
python3 scripts/ptxas_budget.py "$ptxas" "$ptx" kernels/ptxas-budget.txt "$@"
