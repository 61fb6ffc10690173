"""Does configuring MCP servers cost an editor its first answer?

    .venv/bin/python bench/mcp_startup.py

Spawns ``crank serve`` with one workspace folder and measures wall ms from the spawn to
the ``initialize`` answer, to the answer of a ``crank/state`` sent right after
``initialized`` (the workspace's first answer), and to the ``shutdown`` answer sent
after that (every server stopped), with no MCP server configured and
with three (``@modelcontextprotocol/server-everything`` over stdio, three times, in the
user config file), alternating, 9 runs each; prints the medians and the load average
before and after. The servers start in the background, so both figures should match.
Needs the npm server ``./dev test`` installs (``~/.cache/crank-test/mcp-servers``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from stdio_server import StdioServer

RUNS = 9
ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = (
    Path(os.environ.get("CRANK_MCP_SERVERS", Path.home() / ".cache/crank-test/mcp-servers"))
    / "node_modules/.bin/mcp-server-everything"
)


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def timed(env: dict[str, str], folder: Path) -> tuple[float, float, float]:
    server = StdioServer([sys.executable, "-m", "crank.cli", "serve"], env, subprocess.DEVNULL)
    server.initialize([{"uri": folder.as_uri(), "name": folder.name}])
    first = server.elapsed_ms()
    server.notify("initialized", {})
    server.request(2, "crank/state", {})
    server.answer(2)
    state = server.elapsed_ms()
    server.request(3, "shutdown")
    server.answer(3)
    ready = server.elapsed_ms()
    server.notify("exit", {})
    server.close(timeout=60)
    return first, state, ready


def main() -> None:
    if not EVERYTHING.exists():
        raise SystemExit(f"{EVERYTHING} is missing: run ./dev test once (it installs it)")
    with tempfile.TemporaryDirectory() as tmp:
        base = dict(os.environ, PYTHONPATH=str(ROOT / "server"), HOME=tmp)
        folder = Path(tmp, "project")
        folder.mkdir()
        envs: dict[str, dict[str, str]] = {}
        for label, count in (("no MCP server", 0), ("three MCP servers", 3)):
            config = Path(tmp, label.replace(" ", "-"))
            (config / "crank").mkdir(parents=True)
            servers = {f"e{i}": {"command": str(EVERYTHING)} for i in range(count)}
            (config / "crank" / "config.json").write_text(json.dumps({"mcpServers": servers}))
            envs[label] = dict(base, XDG_CONFIG_HOME=str(config), XDG_DATA_HOME=f"{tmp}/d")
        for env in envs.values():
            timed(env, folder)  # warm the bytecode and the disk cache
        before = load()
        results: dict[str, list[tuple[float, float, float]]] = {label: [] for label in envs}
        for _ in range(RUNS):
            for label, env in envs.items():
                results[label].append(timed(env, folder))
        after = load()
    for label, runs in results.items():
        first, state, ready = (statistics.median(r[i] for r in runs) for i in range(3))
        print(
            f"{label}: medians of {RUNS} runs: initialize answer {first:.0f} ms, "
            f"first crank/state answer {state:.0f} ms, shutdown answer {ready:.0f} ms"
        )
    print(f"load average before {before}, after {after}")


if __name__ == "__main__":
    main()
