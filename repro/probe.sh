#!/usr/bin/env bash
# Stall probe on the GPU machine: the driver-only reproducer over several
# mixes of calls, then the rmm test binaries with their tests in parallel;
# a run that outlives STALL_S gets every thread's stack (eu-stack) and is killed.
# Usage (repo root, with .gpu-bundle/ or .gpu-bundle.tgz and .eu/ carried):
#   bash repro/probe.sh "conformance:5:resources:: containers:3 adaptors:3" "MDAHCSP DAHCSP M"
set -u
# (`resources` is the conformance binary's `resources::` tests.)
runs=${1-"conformance:5:resources:: containers:3 adaptors:3"}
mixes=${2-"MDAHCSP DAHCSP W U"}
out=${OUT:-/tmp/probe-out}; mkdir -p "$out/p"
log="$out/summary.txt"
# Pack the logs and stacks however the script ends (a timeout included): the
# device tool brings back at most 8 files.
trap 'tar czf "$out/probe.tgz" -C "$out" p && rm -rf "$out/p"' EXIT
[ -d .gpu-bundle ] || tar xzf .gpu-bundle.tgz
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$log"
if [ -n "$mixes" ]; then
  nvcc -O2 -o /tmp/driver_stall repro/driver_stall.c -lcuda -lpthread || echo "nvcc failed" | tee -a "$log"
  for k in $mixes; do
    timeout -k 5 40 /tmp/driver_stall "${REPRO_THREADS:-16}" "${REPRO_S:-10}" "$k" 8 >"$out/p/repro-$k.txt" 2>&1
    echo "repro $k rc=$? $(head -1 "$out/p/repro-$k.txt")" | tee -a "$log"
  done
fi
export RMM_REQUIRE_GPU=1
[ "$(nvidia-smi -L | wc -l)" -ge 2 ] && export RMM_REQUIRE_GPUS=2
for spec in $runs; do
  # name:count, or name:count:args with commas for spaces (resources:4:--skip,managed)
  IFS=: read -r bin n args <<<"$spec"; args=${args//,/ }
  for i in $(seq 1 "$n"); do
    tag=$bin${args:+-$(tr -dc a-z_ <<<"$args")}; f="$out/p/$tag-$i.log"
    start=$(date +%s%N)
    .gpu-bundle/bin/$bin $args ${TEST_ARGS:-} >"$f" 2>&1 &
    pid=$!
    waited=0
    while kill -0 $pid 2>/dev/null && [ $waited -lt $((${STALL_S:-30} * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
    if kill -0 $pid 2>/dev/null; then
      LD_LIBRARY_PATH=.eu .eu/eu-stack -p $pid -i >"$out/p/$tag-$i.stacks" 2>&1
      kill -9 $pid; wait $pid 2>/dev/null
      echo "$bin $args run $i: STALLED (stacks in $tag-$i.stacks) $(grep -c 'has been running for over' "$f") slow tests" | tee -a "$log"
    else
      wait $pid; rc=$?
      end=$(date +%s%N)
      echo "$bin $args run $i: rc=$rc $(grep -E '^test result' "$f" | tail -1) wall=$(( (end - start) / 1000000 ))ms" | tee -a "$log"
    fi
  done
done
