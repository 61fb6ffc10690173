"""``crank serve`` ended by SIGTERM or SIGHUP (an editor that stops its language server
without ``shutdown``: a timeout, its own crash, a closed terminal) ends like the end of
input: every MCP server it started, and each one's whole process group, is gone, and
the process exits 0. Checked by pid and group from ``/proc``, with the real
``@modelcontextprotocol/server-everything`` and the odd server's ``parent`` mode (a
child in its group that ignores the end of its input)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.acp.helpers import ROOT

from .servers import everything, odd
from .test_acp_end import end_left, mcp_children, servers_of
from .test_frontends import GUARD_S


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_an_end_signal_ends_every_mcp_server_and_exits_0(tmp_path: Path, sig: int) -> None:
    home = tmp_path / "home"
    (home / ".config" / "crank").mkdir(parents=True)
    servers = {"everything": everything(), "odd": odd("parent")}
    (home / ".config" / "crank" / "config.json").write_text(json.dumps({"mcpServers": servers}))
    folder = tmp_path / "project"
    folder.mkdir()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CRANK_"))
    }
    env.update(
        PYTHONPATH=str(ROOT / "server"), HOME=str(home), XDG_CONFIG_HOME=str(home / ".config")
    )
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    server = subprocess.Popen(
        [sys.executable, "-m", "crank", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tmp_path,
    )
    assert server.stdin is not None
    pids: list[int] = []
    try:
        init = {"processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {}}
        init["workspaceFolders"] = [{"uri": folder.as_uri(), "name": "project"}]
        init["initializationOptions"] = {
            "crank": {"trusted": True, "sessionDir": str(tmp_path / "s")}
        }
        server.stdin.write(
            frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        )
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.flush()
        deadline = time.monotonic() + GUARD_S
        while len(mcp_children(server.pid)) < 2:
            assert server.poll() is None, (
                server.stderr.read().decode()[-2000:] if server.stderr else ""
            )
            assert time.monotonic() < deadline, "the two MCP servers did not start"
            time.sleep(0.1)
        pids = mcp_children(server.pid)
        servers_of(server.pid)
        server.send_signal(sig)
        code = server.wait(timeout=GUARD_S)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        left = end_left(pids)  # a failing run leaves nothing running either
    assert code == 0, server.stderr.read().decode()[-2000:] if server.stderr else code
    assert left == {}, f"processes of a server's group outlived crank serve: {left}"
