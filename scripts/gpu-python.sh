#!/usr/bin/env bash
# The Python package on the GPU machine, in one command.
#
# Here (the build machine, with Rust and network):
#   bash scripts/gpu-python.sh --build
#     builds the rmm_rs wheel and the compatibility package's wheel
#     (scripts/python-wheel.sh --gpu --compat) into .gpu-wheel/ (ignored by
#     git), with pytest's wheels in .gpu-wheel/deps/ for a machine without
#     network, Dask-CUDA and the parts of its stack the GPU image lacks in
#     .gpu-wheel/dask/ (versions below), and, where RMM_GIT_DIR names a clone
#     of rapidsai/rmm, RMM's Python tests in .rmm-suite/tests (never
#     committed; scripts/rmm-suite.sh fetch). Carry .gpu-wheel/ (and
#     .rmm-suite/) along with the checkout.
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
#                  plain cudaMalloc (bounds visible) and over the pool, and
#                  the PyTorch workload over the pool
#     6. bench     python/bench/alloc_bench.py: PyTorch's caching allocator
#                  against rmm_rs pool / arena / cuda_async, CuPy's pool
#                  against rmm_rs pool, with ratios (--quick: fewer steps)
#     7. compat    installs the compatibility package (rmm-rs-compat: `import
#                  rmm` is rmm_rs) into the venv and runs test_compat.py
#                  against the installed package
#     8. dask      installs .gpu-wheel/dask/ (and compat) into the venv and
#                  runs test_dask.py: LocalCUDACluster(rmm_pool_size=...,
#                  rmm_managed_memory=...) over rmm_rs; junit XML kept
#     9. rmmsuite  RMM's own Python tests (.rmm-suite/tests) against rmm_rs
#                  through the compatibility package (scripts/rmm-suite.sh
#                  run): rmm-suite.xml, rmm-suite-summary.md (failures by
#                  reason)
#   STEP names some of env, venv, import, pytest, memcheck, bench, compat,
#   dask, rmmsuite (default: the first six, in that order; compat, dask and
#   rmmsuite only when named); a step that needs the venv makes it when it is
#   missing. Each step's output goes to $OUT/python/<step>.log (OUT
#   defaults to /tmp/out); a failing step is logged and the next one runs
#   anyway; pytest, memcheck and bench each stop after STEP_TIMEOUT
#   seconds (default 540). The end is one SUMMARY line per step, also in
#   $OUT/python/summary.txt. VENV (default .gpu-venv, ignored by git, kept
#   between calls) and PYTHON (default python3) can be set.
set -uo pipefail
cd "$(dirname "$0")/.."
# Dask-CUDA's newest release and the dask/distributed it pins
# (rapids-dask-dependency 26.10: dask, distributed >=2026.7.1,<2026.7.2),
# with the requirements the GPU image lacks; cuda-core is installed there
# only when the image's is older than dask-cuda's minimum (0.5.1).
DASK_WHEELS="dask-cuda==26.10.0 dask==2026.7.1 distributed==2026.7.1 partd==1.4.2 locket==1.0.0 zict==3.0.0 tblib==3.2.2 tornado==6.6.1 cuda-core==1.2.2"
if [ "${1:-}" = "--build" ]; then
  bash scripts/python-wheel.sh --gpu --compat || exit
  rm -rf .gpu-wheel/dask
  # shellcheck disable=SC2086
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform any --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    -d .gpu-wheel/dask $DASK_WHEELS || exit
  echo "gpu-python: .gpu-wheel/dask holds $(ls .gpu-wheel/dask | tr '\n' ' ')"
  if [ -n "${RMM_GIT_DIR:-}" ]; then
    bash scripts/rmm-suite.sh fetch || exit
  else
    echo "gpu-python: RMM_GIT_DIR unset: RMM's tests not fetched (step rmmsuite needs .rmm-suite/tests)"
  fi
  exit 0
