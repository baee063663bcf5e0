#!/usr/bin/env bash
# The project's test command (README "Quick start"): sets up what is missing,
# then runs every test of the workspace, doc tests included, with each test
# binary's tests in parallel, then the Python package's tests
# (scripts/python-test.sh: builds the rmm_rs wheel in target/py-venv and
# runs pytest; `--no-python` skips them). GPU tests run when a GPU is present and skip
# otherwise (RMM_REQUIRE_GPU=1 turns skips into failures); the output ends
# with a SKIPPED line (how many skipped, and where), so a run without a GPU
# cannot read as a GPU pass.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
skips=$(mktemp)
trap 'rm -f "$skips"' EXIT
export RMM_SKIP_LOG="$skips"
python=1
args=()
for a in "$@"; do
  if [ "$a" = "--no-python" ]; then python=0; else args+=("$a"); fi
done
status=0
cargo test --workspace "${args[@]}" || status=$?
pyskips=0
if [ "$python" = 1 ]; then
  echo "== Python package (rmm_rs): wheel + pytest =="
  pylog=$(mktemp)
  trap 'rm -f "$skips" "$pylog"' EXIT
  bash scripts/python-test.sh 2>&1 | tee "$pylog" || status=$?
  pyskips=$(tail -n 3 "$pylog" | grep -o '[0-9]* skipped' | grep -o '[0-9]*' || true)
  pyskips=${pyskips:-0}
fi
n=$(grep -c . "$skips" || true)
if [ "$n" -gt 0 ]; then
  echo "SKIPPED: $n GPU tests did not run (no usable GPU); they passed nothing. Where they skipped:"
  sed 's/ (.*//' "$skips" | sort | uniq -c | sort -rn | head -40
  echo "(RMM_REQUIRE_GPU=1 makes a skip a failure; scripts/gpu-bundle.sh runs them on a GPU machine)"
else
  echo "SKIPPED: 0 GPU tests"
fi
if [ "$pyskips" -gt 0 ]; then
  echo "SKIPPED (Python): $pyskips pytest tests did not run (reasons in pytest's 'short test summary' above)"
fi
exit $status
