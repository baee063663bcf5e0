#!/usr/bin/env bash
# Places NVIDIA's ptxas (from PyPI's nvidia-cuda-nvcc-cu12 wheel, a pinned
# version, so that its output is reproducible) at
# target/tools/cuda-nvcc-<version>/nvidia/cuda_nvcc/bin/ptxas, links
# target/tools/ptxas to it, and prints that link's path. The one place that fetches ptxas: build.rs looks for it
# there (or at $RMM_PTXAS) to turn the kernels' PTX into sm_80 and sm_90
# machine code, and scripts/ptxas-check.sh checks registers and spills with
# it. Nothing else of CUDA is fetched; without network it fails and the
# build embeds PTX only.
#
#   bash scripts/fetch-ptxas.sh     # fetch once (a no-op when present)
set -euo pipefail
cd "$(dirname "$0")/.."
version=12.9.86
tools=target/tools/cuda-nvcc-$version
ptxas=$tools/nvidia/cuda_nvcc/bin/ptxas
if [ ! -x "$ptxas" ]; then
  echo "fetch-ptxas: fetching ptxas $version (PyPI nvidia-cuda-nvcc-cu12)" >&2
  rm -rf "$tools"
  mkdir -p "$tools"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    "nvidia-cuda-nvcc-cu12==$version" -d "$tools/wheel" >&2
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
link=target/tools/ptxas
want=cuda-nvcc-$version/nvidia/cuda_nvcc/bin/ptxas
# Rewritten only when it changes: build.rs reruns when target/tools changes.
if [ "$(readlink "$link" 2>/dev/null)" != "$want" ]; then
  ln -sfn "$want" "$link"
fi
echo "$link"