fi
quick=()
steps=()
for a in "$@"; do
  case "$a" in
    --quick) quick=(--quick) ;;
    env | venv | import | pytest | memcheck | bench | compat | dask | rmmsuite) steps+=("$a") ;;
    *) echo "gpu-python: unknown option or step $a (steps: env venv import pytest memcheck bench compat dask rmmsuite)" >&2; exit 2 ;;
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
  # The compatibility package and Dask-CUDA, when built (--build): the
  # whole suite's test_compat.py and test_dask.py need them.
  if ls .gpu-wheel/rmm_rs_compat-*.whl >/dev/null 2>&1; then install_compat || return 1; fi
  if ls .gpu-wheel/dask/*.whl >/dev/null 2>&1; then install_dask || return 1; fi
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
  # PyTorch's MLP and tensors of many sizes through rmm_torch_allocator over
  # the pool (2 steps: PyTorch starts slowly under the sanitizer).
  echo "--- PyTorch workload over rmm_rs pool, compute-sanitizer memcheck"
  (cd /tmp && timeout $((limit / 2)) compute-sanitizer --tool memcheck \
    --error-exitcode 1 --report-api-errors no --print-limit 50 \
    "$VENV/bin/python" "$repo/python/tests/workloads/torch_workload.py" pool 2) || rc=1
  [ $rc = 0 ] && echo "memcheck: no errors (CuPy over cuda and pool, PyTorch over pool)"
  return $rc
}

# pytest-timeout's per-test limit, where the venv has it (the GPU image does).
per_test_timeout() {
  "$VENV/bin/python" -c 'import pytest_timeout' 2>/dev/null && echo "--timeout=$1"
}

install_compat() {
  local wheel
  wheel=$(ls .gpu-wheel/rmm_rs_compat-*.whl 2>/dev/null | head -n 1)
  if [ -z "$wheel" ]; then
    echo "no .gpu-wheel/rmm_rs_compat-*.whl: run 'bash scripts/gpu-python.sh --build' here first"
    return 1
  fi
  "$VENV/bin/python" -m pip install --quiet --no-index --no-deps --force-reinstall "$wheel" || return 1
  (cd /tmp && "$VENV/bin/python" -c 'import rmm, rmm_rs; assert rmm is rmm_rs; print("import rmm ->", rmm.__name__)')
}

compat() {
  install_compat || return 1
  (cd "$repo/python/tests" && timeout "$limit" env RMM_REQUIRE_GPU=1 RMM_COMPAT_INSTALLED=1 RMM_REQUIRE_MODULES=cupy \
    "$VENV/bin/python" -m pytest -ra -p no:cacheprovider $(per_test_timeout 300) test_compat.py \
    --junitxml="$logs/junit-compat.xml" -o junit_family=xunit2)
}

install_dask() {
  local need=(.gpu-wheel/dask/*.whl)
  [ -e "${need[0]}" ] || { echo "no .gpu-wheel/dask/*.whl: run 'bash scripts/gpu-python.sh --build' here first"; return 1; }
  # The image's cuda-core when it is new enough for dask-cuda.
  if "$VENV/bin/python" -c 'import sys
from importlib.metadata import version
v = tuple(int(p) for p in version("cuda-core").split(".")[:3] if p.isdigit())
sys.exit(0 if v >= (0, 5, 1) else 1)' 2>/dev/null; then
    echo "cuda-core $("$VENV/bin/python" -c 'from importlib.metadata import version; print(version("cuda-core"))') from the image"
    need=($(ls .gpu-wheel/dask/*.whl | grep -v '/cuda_core-'))
  fi
  "$VENV/bin/python" -m pip install --quiet --no-index --no-deps --force-reinstall "${need[@]}" || return 1
  "$VENV/bin/python" -m pip list 2>/dev/null | grep -iE '^(dask|distributed|cuda-core|tornado|zict|cupy)' || true
}

dask_step() {
  install_compat || return 1
  install_dask || return 1
  (cd "$repo/python/tests" && timeout "$limit" env RMM_REQUIRE_GPU=1 RMM_COMPAT_INSTALLED=1 \
    "$VENV/bin/python" -m pytest -ra -p no:cacheprovider $(per_test_timeout 300) test_dask.py \
    --junitxml="$logs/junit-dask.xml" -o junit_family=xunit2)
}

rmmsuite() {
  install_compat || return 1
  SUITE_TIMEOUT=${SUITE_TIMEOUT:-$limit} bash "$repo/scripts/rmm-suite.sh" run --tests "$repo/.rmm-suite/tests" --out "$logs" \
    --python "$VENV/bin/python"
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
        compat) step compat compat ;;
        dask) step dask dask_step ;;
        rmmsuite) step rmmsuite rmmsuite ;;
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
