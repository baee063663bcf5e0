#!/usr/bin/env bash
# The whole GPU verification in one call, on the GPU machine, from the
# repository root with .gpu-bundle.tgz or .gpu-bundle/ (scripts/gpu-bundle.sh)
# and, for the benchmarks, .anchors/ (../shared/anchors/stage.sh) carried along:
#
#   bash scripts/gpu-verify.sh tests      # every test binary, RMM_REQUIRE_GPU=1
#   bash scripts/gpu-verify.sh memcheck   # compute-sanitizer memcheck (sizes capped)
#   bash scripts/gpu-verify.sh racecheck  # racecheck on the kernels (tiny sizes)
#   bash scripts/gpu-verify.sh bench      # allocator and kernel benchmarks next to RMM / CuPy
#   bash scripts/gpu-verify.sh all        # all four, in that order
#
# With two or more GPUs the multi-GPU tests must run (RMM_REQUIRE_GPUS).
# Logs and CSVs land in $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
export RMM_REQUIRE_GPU=1
if [ "$gpus" -ge 2 ]; then export RMM_REQUIRE_GPUS=2; fi
if [ ! -d .gpu-bundle ] && [ -f .gpu-bundle.tgz ]; then tar xzf .gpu-bundle.tgz; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# These two binaries stall when their GPU tests run in parallel (README).
export SERIAL_BINS="adaptors containers"
status=0
step() {
  case "$1" in
    tests)
      BIN_TIMEOUT=300 bash .gpu-bundle/run.sh || status=1 ;;
    memcheck)
      RUN_TAG=memcheck RMM_TEST_MAX_LOG2=16 TEST_ARGS="--skip large" BIN_TIMEOUT=300 \
        bash .gpu-bundle/run.sh compute-sanitizer --tool memcheck --error-exitcode 1 \
        --report-api-errors no || status=1 ;;
    racecheck)
      RUN_TAG=racecheck RMM_TEST_MAX_LOG2=10 TEST_ARGS="--skip large" BIN_TIMEOUT=400 \
        ONLY_BINS="algorithms sort fill copy container_ops" \
        bash .gpu-bundle/run.sh compute-sanitizer --tool racecheck --error-exitcode 1 || status=1 ;;
    bench)
      bash .anchors/run.sh alloc .gpu-bundle/tools/bench-alloc_workloads || status=1
      bash .anchors/run.sh kernels .gpu-bundle/tools/bench-kernels || status=1 ;;
    *) echo "unknown step $1 (tests|memcheck|racecheck|bench|all)" >&2; exit 2 ;;
  esac
}
if [ "${1:-all}" = all ]; then
  for s in tests memcheck racecheck bench; do step "$s"; done
else
  for s in "$@"; do step "$s"; done
fi
exit $status
