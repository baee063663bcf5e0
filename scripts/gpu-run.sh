#!/usr/bin/env bash
# Runs every bundled test binary with RMM_REQUIRE_GPU=1 (so nothing can pass
# by skipping), optionally under a wrapper such as
# `compute-sanitizer --tool memcheck --error-exitcode 1`, and prints
#   SUMMARY passed=P failed=F skipped=S binaries=B [sanitizer_errors=E]
# Environment: BIN_TIMEOUT (seconds per binary), TEST_ARGS (passed to every
# binary), ONLY_BINS (space-separated binary names), RUN_TAG. Every binary
# runs its tests in parallel. With .eu/eu-stack beside the bundle (elfutils,
# see DESIGN.md), a test watchdog that fires dumps every thread's stack.
# Logs go to $LOGDIR (default .gpu-bundle/logs); when $OUT is set (the GPU
# machine's return folder) they are also packed into $OUT/logs-<tag>.tgz.
here=$(cd "$(dirname "$0")" && pwd)
logs=${LOGDIR:-$here/logs}
mkdir -p "$logs"
export RMM_REQUIRE_GPU=1
if [ -z "${RMM_EU_STACK:-}" ] && [ -x "$here/../.eu/eu-stack" ]; then export RMM_EU_STACK="$here/../.eu/eu-stack"; fi
passed=0; failed=0; skipped=0; bins=0; san=0; crashed=0
tag=${RUN_TAG:-plain}
for bin in "$here"/bin/*; do
  name=$(basename "$bin")
  log="$logs/$tag-$name.log"
  bins=$((bins + 1))
  if [ -n "${ONLY_BINS:-}" ] && ! grep -qw "$name" <<<"$ONLY_BINS"; then continue; fi
  # A binary that outlives BIN_TIMEOUT is a stall: every thread's stack of
  # it (and of a wrapper such as compute-sanitizer) goes into its log when
  # RMM_EU_STACK names eu-stack, then it is killed (rc 124).
  "$@" "$bin" --nocapture ${TEST_ARGS:-} >"$log" 2>&1 &
  pid=$!
  ticks=0
  while kill -0 "$pid" 2>/dev/null && [ "$ticks" -lt $((${BIN_TIMEOUT:-600} * 10)) ]; do
    sleep 0.1; ticks=$((ticks + 1))
  done
  if kill -0 "$pid" 2>/dev/null; then
    if [ -n "${RMM_EU_STACK:-}" ]; then
      for p in $(pgrep -f -- "$bin"); do
        echo "=== stacks of $p: $(tr '\0' ' ' </proc/$p/cmdline)" >>"$log"
        LD_LIBRARY_PATH=$(dirname "$RMM_EU_STACK") "$RMM_EU_STACK" -p "$p" >>"$log" 2>&1
      done
    fi
    pkill -9 -f -- "$bin"; kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rc=124
  else
    wait "$pid"; rc=$?
  fi
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "$name: TIMED OUT after ${BIN_TIMEOUT:-600}s" >>"$log"; fi
  p=$(grep -Eo 'test result: [A-Za-z]+\. [0-9]+ passed' "$log" | awk '{s+=$4} END {print s+0}')
  f=$(grep -Eo '; [0-9]+ failed' "$log" | awk '{s+=$2} END {print s+0}')
  s=$(grep -c 'RMM-SKIP:' "$log")
  e=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | awk '{s+=$3} END {print s+0}')
  # compute-sanitizer exits non-zero for binaries that never call CUDA.
  if [ "$rc" -ne 0 ] && grep -q 'terminated before first instrumented API call' "$log"; then rc=0; fi
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then crashed=$((crashed + 1)); f=$((f + 1)); fi
  passed=$((passed + p - s)); failed=$((failed + f)); skipped=$((skipped + s)); san=$((san + e))
  echo "$name: rc=$rc passed=$((p - s)) failed=$f skipped=$s sanitizer_errors=$e"
  if [ "$rc" -ne 0 ]; then grep -E 'panicked|FAILED|failed|Invalid|ERROR|TIMED OUT' "$log" | head -20; fi
  if [ -n "${OUT:-}" ]; then tar czf "$OUT/logs-$tag.tgz" -C "$logs" .; fi
done
echo "SUMMARY passed=$passed failed=$failed skipped=$skipped binaries=$bins sanitizer_errors=$san crashed=$crashed ($tag)"
[ "$failed" -eq 0 ] && [ "$san" -eq 0 ]
