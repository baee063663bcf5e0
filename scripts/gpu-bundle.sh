#!/usr/bin/env bash
# Builds every test binary of the workspace in release mode (no debug info)
# and bundles them with a runner into .gpu-bundle/, to take to a GPU machine
# that has no Rust:
#
#   bash scripts/gpu-bundle.sh                 # here: build and bundle
#   bash .gpu-bundle/run.sh                    # there: RMM_REQUIRE_GPU=1, every binary
#   RUN_TAG=memcheck bash .gpu-bundle/run.sh compute-sanitizer --tool memcheck \
#       --error-exitcode 1 --report-api-errors no   # (tests provoke OOM on purpose)
#
# The runner prints one line: SUMMARY passed=P failed=F skipped=S binaries=B.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out="$root/.gpu-bundle"
rm -rf "$out"
mkdir -p "$out/bin"
cargo test --workspace --release --no-run --message-format=json-render-diagnostics "$@" \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    kinds = m.get("target", {}).get("kind", [])
    # Test harnesses of libraries and test targets; programs (kind "bin")
    # have no tests and go to tools/ as themselves.
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test") \
            and "bin" not in kinds:
        print(m["target"]["name"] + " " + m["executable"])
' | while read -r name exe; do
  cp "$exe" "$out/bin/$name"
  strip --strip-debug "$out/bin/$name" 2>/dev/null || true
done
# The workspace's programs (demo, tools) and benchmarks go to tools/, not bin/:
# the runner runs bin/ only.
mkdir -p "$out/tools"
cargo build --workspace --release --bins "$@"
for exe in target/release/rmm-*; do
  [ -x "$exe" ] && [ -f "$exe" ] && cp "$exe" "$out/tools/"
done
cargo bench --workspace --no-run --message-format=json-render-diagnostics "$@" 2>/dev/null \
  | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "bench" in m["target"].get("kind", []):
        print(m["target"]["name"] + " " + m["executable"])
' | while read -r name exe; do cp "$exe" "$out/tools/bench-$name"; done
# The replay, report and demo tests look for their programs beside bin/.
cp "$out/tools/rmm-replay" "$out/tools/rmm-report" "$out/tools/rmm-demo" "$out/"
cp scripts/gpu-run.sh "$out/run.sh"
# A compressed copy travels in a third of the space (the device tool carries
# 64 MiB at most): scripts/gpu-verify.sh unpacks it when .gpu-bundle/ is absent.
tar czf "$root/.gpu-bundle.tgz" -C "$root" .gpu-bundle
du -sh "$out" "$root/.gpu-bundle.tgz"
ls "$out/bin" "$out/tools"
