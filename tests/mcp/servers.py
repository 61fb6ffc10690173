"""Where the tests find MCP servers: the npm ones ``./dev`` installs, and ours.

``./dev`` installs pinned versions of ``@modelcontextprotocol/server-everything`` and
``@modelcontextprotocol/server-filesystem`` under ``~/.cache/crank-test/mcp-servers``
(``CRANK_MCP_SERVERS`` names another folder); a test that needs one is skipped, saying
how to install it, when it is not there.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ODD = HERE / "odd_server.py"
VERSIONS = {
    "@modelcontextprotocol/server-everything": "2026.8.31",
    "@modelcontextprotocol/server-filesystem": "2026.8.31",
}


def servers_dir() -> Path:
    default = Path.home() / ".cache" / "crank-test" / "mcp-servers"
    return Path(os.environ.get("CRANK_MCP_SERVERS", default))


def npm_bin(name: str) -> str:
    path = servers_dir() / "node_modules" / ".bin" / name
    if not path.exists():
        pytest.skip(f"{name} is not installed: ./dev test installs it (npm) into {servers_dir()}")
    return str(path)


def everything(*args: str) -> dict[str, Any]:
    return {"command": npm_bin("mcp-server-everything"), "args": list(args or ["stdio"])}


def odd(mode: str, **env: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(ODD), mode]}
    if env:
        entry["env"] = env
    return entry


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True
