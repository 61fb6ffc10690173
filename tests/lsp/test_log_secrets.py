"""The server's own log never holds a key, at any level, whatever it is sent.

A real server on stdio at ``--log-level DEBUG`` with ``--log-file``: the key arrives in
the start-up options, in a pushed change, in a malformed change, and inside messages
the server cannot handle (which pygls logs whole). Its stderr and its log file are then
searched for the key.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import server_env
from .test_wire import Raw, initialize

KEY = "sk-ant-api03-never-in-a-log-0123456789"


async def test_no_key_in_the_servers_log_at_debug_level(tmp_path: Path) -> None:
    log_file = tmp_path / "server.log"
    stderr = (tmp_path / "stderr.txt").open("wb")
    with ModelServer({"replies": [{"text": "hi"}]}) as model:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "crank.lsp",
            "--log-level",
            "DEBUG",
            "--log-file",
            str(log_file),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=server_env(tmp_path),
        )
        raw = Raw(process)
        provider = {"api": "anthropic", "baseUrl": model.url, "apiKey": KEY, "model": "m"}
        await initialize(raw, tmp_path, {"provider": provider, "sessionDir": str(tmp_path / "s")})
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "crank/prompt", "params": {"text": "x"}})
        await raw.answer(2)
        await raw.notified(lambda n: n["params"].get("event", {}).get("type") == "agent_settled")
        pushed = {"crank": {"trusted": "yes", "provider": {"apiKey": KEY}}}
        raw.send(
            {
                "jsonrpc": "2.0",
                "method": "workspace/didChangeConfiguration",
                "params": {"settings": pushed},
            }
        )
        raw.send({"jsonrpc": "1.0", "id": 3, "method": "initialize", "params": {"key": KEY}})
        raw.send({"jsonrpc": "1.0", "method": "crank/x", "params": {"apiKey": KEY}})
        raw.send({"jsonrpc": "2.0", "method": "crank/unknown", "params": {"apiKey": KEY}})
        raw.send(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "workspace/didChangeConfiguration",
                "params": {"settings": {"crank": {"provider": {"apiKey": KEY}}}, "x": 1},
            }
        )
        raw.send({"jsonrpc": "2.0", "id": 5, "method": "crank/state", "params": {}})
        state = await raw.answer(5)
        assert KEY not in json.dumps(state)
        raw.send({"jsonrpc": "2.0", "id": 6, "method": "shutdown"})
        await raw.answer(6)
        raw.send({"jsonrpc": "2.0", "method": "exit"})
        assert process.stdin is not None
        process.stdin.close()
        await asyncio.wait_for(process.wait(), 15)
    stderr.close()
    assert model.requests and KEY in model.requests[0]["headers"]["x-api-key"]
    logged = log_file.read_text() + (tmp_path / "stderr.txt").read_text()
    assert "DEBUG" in logged  # the log really was at debug level
    assert KEY not in logged
    assert KEY not in "".join(json.dumps(n) for n in raw.notifications)
