#!/usr/bin/env bash
# RAPIDS RMM's own Python test suite (python/rmm/rmm/tests of rapidsai/rmm)
# run against rmm_rs through the compatibility package (python/compat:
# `import rmm` resolves to rmm_rs). RMM's tests are a specification to run,
# never committed: they are copied into an ignored scratch folder.
#
# Here (a machine with a clone of rapidsai/rmm):
#   RMM_GIT_DIR=/path/to/rmm/.git bash scripts/rmm-suite.sh fetch [--dest DIR]
#     copies the tests at RMM_COMMIT (default below: RMM 26.08) into DIR
#     (default .rmm-suite/tests, ignored by git), with a pytest.ini carrying
#     RMM's own pytest settings (warnings are errors) and a SOURCE file
#     naming the commit.
#
# There (rmm_rs and rmm-rs-compat installed, with CuPy, Numba, PyTorch,
# cuda-bindings; from any directory):
#   bash scripts/rmm-suite.sh run [--tests DIR] [--out DIR] [--python PY] [PYTEST_ARG...]
#     runs pytest on DIR with a per-test timeout (TEST_TIMEOUT, default 120 s)
#     and writes OUT/rmm-suite.xml (junit), OUT/rmm-suite.log and
#     OUT/rmm-suite-summary.md: the pass count and every failure grouped by
#     reason, most frequent first (scripts/rmm_suite_summary.py).
#     A run stops after SUITE_TIMEOUT seconds (default 480), by SIGINT, so that
#     pytest still writes the XML of what ran.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# RMM 26.08 (rapidsai/rmm main with VERSION 26.08.00, 2026-07-02); its
# tests are identical to those of the tag v26.08.00a.
RMM_COMMIT=${RMM_COMMIT:-5d50a37b9612e29d53f8202fba792b1a36f88a79}
tests_path=python/rmm/rmm/tests

usage() {
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

fetch() {
  local dest=$root/.rmm-suite/tests
  while [ $# -gt 0 ]; do
    case "$1" in
      --dest) dest=$2; shift 2 ;;
      *) echo "rmm-suite fetch: unknown option $1" >&2; exit 2 ;;
    esac
  done
  if [ -z "${RMM_GIT_DIR:-}" ] || ! git --git-dir "$RMM_GIT_DIR" cat-file -e "$RMM_COMMIT^{commit}" 2>/dev/null; then
    echo "rmm-suite fetch: set RMM_GIT_DIR to a git directory of rapidsai/rmm holding $RMM_COMMIT" >&2
    exit 1
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  local n=0 f
  for f in $(git --git-dir "$RMM_GIT_DIR" ls-tree --name-only "$RMM_COMMIT" "$tests_path/"); do
    git --git-dir "$RMM_GIT_DIR" show "$RMM_COMMIT:$f" >"$dest/$(basename "$f")"
    n=$((n + 1))
  done
  # RMM's pytest settings (python/rmm/pyproject.toml at the same commit).
  git --git-dir "$RMM_GIT_DIR" show "$RMM_COMMIT:python/rmm/pyproject.toml" | python3 -c '
import sys
try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib
opts = tomllib.loads(sys.stdin.read())["tool"]["pytest"]["ini_options"]
print("[pytest]")
for key, value in opts.items():
    if isinstance(value, list):
        print(key + " =")
        for v in value:
            print("    " + v)
    else:
        print(f"{key} = {value}")
' >"$dest/pytest.ini"
  echo "rapidsai/rmm $RMM_COMMIT:$tests_path ($n files)" >"$dest/SOURCE"
  echo "rmm-suite fetch: $n files of rapidsai/rmm $RMM_COMMIT into $dest"
}

run() {
  local tests=$root/.rmm-suite/tests out=${OUT:-/tmp/out} py=${PYTHON:-python3}
  local args=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --tests) tests=$2; shift 2 ;;
      --out) out=$2; shift 2 ;;
      --python) py=$2; shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
  if [ ! -f "$tests/conftest.py" ]; then
    echo "rmm-suite run: no RMM tests in $tests (run 'rmm-suite.sh fetch' where a clone of rapidsai/rmm is)" >&2
    exit 1
  fi
  mkdir -p "$out"
  tests=$(cd "$tests" && pwd)
  out=$(cd "$out" && pwd)
  case "$py" in
    */*) py=$(cd "$(dirname "$py")" && pwd)/$(basename "$py") ;;
  esac
  echo "rmm-suite run: $(cat "$tests/SOURCE" 2>/dev/null)"
  # The alias must be what `import rmm` finds, and rmm_rs underneath it.
  (cd /tmp && "$py" -c 'import rmm, rmm_rs, sys; assert rmm is rmm_rs, rmm; print("import rmm ->", rmm.__name__, rmm.__file__)') || {
    echo "rmm-suite run: 'import rmm' does not resolve to rmm_rs: install python/compat (rmm-rs-compat)" >&2
    exit 1
  }
  # pytest-timeout's per-test limit, where it is installed (the GPU image has it).
  local per_test=()
  "$py" -c 'import pytest_timeout' 2>/dev/null && per_test=(--timeout "${TEST_TIMEOUT:-120}")
  (cd "$tests" && PYTHONUNBUFFERED=1 timeout -s INT -k 30 "${SUITE_TIMEOUT:-480}" "$py" -m pytest -p no:cacheprovider -v -rN --continue-on-collection-errors \
    --rootdir "$tests" -c "$tests/pytest.ini" "${per_test[@]}" \
    --junitxml "$out/rmm-suite.xml" -o junit_family=xunit2 "${args[@]}" . ) >"$out/rmm-suite.log" 2>&1
  local rc=$?
  tail -n 3 "$out/rmm-suite.log"
  "$py" "$here/rmm_suite_summary.py" "$out/rmm-suite.xml" --log "$out/rmm-suite.log" >"$out/rmm-suite-summary.md"
  head -n 3 "$out/rmm-suite-summary.md"
  echo "rmm-suite run: pytest rc=$rc; junit $out/rmm-suite.xml, summary $out/rmm-suite-summary.md"
  return 0
}

case "${1:-}" in
  fetch) shift; fetch "$@" ;;
  run) shift; run "$@" ;;
  *) usage ;;
esac
