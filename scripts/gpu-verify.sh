#!/usr/bin/env bash
# The whole GPU verification in one call, on the GPU machine, from the
# repository root with .gpu-bundle.tgz or .gpu-bundle/ (scripts/gpu-bundle.sh)
# and, for the benchmarks, .anchors/ (../shared/anchors/stage.sh) carried along:
#
#   bash scripts/gpu-verify.sh tests      # every test binary, RMM_REQUIRE_GPU=1
#   bash scripts/gpu-verify.sh memcheck   # compute-sanitizer memcheck (sizes capped)
#   bash scripts/gpu-verify.sh racecheck  # racecheck on the kernels (tiny sizes)
#   bash scripts/gpu-verify.sh bench      # allocator and kernel benchmarks next to RMM / CuPy,
#                                         # and graph replay against eager launches
#   bash scripts/gpu-verify.sh demo       # the demo on the GPU and the criterion micro benchmarks
#   bash scripts/gpu-verify.sh mixes      # the driver-only stall mixes (REPRO_MIXES, and with
#                                         # 2 GPUs REPRO_MIXES2), see repro/README.md
#   bash scripts/gpu-verify.sh trust      # mixes, then tests
#   bash scripts/gpu-verify.sh repeat     # resources (conformance::resources), containers, adaptors REPEAT times each
#                                         # (default 20), parallel tests, stacks of any stall
#   bash scripts/gpu-verify.sh python     # the Python package: scripts/gpu-python.sh (carry
#                                         # .gpu-wheel/ from `bash scripts/gpu-python.sh --build`)
#   bash scripts/gpu-verify.sh all        # tests, memcheck, racecheck, bench, in that order
#   bash scripts/gpu-verify.sh sanitizers # with 2+ GPUs: racecheck on GPU 1 beside tests,
#                                         # memcheck and demo on GPU 0; else one after another
#
# With two or more GPUs the multi-GPU tests must run (RMM_REQUIRE_GPUS).
# Logs and CSVs land in $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
# CUDA_VISIBLE_DEVICES=1 (e.g. a sanitizer on the second GPU while another
# runs on the first) hides the others from the tests.
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .); fi
export RMM_REQUIRE_GPU=1
if [ "$gpus" -ge 2 ]; then export RMM_REQUIRE_GPUS=2; else unset RMM_REQUIRE_GPUS; fi
if [ ! -d .gpu-bundle ] && [ -f .gpu-bundle.tgz ]; then tar xzf .gpu-bundle.tgz; fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
status=0
step() {
  case "$1" in
    tests)
      BIN_TIMEOUT=${BIN_TIMEOUT:-120} bash .gpu-bundle/run.sh || status=1 ;;
    memcheck)
      # 600 s a binary: `conformance` and `launchers` each hold what several
      # binaries of 300 s each held before (rmm/tests/conformance/main.rs).
      RUN_TAG=memcheck RMM_TEST_MAX_LOG2=16 TEST_ARGS="--skip large" BIN_TIMEOUT=${MEMCHECK_TIMEOUT:-600} \
        bash .gpu-bundle/run.sh compute-sanitizer --tool memcheck --error-exitcode 1 \
        --report-api-errors no || status=1 ;;
    racecheck)
      # Racecheck runs one test at a time: with parallel tests it stalled
      # (algorithms, container_ops, the 32-bit sorts, each in some run) where
      # one at a time every binary passes in seconds. Small sizes, and the sort
      # tests only through their each_kernel_once tests (every sort kernel,
      # several tiles, a partial one; one key type per width covers every
      # kernel: unsigned ascending runs the plain kernels, descending the
      # general ones), one process per kernel family. The `launchers` binary
      # holds the former binaries algorithms, fill, copy, container_ops, sort
      # and span_order as modules; the filters pick what each run ran before
      # (the first run holds four former binaries, so twice their time).
      RUN_TAG=racecheck RMM_TEST_MAX_LOG2=10 BIN_TIMEOUT=${RACE_TIMEOUT:-800} ONLY_BINS=launchers \
        TEST_ARGS="algorithms:: fill:: copy:: container_ops:: --skip large --test-threads=1" \
        bash .gpu-bundle/run.sh compute-sanitizer --tool racecheck --error-exitcode 1 || status=1
      race_sort() {
        RUN_TAG=racecheck-sort-$1 TEST_ARGS="$2 --test-threads=1" BIN_TIMEOUT=${RACE_TIMEOUT:-400} ONLY_BINS=launchers \
          bash .gpu-bundle/run.sh compute-sanitizer --tool racecheck --error-exitcode 1
      }
      race_sort 64 "sort::each_kernel_once_keys_u64 sort::each_kernel_once_pairs_u64" || status=1
      race_sort 32pairs "sort::each_kernel_once_pairs_u32" || status=1
      race_sort 32keys "sort::each_kernel_once_keys_u32" || status=1
      # The kernels captured into graphs and replayed (every launcher, the
      # pipeline with 20 replays at these sizes), over cuda_async and a pool.
      RUN_TAG=racecheck-capture RMM_TEST_MAX_LOG2=10 TEST_ARGS="--test-threads=1" BIN_TIMEOUT=${RACE_TIMEOUT:-400} ONLY_BINS=capture \
        bash .gpu-bundle/run.sh compute-sanitizer --tool racecheck --error-exitcode 1 || status=1 ;;
    mixes)
      # The driver-only stall mixes of repro/driver_stall.c (see repro/README.md);
      # the two-device mixes only with two GPUs.
      mkdir -p "${OUT:-.gpu-bench}"
      m=${REPRO_MIXES:-"F r w W"}
      [ "$gpus" -ge 2 ] && m="$m ${REPRO_MIXES2:-y MDAqSy x}"
      OUT=${OUT:-.gpu-bench}/repro REPRO_THREADS=32 REPRO_S=8 bash repro/probe.sh "" "$m" || status=1 ;;
    trust)
      # carry .eu (elfutils' eu-stack) for thread dumps of a stall
      [ -x .eu/eu-stack ] && export RMM_EU_STACK=$PWD/.eu/eu-stack
      step mixes
      step tests ;;
    repeat)
      # resources (the conformance binary's `resources::` tests), containers
      # and adaptors REPEAT times in a row each, the three sequences side by
      # side (more pressure than one at a time, and a third of the wall
      # time); a run that outlives STALL_S is a stall.
      n=${REPEAT:-20}
      for b in resources containers adaptors; do
        spec="$b:$n"
        [ "$b" = resources ] && spec="conformance:$n:resources::"
        OUT=${OUT:-.gpu-bench}/repeat-$b STALL_S=${STALL_S:-60} bash repro/probe.sh "$spec" "" >/dev/null 2>&1 &
      done
      wait
      cat "${OUT:-.gpu-bench}"/repeat-*/summary.txt | grep -v "^NVIDIA" | awk '{print $1, $4}' | sort | uniq -c
      if grep -q STALLED "${OUT:-.gpu-bench}"/repeat-*/summary.txt; then status=1; fi
      if grep -qE "rc=[1-9]" "${OUT:-.gpu-bench}"/repeat-*/summary.txt; then status=1; fi ;;
    bench)
      bash .anchors/run.sh alloc .gpu-bundle/tools/bench-alloc_workloads || status=1
      bash .anchors/run.sh kernels .gpu-bundle/tools/bench-kernels || status=1
      # Graph replay against eager launches (benches/capture.rs).
      .gpu-bundle/tools/bench-capture | tee "${OUT:-.}/capture-bench.txt" || status=1
      # Dry-run scratch peaks beside the GPU's (benches/dry_run.rs; docs/dry-run.md's table).
      .gpu-bundle/tools/bench-dry_run | tee "${OUT:-.}/dry-run-bench.md" || status=1 ;;
    demo)
      mkdir -p .gpu-bench
      .gpu-bundle/rmm-demo --out .gpu-bench/demo-out || status=1
      # Criterion with short windows: a look at every resource, not a study.
      .gpu-bundle/tools/bench-micro --bench --noplot --warm-up-time 0.2 --measurement-time 0.5 \
        | tee .gpu-bench/micro.txt || status=1
      if [ -n "${OUT:-}" ]; then tar czf "$OUT/demo.tgz" -C .gpu-bench demo-out micro.txt; fi ;;
    sanitizers)
      if [ "$gpus" -ge 2 ]; then
        (CUDA_VISIBLE_DEVICES=1 bash "$0" racecheck >"${OUT:-.}/racecheck.txt" 2>&1) &
        step tests
        CUDA_VISIBLE_DEVICES=0 bash "$0" memcheck || status=1
        RUN_TAG=memcheck-multi ONLY_BINS=multi_device BIN_TIMEOUT=300 \
          bash .gpu-bundle/run.sh compute-sanitizer --tool memcheck --error-exitcode 1 \
          --report-api-errors no || status=1
        CUDA_VISIBLE_DEVICES=0 bash "$0" demo || status=1
        wait || status=1
        grep -E "SUMMARY|rc=[1-9]|TIMED" "${OUT:-.}/racecheck.txt"
        grep -q "failed=0 skipped=0 .*sanitizer_errors=0" "${OUT:-.}/racecheck.txt" || status=1
      else
        for s in tests memcheck racecheck demo; do step "$s"; done
      fi ;;
    python)
      bash scripts/gpu-python.sh || status=1 ;;
    *) echo "unknown step $1 (tests|memcheck|racecheck|bench|demo|mixes|trust|repeat|sanitizers|python|all)" >&2; exit 2 ;;
  esac
}
if [ "${1:-all}" = all ]; then
  for s in tests memcheck racecheck bench; do step "$s"; done
else
  for s in "$@"; do step "$s"; done
fi
exit $status
