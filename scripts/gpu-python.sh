#!/usr/bin/env bash
# The Python package on the GPU machine, in one command.
#
# Here (the build machine, with Rust and network):
#   bash scripts/gpu-python.sh --build
#     builds the rmm_rs wheel (scripts/python-wheel.sh --gpu) into
#     .gpu-wheel/ (ignored by git), with pytest's wheels in .gpu-wheel/deps/
#     for a machine without network. Carry .gpu-wheel/ along with the
#     checkout.
#
# There (CPython 3.12 with CuPy and PyTorch, no Rust, no network), from the
# repository root:
#   OUT=/tmp/out bash scripts/gpu-python.sh [--quick] [STEP...]
#     1. env       what is installed (GPUs, Python, CuPy, PyTorch, Numba)
#     2. venv      a venv with --system-site-packages (the image's CuPy,
#                  PyTorch, NumPy, Numba stay visible), the wheel installed
#                  with pip --no-index --no-deps; pytest from the image or
#                  from .gpu-wheel/deps
#     3. import    rmm_rs imports and sees the GPU
#     4. pytest    the whole suite with RMM_REQUIRE_GPU=1 (a skipped GPU test
#                  fails), CuPy/PyTorch/NumPy required, RMM_REQUIRE_GPUS=2
#                  when there are two GPUs; junit XML kept
#     5. memcheck  the CuPy workload under compute-sanitizer memcheck, over
#                  plain cudaMalloc (bounds visible) and over the pool
#     6. bench     python/bench/alloc_bench.py: PyTorch's caching allocator
#                  against rmm_rs pool / arena / cuda_async, CuPy's pool
#                  against rmm_rs pool, with ratios (--quick: fewer steps)
#   STEP names some of env, venv, import, pytest, memcheck, bench (default:
#   all, in that order); a step that needs the venv makes it when it is
#   missing. Each step's output goes to $OUT/python/<step>.log (OUT
#   defaults to /tmp/out); a failing step is logged and the next one runs
#   anyway; pytest, memcheck and bench each stop after STEP_TIMEOUT
#   seconds (default 540). The end is one SUMMARY line per step, also in
#   $OUT/python/summary.txt. VENV (default .gpu-venv, ignored by git, kept
#   between calls) and PYTHON (default python3) can be set.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--build" ]; then
  exec bash scripts/python-wheel.sh --gpu
fi
quick=()
steps=()
for a in "$@"; do
  case "$a" in
    --quick) quick=(--quick) ;;
    env | venv | import | pytest | memcheck | bench) steps+=("$a") ;;
    *) echo "gpu-python: unknown option or step $a (steps: env venv import pytest memcheck bench)" >&2; exit 2 ;;
  esac
