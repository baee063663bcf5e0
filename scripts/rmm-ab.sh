#!/usr/bin/env bash
# Our allocators beside RMM's in ONE process (benches/rmm_ab): builds
# benches/rmm_ab/rmm_ab.cu with nvcc against RMM's wheel (staged in
# .anchors/, as for the anchor) and our C ABI library, then runs it.
#
#   here:             cargo build --release -p rmm-ab     # target/release/librmm_ab.so
#   on the GPU machine (carry .anchors and target/release/librmm_ab.so):
#                     bash scripts/rmm-ab.sh [RESOURCE...]  # cuda_async pool binning arena
#
# RMM_AB_REPS sets the repetitions per row (default 9); RMM_AB_LAYERS=0
# leaves out the cuda_async layers (rmm_ab.cu says what they are). Writes rmm_ab.csv
# (every repetition and a summary line per row) into $OUT (default
# .gpu-bench) and prints the summary lines.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-.gpu-bench}
mkdir -p "$out"
ab=$(cd "${RMM_AB_LIB_DIR:-target/release}" && pwd)
[ -f "$ab/librmm_ab.so" ] || { echo "rmm-ab: no $ab/librmm_ab.so (cargo build --release -p rmm-ab)" >&2; exit 2; }
rmm=$PWD/.anchors/librmm
log=$PWD/.anchors/rapids_logger
[ -d "$rmm/include" ] || { echo "rmm-ab: RMM's wheel is not staged in .anchors/" >&2; exit 2; }
export PATH=$PATH:/usr/local/cuda/bin
bin=$out/rmm_ab
nvcc -std=c++20 -O2 -arch=sm_90 --expt-relaxed-constexpr \
  -I"$rmm/include" -I"$rmm/include/rapids" -I"$log/include" benches/rmm_ab/rmm_ab.cu \
  -L"$rmm/lib64" -lrmm -L"$log/lib64" -lrapids_logger -L"$ab" -lrmm_ab \
  -L/usr/local/cuda/lib64/stubs -lcuda \
  -Xlinker -rpath="$rmm/lib64" -Xlinker -rpath="$log/lib64" -Xlinker -rpath="$ab" -o "$bin"
rc=0
"$bin" "$@" >"$out/rmm_ab.csv" || rc=$?
grep -E '^(summary|layer)' "$out/rmm_ab.csv" || true
exit $rc
