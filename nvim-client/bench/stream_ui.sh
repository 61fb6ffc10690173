#!/usr/bin/env bash
# The chat's cost to the editor in a real terminal (Neovim in tmux, redrawing):
# CPU time of the Neovim process per streamed delta (300 deltas, 10 and 30 ms apart:
# a fast local model and a hosted one), per chunk of a running command's output (300,
# 10 ms apart) and per key typed into the prompt (20 keys, 100 ms apart), in a chat holding a short transcript and a long one (0 and 400
# exchanges: 35 and about 6,000 rows), medians of 3 fresh Neovims.
#
#   nvim-client/bench/stream_ui.sh [--before OTHER/nvim-client]
#
# --before runs another checkout's client the same way, alternating with this one.
# Needs tmux. The load average is printed first and last: the machine is shared.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
NVIM="${NVIM:-$HERE/.nvim-venv/bin/nvim}"
RUNS="${RUNS:-3}"
clients=("$HERE")
if [ "${1:-}" = "--before" ]; then clients+=("$(cd "$2" && pwd)"); fi
command -v tmux >/dev/null || { echo "tmux is needed" >&2; exit 1; }
WORK="$(mktemp -d)"
trap 'tmux kill-session -t crank-bench 2>/dev/null || true; rm -rf "$WORK"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (2 shared cores); $("$NVIM" --version | head -1)"

once() {  # client mode exchanges interval -> "rows cpu_ms"
  local out="$WORK/out"
  rm -f "$out"
  tmux new-session -d -s crank-bench -x 120 -y 40 \
    "CRANK_BENCH_CLIENT='$1' CRANK_BENCH_MODE=$2 CRANK_BENCH_MESSAGES=$3 CRANK_BENCH_INTERVAL=$4 CRANK_BENCH_OUT='$out' XDG_STATE_HOME='$WORK' '$NVIM' -u NONE -i NONE -c 'luafile $HERE/bench/stream_ui.lua'"
  if [ "$2" = type ]; then
    sleep 3
    tmux send-keys -t crank-bench Escape ':lua bench_typing()' Enter 'A'
    for _ in $(seq 20); do tmux send-keys -t crank-bench -l x; sleep 0.1; done
    tmux send-keys -t crank-bench Escape ':lua bench_typed(20)' Enter
  fi
  for _ in $(seq 120); do [ -s "$out" ] && break; sleep 0.5; done
  tmux kill-session -t crank-bench 2>/dev/null || true
  cut -d' ' -f1-2 "$out"
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for what in "stream 10" "stream 30" "tool 10" "type 0"; do
  set -- $what
  for exchanges in 0 400; do
    declare -A took=()
    rows=0
    for _ in $(seq "$RUNS"); do
      for client in "${clients[@]}"; do
        read -r rows ms < <(once "$client" "$1" "$exchanges" "$2")
        took[$client]+="$ms "
      done
    done
    for client in "${clients[@]}"; do
      label="this checkout"
      [ "$client" != "$HERE" ] && label="before"
      m=$(echo "${took[$client]}" | tr ' ' '\n' | grep . | median)
      if [ "$1" = stream ]; then
        printf '%-13s %5d rows: a delta every %2d ms: %7.2f ms CPU per delta\n' "$label" "$rows" "$2" "$m"
      elif [ "$1" = tool ]; then
        printf '%-13s %5d rows: command output every %2d ms: %7.2f ms CPU per chunk\n' "$label" "$rows" "$2" "$m"
      else
        printf '%-13s %5d rows: a key typed in the prompt:  %7.2f ms CPU per key\n' "$label" "$rows" "$m"
      fi
    done
    unset took
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
