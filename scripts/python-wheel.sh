#!/usr/bin/env bash
# Builds the rmm_rs Python wheel (abi3, CPython >= 3.9) with maturin, in a
# virtual environment this script makes itself (target/py-venv, with
# maturin and pytest from the package index), and installs it there.
# Safe to run again: the venv and its tools are reused, the wheel rebuilt
# (cargo rebuilds only what changed) and reinstalled.
#
#   bash scripts/python-wheel.sh          # build + install into target/py-venv
#   bash scripts/python-wheel.sh --gpu    # also: put the wheel and pytest's
#                                         # wheels into .gpu-wheel/ for the GPU
#                                         # machine (no network there; see
#                                         # scripts/gpu-python.sh)
#   bash scripts/python-wheel.sh --compat # also: build the opt-in compatibility
#                                         # package python/compat (rmm-rs-compat:
#                                         # `import rmm` resolves to rmm_rs) into
#                                         # target/wheels/ (and .gpu-wheel/ with
#                                         # --gpu); not installed into the venv
#
# PYTHON picks the interpreter for the venv (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=0
compat=0
for a in "$@"; do
  case "$a" in
    --gpu) gpu=1 ;;
    --compat) compat=1 ;;
    *) echo "python-wheel: unknown option $a" >&2; exit 2 ;;
  esac
done
venv=target/py-venv
py=${PYTHON:-python3}
if ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  echo "python-wheel: making $venv with $($py --version 2>&1)"
  rm -rf "$venv"
  if ! "$py" -m venv "$venv"; then
    # A system Python without ensurepip (Debian's python3 without
    # python3-venv): make the venv with virtualenv instead.
    echo "python-wheel: '$py -m venv' failed; trying virtualenv"
    rm -rf "$venv"
    "$py" -m pip install --quiet --user virtualenv && "$py" -m virtualenv --quiet "$venv"
  fi
fi
# numpy: the tests of the array paths (copy_to_host's default target, the
# CUDA array interface's host side) run on the CPU too.
if ! "$venv/bin/python" -c 'import maturin, pytest, numpy' >/dev/null 2>&1; then
  echo "python-wheel: pip install maturin pytest numpy"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'maturin>=1.9.4,<2' pytest numpy
fi
rm -f target/wheels/rmm_rs-*.whl
(cd python && "../$venv/bin/maturin" build --release --strip -o ../target/wheels -j "${CARGO_BUILD_JOBS:-2}")
wheel=$(ls target/wheels/rmm_rs-*.whl)
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
echo "python-wheel: installed $wheel into $venv"
if [ "$compat" = 1 ]; then
  # Pure Python (setuptools, fetched by pip's build isolation); the build
  # leaves nothing in python/compat but the ignored build/ and egg-info.
  rm -f target/wheels/rmm_rs_compat-*.whl
  "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -w target/wheels python/compat
  echo "python-wheel: built $(ls target/wheels/rmm_rs_compat-*.whl)"
fi
if [ "$gpu" = 1 ]; then
  rm -rf .gpu-wheel
  mkdir -p .gpu-wheel/deps
  cp "$wheel" .gpu-wheel/
  [ "$compat" = 1 ] && cp target/wheels/rmm_rs_compat-*.whl .gpu-wheel/
  # pytest for the GPU machine's CPython 3.12 (pure-Python wheels).
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
    --python-version 3.12 --implementation cp --platform any -d .gpu-wheel/deps pytest
  echo "python-wheel: .gpu-wheel/ holds $(cd .gpu-wheel && ls *.whl) and $(ls .gpu-wheel/deps | tr '\n' ' ')"
fi
