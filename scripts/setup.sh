#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test the
# project; safe to run again (it only installs what is missing).
#  - rustup components for the Rust GPU kernels: rust-src, llvm-tools,
#    llvm-bitcode-linker (DESIGN.md: rustc's NVPTX backend with build-std),
#    and rustfmt/clippy for the checks;
#  - libcuda (Debian's non-free libcuda1) where no libcuda is present, so
#    that cust links and the driver loads; without a GPU, cuInit then reports
#    "no device" and GPU tests skip (or fail with RMM_REQUIRE_GPU=1).
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

if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so'; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "setup: no libcuda found; installing Debian's non-free libcuda1"
  if ! grep -rqs 'non-free' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    $sudo tee /etc/apt/sources.list.d/rmm-nonfree.sources >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends libcuda1
fi
