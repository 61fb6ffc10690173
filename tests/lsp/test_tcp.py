"""``crank serve --tcp HOST:PORT`` speaks the same protocol as stdio."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

from tests.support.model_server import ModelServer

from .helpers import provider_for, server_env
from .test_wire import Raw, initialize


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_the_protocol_over_tcp(tmp_path: Path) -> None:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crank.cli",
        "serve",
        "--tcp",
        f"127.0.0.1:{port}",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=server_env(tmp_path),
    )
    try:
        assert process.stderr is not None
        line = await asyncio.wait_for(process.stderr.readline(), 15)
        assert f"listening on 127.0.0.1:{port}" in line.decode()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        raw = Raw(process, reader, writer)
        async with ModelServer({"replies": [{"text": "over tcp", "chunks": 4}]}) as model:
            options = {"provider": provider_for(model.url), "sessionDir": str(tmp_path / "s")}
            await initialize(raw, tmp_path, options)
            raw.send(
                {"jsonrpc": "2.0", "id": 2, "method": "crank/prompt", "params": {"text": "hi"}}
            )
            run_id = (await raw.answer(2))["result"]["runId"]
            await raw.notified(
                lambda n: (
                    n["method"] == "crank/event" and n["params"]["event"]["type"] == "agent_settled"
                )
            )
            events = [
                n["params"]["event"]
                for n in raw.notifications
                if n["method"] == "crank/event" and n["params"].get("runId") == run_id
            ]
            assert events[0]["type"] == "agent_start" and events[-1]["type"] == "agent_settled"
            text = "".join(e["delta"]["text"] for e in events if e["type"] == "message_update")
            assert text == "over tcp"
            raw.send({"jsonrpc": "2.0", "id": 4, "method": "crank/nothing", "params": {}})
            assert (await raw.answer(4))["error"]["code"] == -32601
            raw.send({"jsonrpc": "2.0", "id": 5, "method": "shutdown"})
            assert (await raw.answer(5))["result"] is None
            raw.send({"jsonrpc": "2.0", "method": "exit"})
            assert await asyncio.wait_for(process.wait(), 15) == 0
        writer.close()
        assert stdout_is_empty(await process.stdout.read() if process.stdout else b"")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def stdout_is_empty(data: bytes) -> bool:
    return data == b""