done
[ ${#steps[@]} -gt 0 ] || steps=(env venv import pytest memcheck bench)
limit=${STEP_TIMEOUT:-540}
OUT=${OUT:-/tmp/out}
logs="$OUT/python"
mkdir -p "$logs"
VENV=${VENV:-$(pwd)/.gpu-venv}
PY=${PYTHON:-python3}
repo=$(pwd)
summary=()
failed=0

# step NAME CMD...: runs CMD with its output in $logs/NAME.log, records a
# summary line with the exit status, the time and the log's last line.
step() {
  local name=$1; shift
  local t0=$SECONDS rc
  echo "== $name: $*"
  "$@" >"$logs/$name.log" 2>&1
  rc=$?
  local last
  last=$(grep -v '^\s*$' "$logs/$name.log" | tail -n 1 | cut -c1-160)
  local line
  line=$(printf 'SUMMARY %-9s %s rc=%d %ds  %s' "$name" "$([ $rc = 0 ] && echo PASS || echo FAIL)" "$rc" $((SECONDS - t0)) "$last")
  echo "$line"
  summary+=("$line")
  [ $rc = 0 ] || failed=$((failed + 1))
  return $rc
}

env_report() {
  nvidia-smi -L || true
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  "$PY" --version
  "$PY" - <<'PYEOF'
import importlib
for m in ("numpy", "cupy", "torch", "numba", "pytest"):
    try:
        mod = importlib.import_module(m)
        print(f"{m} {getattr(mod, '__version__', '?')}")
    except Exception as e:
        print(f"{m} MISSING ({e!r})")
PYEOF
  command -v compute-sanitizer && compute-sanitizer --version | tail -n 1 || echo "compute-sanitizer MISSING"
  ls -l .gpu-wheel .gpu-wheel/deps
}

make_venv() {
  local wheel
  wheel=$(ls .gpu-wheel/rmm_rs-*.whl 2>/dev/null | head -n 1)
  if [ -z "$wheel" ]; then
    echo "no .gpu-wheel/rmm_rs-*.whl: run 'bash scripts/gpu-python.sh --build' on the build machine and carry .gpu-wheel/"
    return 1
  fi
  rm -rf "$VENV"
  "$PY" -m venv --system-site-packages "$VENV" || return 1
  # --system-site-packages only reaches the base interpreter's packages; the
  # image's CuPy/PyTorch may live elsewhere (a venv of its own, the user
  # site). Append every site directory the image's python sees, after the
  # venv's own (so the wheel installed here comes first).
  local purelib
  purelib=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  "$PY" -c 'import sys; print("\n".join(p for p in sys.path if p.rstrip("/").endswith(("site-packages", "dist-packages"))))' \
    >"$purelib/zz_image_site_packages.pth"
  echo "image site directories added: $(tr '\n' ' ' <"$purelib/zz_image_site_packages.pth")"
  if ! "$VENV/bin/python" -m pip install --no-index --no-deps --force-reinstall "$wheel"; then
    # An older glibc than the manylinux tag says: try the plain linux tag
    # (the import then says which symbol is missing, if one is).
    local plain=/tmp/$(basename "$wheel" | sed 's/manylinux_[0-9_]*_x86_64/linux_x86_64/')
    cp "$wheel" "$plain" && "$VENV/bin/python" -m pip install --no-index --no-deps --force-reinstall "$plain" || return 1
  fi
  if ! "$VENV/bin/python" -c 'import pytest' 2>/dev/null; then
    echo "pytest is not in the image: installing it from .gpu-wheel/deps"
    "$VENV/bin/python" -m pip install --no-index --find-links .gpu-wheel/deps pytest || return 1
  fi
  "$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(rmm|pytest|torch|cupy|numba|numpy)' || true
}

import_check() {
  (cd /tmp && "$VENV/bin/python" -) <<'PYEOF'
import rmm_rs
reason = rmm_rs.gpu_unavailable_reason()
print("rmm_rs", rmm_rs.__version__, "from", rmm_rs.__file__)
print("GPUs:", rmm_rs.device_count(), "unavailable because:", reason)
free, total = rmm_rs.mr.available_device_memory()
print(f"device memory: {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB")
b = rmm_rs.DeviceBuffer.to_device(b"hello GPU")
assert b.tobytes() == b"hello GPU"
print("import: ok")
PYEOF
}

run_pytest() {
  local gpus
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  local extra=()
  [ "${gpus:-0}" -ge 2 ] && extra=(RMM_REQUIRE_GPUS=2)
  (cd "$repo/python/tests" && timeout "$limit" env RMM_REQUIRE_GPU=1 RMM_REQUIRE_MODULES=numpy,cupy,torch "${extra[@]}" \
    "$VENV/bin/python" -m pytest -ra -p no:cacheprovider --junitxml="$logs/junit.xml" -o junit_family=xunit2)
}

memcheck() {
  if ! command -v compute-sanitizer >/dev/null; then
    echo "compute-sanitizer not found"
    return 1
  fi
  local rc=0
  for res in cuda pool; do
    echo "--- CuPy workload over rmm_rs $res, compute-sanitizer memcheck"
    (cd /tmp && RMM_WORKLOAD_RESOURCE=$res timeout $((limit / 2)) compute-sanitizer --tool memcheck \
      --error-exitcode 1 --report-api-errors no --print-limit 50 \
      "$VENV/bin/python" "$repo/python/tests/workloads/cupy_workload.py" 4) || rc=1
  done
  [ $rc = 0 ] && echo "memcheck: no errors (cuda and pool)"
  return $rc
}

bench() {
  (cd /tmp && timeout "$limit" "$VENV/bin/python" "$repo/python/bench/alloc_bench.py" "${quick[@]}" \
    --timeout $((limit / 6)) --json "$logs/bench.json")
}

for s in "${steps[@]}"; do
  case "$s" in
    env) step env env_report ;;
    venv) step venv make_venv ;;
    *)
      if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import rmm_rs' 2>/dev/null; then
        step venv make_venv
      fi
      case "$s" in
        import) step import import_check ;;
        pytest) step pytest run_pytest ;;
        memcheck) step memcheck memcheck ;;
        bench) step bench bench ;;
      esac
      ;;
  esac
done
echo
echo "logs in $logs"
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
[ -f "$logs/pytest.log" ] && grep -E 'passed|failed' "$logs/pytest.log" | tail -n 1
echo "SUMMARY steps: $(( ${#summary[@]} - failed )) passed, $failed failed"
exit $((failed > 0))
