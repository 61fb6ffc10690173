"""The wire itself, with a raw JSON-RPC client: malformed JSON, wrong params, unknown
methods, a request during shutdown, exit codes, end of input. Every request gets
exactly one answer and the process survives each of them."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crank import __version__ as crank_version

from .helpers import server_env


class Raw:
    """A JSON-RPC client over the server's stdio, or over any reader/writer pair."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        reader: asyncio.StreamReader | None = None,
        writer: asyncio.StreamWriter | None = None,
    ) -> None:
        self.process = process
        assert reader is not None or process.stdout is not None
        self.reader = reader if reader is not None else process.stdout
        self.writer = writer if writer is not None else process.stdin
        self.responses: dict[Any, list[dict[str, Any]]] = {}
        self.notifications: list[dict[str, Any]] = []

    def send_bytes(self, body: bytes) -> None:
        assert self.writer is not None
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

    async def read(self) -> dict[str, Any]:
        assert self.reader is not None
        length = 0
        while True:
            line = await self.reader.readline()
            if not line:
                raise EOFError
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
            elif line == b"\r\n":
                break
        return json.loads(await self.reader.readexactly(length))  # type: ignore[no-any-return]

    async def answer(self, msg_id: Any) -> dict[str, Any]:
        while True:
            message = await asyncio.wait_for(self.read(), 15)
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if "method" in message:
                self.notifications.append(message)
                continue
            if "method" not in message and message.get("id") == msg_id:
                self.responses.setdefault(msg_id, []).append(message)
                return message

    async def notified(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """Read (answering the server's requests) until a notification matches."""
        while True:
            found = next((n for n in self.notifications if predicate(n)), None)
            if found is not None:
                return found
            message = await asyncio.wait_for(self.read(), 15)
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "method" in message:
                self.notifications.append(message)


async def start(tmp_path: Path) -> Raw:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crank.lsp",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=server_env(tmp_path),
    )
    raw = Raw(process)
    await initialize(raw, tmp_path)
    return raw


async def initialize(raw: Raw, tmp_path: Path, crank: dict[str, Any] | None = None) -> None:
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    params: dict[str, Any] = {
        "capabilities": {"experimental": {"crank": {"events": True}}},
        "workspaceFolders": [{"uri": project.as_uri(), "name": "p"}],
    }
    if crank is not None:
        params["initializationOptions"] = {"crank": crank}
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    init = await raw.answer(1)
    assert init["result"]["serverInfo"]["name"] == "crank"
    assert init["result"]["serverInfo"]["version"] == crank_version  # the one kept version
    raw.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})


async def test_bad_input_is_answered_and_survived(tmp_path: Path) -> None:
    raw = await start(tmp_path)
    raw.send_bytes(b"{not json")
    assert (await raw.answer(None))["error"]["code"] == -32700

    raw.send({"jsonrpc": "2.0", "id": 2, "method": "crank/nothing", "params": {}})
    assert (await raw.answer(2))["error"]["code"] == -32601

    raw.send({"jsonrpc": "2.0", "id": 3, "method": "crank/prompt", "params": {"text": 5}})
    error = (await raw.answer(3))["error"]
    assert error["code"] == -32602 and "text" in error["message"]

    raw.send({"jsonrpc": "2.0", "id": 4, "method": "crank/prompt", "params": {}})
    error = (await raw.answer(4))["error"]
    assert error["code"] == -32602 and "text" in error["message"]

    raw.send(
        {"jsonrpc": "2.0", "id": 5, "method": "crank/setPermissionMode", "params": {"mode": "yolo"}}
    )
    error = (await raw.answer(5))["error"]
    assert error["code"] == -32602 and "mode" in error["message"]

    raw.send({"jsonrpc": "2.0", "id": 6, "method": "crank/prompt", "params": {"text": "hi"}})
    error = (await raw.answer(6))["error"]
    assert error["code"] == 1004 and "provider" in error["message"].lower()

    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "crank/state",
            "params": {"workspace": "file:///nope"},
        }
    )
    assert (await raw.answer(7))["error"]["code"] == 1003

    raw.send(
        {"jsonrpc": "2.0", "id": 8, "method": "crank/openSession", "params": {"sessionId": "zzz"}}
    )
    assert (await raw.answer(8))["error"]["code"] == 1002

    raw.send({"jsonrpc": "2.0", "id": 9, "method": "crank/state", "params": {}})
    state = (await raw.answer(9))["result"]
    assert state["running"] is False and "configError" in state

    raw.send({"jsonrpc": "2.0", "id": 10, "method": "shutdown"})
    assert (await raw.answer(10))["result"] is None
    raw.send({"jsonrpc": "2.0", "id": 11, "method": "crank/state", "params": {}})
    assert (await raw.answer(11))["error"]["code"] == -32600
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(raw.process.wait(), 15) == 0
    assert all(len(answers) == 1 for key, answers in raw.responses.items() if key is not None)


async def test_end_of_input_exits_zero(tmp_path: Path) -> None:
    raw = await start(tmp_path)
    assert raw.process.stdin is not None
    raw.process.stdin.close()
    assert await asyncio.wait_for(raw.process.wait(), 15) == 0


async def test_exit_without_shutdown_exits_one(tmp_path: Path) -> None:
    raw = await start(tmp_path)
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert await asyncio.wait_for(raw.process.wait(), 15) == 1
