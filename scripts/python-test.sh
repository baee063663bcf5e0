#!/usr/bin/env bash
# The Python package's tests: builds and installs the wheel into
# target/py-venv (scripts/python-wheel.sh), then runs pytest on
# python/tests. Without a GPU the GPU tests skip and the summary says how
# many (RMM_REQUIRE_GPU=1 makes them fail instead). Extra arguments go to
# pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/python-wheel.sh
cd python/tests
exec ../../target/py-venv/bin/python -m pytest -ra -p no:cacheprovider "$@"
