#!/usr/bin/env bash
# The project's main job (README "Quick start"): sets up what is missing,
# then runs the allocator demo in release mode. Without a GPU the demo says
# so and runs what it can over the simulated resource.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo run --release --quiet -p rmm-tools --bin rmm-demo -- "$@"
