#!/usr/bin/env bash
# The VS Code client's one test command (called by ./dev test). On a fresh machine it
# installs what it needs (npm ci from the lockfile; Chromium through apt-get when
# /usr/bin/chromium is missing), then type-checks, builds, runs the unit and webview
# tests, and packages build/crank.vsix. With CRANK_INTEGRATION=1 (./dev test sets it;
# it needs CRANK_PYTHON, a Python with crank installed) it also runs the integration
# test against crank serve and the end-to-end suite in a real VS Code: code-server,
# installed once per machine by ../../shared/tools/code-server-setup.sh into
# ~/.cache/crank-test/code-server-<version>/ (CRANK_E2E=0 skips only that suite).
set -euo pipefail
cd "$(dirname "$0")"

# Nothing the tests start may leave state in the user's home (Chromium's crash reports
# went to ~/.config/chromium): checked at the end when it was not there to begin with.
CHROMIUM_HOME_STATE="${XDG_CONFIG_HOME:-$HOME/.config}/chromium"
[ -e "$CHROMIUM_HOME_STATE" ] && HAD_CHROMIUM_STATE=1 || HAD_CHROMIUM_STATE=0
check_home_left_alone() {
  if [ "$HAD_CHROMIUM_STATE" = 0 ] && [ -e "$CHROMIUM_HOME_STATE" ]; then
    echo "!! the tests left $CHROMIUM_HOME_STATE in the user's home" >&2
    return 1
  fi
}

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

echo "-- package from a clean tree, as the README says (npm ci && npm run package)"
rm -rf dist build
npm run package --silent

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

echo "-- package (again, from what the tests ran against)"
npx vsce package --no-dependencies -o build/crank.vsix

if [ "${CRANK_INTEGRATION:-0}" = 1 ]; then
  echo "-- integration test against crank serve (CRANK_PYTHON=${CRANK_PYTHON:-python3})"
  node --test build/test/test/integration/
  if [ "${CRANK_E2E:-1}" = 1 ]; then
    CS_VERSION=4.100.3
    CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/crank-test"
    CS_DIR="$CACHE/code-server-$CS_VERSION"
    SETUP="$(cd .. && pwd)/../shared/tools/code-server-setup.sh"
    if [ ! -f "$CS_DIR/.done-$CS_VERSION" ]; then
      echo "-- installing code-server $CS_VERSION into $CS_DIR (once per machine)"
      [ -f "$SETUP" ] || { echo "missing $SETUP (the shared/ folder beside the repository)" >&2; exit 1; }
      mkdir -p "$CACHE"
      # One install at a time: another checkout on this machine may be building the same cache.
      flock "$CACHE/code-server-$CS_VERSION.lock" env CODE_SERVER_VERSION="$CS_VERSION" bash "$SETUP" "$CS_DIR"
    fi
    echo "-- end-to-end suite in code-server $CS_VERSION (screenshots in build/screenshots/e2e-*.png)"
    CRANK_CODE_SERVER="$CS_DIR" node --test --test-timeout=600000 build/test/test/e2e/vscode.test.js
    echo "-- end-to-end against the real llama-server in code-server $CS_VERSION"
    CRANK_CODE_SERVER="$CS_DIR" node --test --test-timeout=900000 build/test/test/e2e/local.test.js
  else
    echo "-- end-to-end suite skipped (CRANK_E2E=0)"
  fi
else
  echo "-- integration and end-to-end tests skipped (set CRANK_INTEGRATION=1 to run them)"
fi

check_home_left_alone
