#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test the
# project; safe to run again (it only installs what is missing).
#  - rustup components for the Rust GPU kernels: rust-src, llvm-tools,
#    llvm-bitcode-linker (DESIGN.md: rustc's NVPTX backend with build-std),
#    and rustfmt/clippy for the checks.
#  - NVIDIA's ptxas from PyPI (scripts/fetch-ptxas.sh), with which the build
#    embeds sm_80 and sm_90 machine code beside the PTX; offline it says so
#    and the build embeds PTX only (which works, with a slower first launch).
# Nothing of CUDA is needed to build: rmm loads the driver library
# (libcuda.so.1) at run time. Without it (or without a GPU) the GPU tests
# skip, saying why (or fail with RMM_REQUIRE_GPU=1).
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install Rust with rustup (https://rustup.rs) first" >&2
  exit 1
fi

need=()
installed=$(rustup component list --installed 2>/dev/null || true)
for c in rust-src llvm-tools llvm-bitcode-linker rustfmt clippy; do
  if ! grep -q "^$c" <<<"$installed"; then need+=("$c"); fi
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: rustup component add ${need[*]}"
  rustup component add "${need[@]}"
fi
if ! bash "$(dirname "$0")/fetch-ptxas.sh" >/dev/null; then
  echo "setup: could not fetch ptxas (offline?); the kernels build as PTX only" >&2
fi
