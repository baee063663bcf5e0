#!/usr/bin/env bash
# The project's test command (README "Quick start"): sets up what is missing,
# then runs every test of the workspace, doc tests included, with each test
# binary's tests in parallel. GPU tests run when a GPU is present and skip
# otherwise (RMM_REQUIRE_GPU=1 turns skips into failures); the output ends
# with a SKIPPED line (how many skipped, and where), so a run without a GPU
# cannot read as a GPU pass.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
skips=$(mktemp)
trap 'rm -f "$skips"' EXIT
export RMM_SKIP_LOG="$skips"
status=0
cargo test --workspace "$@" || status=$?
n=$(grep -c . "$skips" || true)
if [ "$n" -gt 0 ]; then
  echo "SKIPPED: $n GPU tests did not run (no usable GPU); they passed nothing. Where they skipped:"
  sed 's/ (.*//' "$skips" | sort | uniq -c | sort -rn | head -40
  echo "(RMM_REQUIRE_GPU=1 makes a skip a failure; scripts/gpu-bundle.sh runs them on a GPU machine)"
else
  echo "SKIPPED: 0 GPU tests"
fi
exit $status
