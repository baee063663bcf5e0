#!/usr/bin/env bash
# Bundles what the GPU check of the kernels' machine code needs and writes
# its runner: the release `launchers` test binary and the `first_launch`
# benchmark, stripped, into DEST/bundle.tgz with DEST/run.sh.
#
#   bash scripts/gpu-sass.sh DEST        # here (builds what is missing)
#   bash DEST/run.sh                     # there, from a checkout's root; logs to $OUT/sass/
#
# There the runner measures the first launch of every kernel family in fresh
# processes (cubin, then forced PTX; driver cache off), then runs the
# launchers' tests with RMM_REQUIRE_GPU=1 forced onto the PTX
# (RMM_KERNEL_IMAGE=ptx), sizes up to 2^24, without the two host-bound
# sort_large tests (2^26 and 2^28 keys sorted on the host too; they and every
# other test run from the cubin in the full bundle, scripts/gpu-bundle.sh,
# where the default image is the device's cubin). About 40 s on an H200.
set -euo pipefail
dest=${1:?usage: gpu-sass.sh DEST}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
stage=$(mktemp -d)
exe() { # cargo's JSON on stdin: the executable of target $1
  python3 -c '
import json, sys
for line in sys.stdin:
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])
' "$1" | tail -n 1
}
cp "$(cargo test --release --no-run -p rmm-suite --test launchers --message-format=json 2>/dev/null | exe launchers)" "$stage/launchers"
cp "$(cargo bench --no-run -p rmm-suite --bench first_launch --message-format=json 2>/dev/null | exe first_launch)" "$stage/first_launch"
strip --strip-debug "$stage/launchers" "$stage/first_launch"
mkdir -p "$dest"
tar czf "$dest/bundle.tgz" -C "$stage" launchers first_launch
rm -rf "$stage"
cat > "$dest/run.sh" <<'RUN'
#!/usr/bin/env bash
# The GPU check of the kernels' machine code (made by scripts/gpu-sass.sh).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
log="${OUT:-/tmp}/sass"
mkdir -p "$log"
work=$(mktemp -d)
tar xzf "$here/bundle.tgz" -C "$work"
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv >"$log/gpu.txt" 2>&1
export RMM_REQUIRE_GPU=1
start=$(date +%s)
timeout 22 "$work/first_launch" >"$log/first_launch.csv" 2>"$log/first_launch.err"
echo "first_launch rc=$? ($(( $(date +%s) - start )) s)" >>"$log/summary.txt"
export RMM_TEST_MAX_LOG2=24
RMM_KERNEL_IMAGE=ptx timeout 24 "$work/launchers" --skip sort::sort_large --show-output \
  >"$log/launchers-ptx.log" 2>&1
echo "launchers ptx rc=$?: $(grep -E '^test result' "$log/launchers-ptx.log" | tail -n 1)" >>"$log/summary.txt"
grep -E "loaded (Sass|Ptx)" "$log/launchers-ptx.log" >>"$log/summary.txt"
echo "total $(( $(date +%s) - start )) s" >>"$log/summary.txt"
cat "$log/summary.txt" "$log/first_launch.csv"
RUN
du -h "$dest/bundle.tgz"
