#!/usr/bin/env bash
# The project's test command (README "Quick start"): sets up what is missing,
# then runs every test of the workspace, doc tests included. GPU tests run
# when a GPU is present and skip otherwise (RMM_REQUIRE_GPU=1 turns skips
# into failures).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --workspace "$@"
