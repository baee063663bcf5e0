#!/usr/bin/env bash
# The viewer (`rmm-report view`) tested as a person uses it: in headless
# Chromium driven by Playwright for Python (tools/tests/view/view_page.py).
# Installs what is missing: Debian's chromium (apt-get, as root or through
# sudo) and Playwright into target/view-venv (pip; Playwright's own browser
# download is not used: the test launches /usr/bin/chromium). Safe to run
# again.
#
#   bash scripts/view-test.sh            # the browser test (.ci/run runs it)
#   bash scripts/view-test.sh --bench    # also the load times of 10^6 and
#                                        # 10^7 events (minutes; not in CI)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "view-test: installing Debian's chromium"
  if [ "$(id -u)" = 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "view-test: chromium is missing, and this user is not root and has no sudo: install Debian's chromium" >&2
    exit 1
  fi
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium
fi
venv=target/view-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import playwright" 2>/dev/null; then
  echo "view-test: installing Playwright for Python into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "playwright==1.65.2"
fi
export CHROMIUM=${CHROMIUM:-$(command -v chromium)}
cargo build -p rmm-tools --bin rmm-report
"$venv/bin/python" tools/tests/view/view_page.py
if [ "${1:-}" = "--bench" ]; then
  cargo build --release -p rmm-tools --bin rmm-report
  RMM_REPORT=target/release/rmm-report "$venv/bin/python" tools/tests/view/view_bench.py 1000000 10000000
fi
