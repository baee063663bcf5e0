#!/usr/bin/env bash
# The fuzz targets of fuzz/ (libFuzzer through the libfuzzer-sys crate),
# built and run with the stable toolchain alone: no cargo-fuzz, no nightly.
# The instrumentation is what `cargo fuzz build --sanitizer none` asks rustc
# for (stable -C flags: SanitizerCoverage's inline 8-bit counters, PC table
# and comparison tracing), plus debug assertions and overflow checks, so an
# arithmetic overflow is a crash too. Needs a C++ compiler (libfuzzer-sys
# compiles libFuzzer; Debian: g++).
#
#   bash scripts/fuzz.sh list                    the targets
#   bash scripts/fuzz.sh build [TARGET...]       build (all by default)
#   bash scripts/fuzz.sh run TARGET SECONDS [libFuzzer args...]
#                                                fuzz one target that long
#   bash scripts/fuzz.sh ci [SECONDS]            every target SECONDS each (default 30)
#   bash scripts/fuzz.sh repro TARGET FILE       run one input (a crash file)
#   bash scripts/fuzz.sh cmin TARGET             fold what the runs found into
#                                                fuzz/corpus/TARGET, minimized
#
# Runs start from the committed corpus (fuzz/corpus/TARGET) and keep what
# they find in fuzz/target/found/TARGET (not committed; `cmin` merges it
# into the corpus). A crash is written to fuzz/artifacts/TARGET/ and fails
# the run, with the command that reproduces it. Each run prints libFuzzer's
# final statistics (`stat::number_of_executed_units`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
targets=(memlog report_csv size_str snapshot_json ops)
host=$(rustc -vV | sed -n 's/^host: //p')
bin_dir="$root/fuzz/target/$host/release"

build() {
  if ! command -v c++ >/dev/null 2>&1; then
    echo "fuzz: no C++ compiler (c++); libFuzzer is C++ (Debian: apt-get install g++)" >&2
    exit 1
  fi
  local flags=(
    -Cpasses=sancov-module
    -Cllvm-args=-sanitizer-coverage-level=4
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
    -Cllvm-args=-sanitizer-coverage-pc-table
    -Cllvm-args=-sanitizer-coverage-trace-compares
    --cfg fuzzing
    -Cdebug-assertions
    -Coverflow-checks
  )
  local bins=()
  for t in "$@"; do bins+=(--bin "$t"); done
  # --target: the flags reach the targets' code only, not build scripts.
  # No CARGO_PROFILE_DEV_DEBUG here: release, with the line tables the
  # manifest asks for (crash backtraces name files and lines).
  RUSTFLAGS="${flags[*]}" cargo build --release --locked \
    --manifest-path fuzz/Cargo.toml --target "$host" "${bins[@]}"
}

known() {
  local t
  for t in "${targets[@]}"; do [ "$t" = "$1" ] && return 0; done
  echo "fuzz: unknown target '$1' (targets: ${targets[*]})" >&2
  exit 2
}

# run TARGET SECONDS [args]: fuzz from the corpus; exit status of libFuzzer.
run() {
  local t=$1 secs=$2
  shift 2
  local found="$root/fuzz/target/found/$t" artifacts="$root/fuzz/artifacts/$t"
  mkdir -p "$found" "$artifacts" "$root/fuzz/corpus/$t"
  echo "== fuzz $t for ${secs}s (corpus: fuzz/corpus/$t, $(ls "$root/fuzz/corpus/$t" | wc -l) inputs) =="
  local status=0
  "$bin_dir/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$@" "$found" "$root/fuzz/corpus/$t" 2>&1 |
    grep -v '^#[0-9]*.*\(NEW\|REDUCE\|pulse\)' || status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $status); inputs that crash it:" >&2
    ls -1 "$artifacts" >&2 || true
    echo "reproduce: bash scripts/fuzz.sh repro $t fuzz/artifacts/$t/<file>" >&2
  fi
  return "$status"
}

cmd=${1:-}
shift || true
case "$cmd" in
  list) printf '%s\n' "${targets[@]}" ;;
  build)
    for t in "$@"; do known "$t"; done
    build "$@"
    ;;
  run)
    [ $# -ge 2 ] || { echo "usage: scripts/fuzz.sh run TARGET SECONDS [libFuzzer args...]" >&2; exit 2; }
    known "$1"
    build "$1"
    run "$@"
    ;;
  ci)
    secs=${1:-30}
    start=$SECONDS
    # fuzz/ is outside the workspace that .ci/run formats and lints.
    cargo fmt --manifest-path fuzz/Cargo.toml -- --check
    build
    echo "fuzz: built in $((SECONDS - start))s"
    failed=()
    for t in "${targets[@]}"; do run "$t" "$secs" || failed+=("$t"); done
    echo "fuzz: ${#targets[@]} targets, ${secs}s each, $((SECONDS - start))s in all"
    if [ ${#failed[@]} -gt 0 ]; then
      echo "fuzz: crashes in: ${failed[*]}" >&2
      exit 1
    fi
    ;;
  repro)
    [ $# -eq 2 ] || { echo "usage: scripts/fuzz.sh repro TARGET FILE" >&2; exit 2; }
    known "$1"
    build "$1"
    RUST_BACKTRACE=1 "$bin_dir/$1" "$2"
    ;;
  cmin)
    [ $# -eq 1 ] || { echo "usage: scripts/fuzz.sh cmin TARGET" >&2; exit 2; }
    known "$1"
    build "$1"
    t=$1
    merged="$root/fuzz/target/cmin/$t"
    rm -rf "$merged"
    mkdir -p "$merged" "$root/fuzz/target/found/$t"
    # The fewest inputs that cover every edge the corpus and the runs reach
    # (edges, not hit counts: keeps the committed corpus small).
    "$bin_dir/$t" -set_cover_merge=1 -use_counters=0 "$merged" \
      "$root/fuzz/corpus/$t" "$root/fuzz/target/found/$t"
    # Named seeds (the repository's logs, CSVs and snapshots) stay as they are.
    find "$root/fuzz/corpus/$t" -type f -not -regex '.*/[0-9a-f]\{40\}' -exec cp {} "$merged/" \;
    rm -rf "$root/fuzz/corpus/$t"
    mv "$merged" "$root/fuzz/corpus/$t"
    echo "fuzz: fuzz/corpus/$t now holds $(ls "$root/fuzz/corpus/$t" | wc -l) inputs"
    ;;
  *)
    sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
    [ -z "$cmd" ] || exit 2
    ;;
esac
