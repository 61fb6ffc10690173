#!/usr/bin/env bash
# The VS Code client's one test command (called by ./dev test). On a fresh machine it
# installs what it needs (npm ci from the lockfile; Chromium through apt-get when
# /usr/bin/chromium is missing), then type-checks, builds, runs the unit and webview
# tests, and packages build/crank.vsix. The server integration test runs only with
# CRANK_INTEGRATION=1 (it needs CRANK_PYTHON, a Python with crank installed).
set -euo pipefail
cd "$(dirname "$0")"

echo "-- npm ci"
npm ci --no-audit --no-fund --loglevel=error

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ ! -x "$CHROMIUM" ]; then
  echo "-- installing Chromium (apt-get)"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq chromium >/dev/null
fi
export CHROMIUM_PATH="$CHROMIUM"

echo "-- type-check"
npx tsc -p . --noEmit

echo "-- build"
rm -rf dist build/test
node esbuild.mjs --production
npx tsc -p tsconfig.test.json

echo "-- unit tests"
node --test build/test/test/unit/

echo "-- webview test (headless Chromium; screenshots in build/screenshots/)"
node --test build/test/test/webview/

if [ "${CRANK_INTEGRATION:-0}" = 1 ]; then
  echo "-- integration test against crank serve (CRANK_PYTHON=${CRANK_PYTHON:-python3})"
  node --test build/test/test/integration/
else
  echo "-- integration test skipped (set CRANK_INTEGRATION=1 to run it)"
fi

echo "-- package"
npx vsce package --no-dependencies --allow-missing-repository -o build/crank.vsix
