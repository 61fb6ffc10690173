"""A raw byte-level client for ``crank serve``: it writes whatever bytes a test wants
and reads every frame the server writes, concurrently, checking on the way that stdout
holds nothing but well-framed JSON (any other byte fails the test).

Answers are collected by id (a batch answer, a JSON array, is unpacked); the server's
own requests (configuration, progress) are answered with ``null`` so it never waits.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from .helpers import server_env


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def request(msg_id: Any, method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return frame(json.dumps(message).encode())


def notification(method: str, params: Any = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return frame(json.dumps(message).encode())


class Wire:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[Any] = []
        self.answers: dict[Any, list[dict[str, Any]]] = {}
        self.null_answers: list[dict[str, Any]] = []
        self.stdout = bytearray()
        self._arrived = asyncio.Event()
        self.stderr = bytearray()
        self._reader = asyncio.ensure_future(self._read_all())
        self._reader.add_done_callback(lambda _: self._arrived.set())
        self._errors = asyncio.ensure_future(self._read_stderr())

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    async def drain(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.drain()

    async def _read_all(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            try:
                header = await stdout.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                assert not exc.partial, f"stdout ended inside a frame header: {exc.partial!r}"
                return
            self.stdout += header
            lines = header[:-4].split(b"\r\n")
            assert lines[0].startswith(b"Content-Length: "), header
            assert all(line.startswith(b"Content-Type: ") for line in lines[1:]), header
            length = int(lines[0][len(b"Content-Length: ") :])
            body = await stdout.readexactly(length)
            self.stdout += body
            self._take(json.loads(body))

    async def _read_stderr(self) -> None:
        """Read stderr as it comes: a full pipe would block the server."""
        stderr = self.process.stderr
        assert stderr is not None
        while chunk := await stderr.read(1 << 16):
            self.stderr += chunk

    def _take(self, message: Any) -> None:
        self.messages.append(message)
        for item in message if isinstance(message, list) else [message]:
            if "method" in item:
                if "id" in item:  # the server asks: answer so it never waits
                    self.send(
                        frame(
                            json.dumps(
                                {"jsonrpc": "2.0", "id": item["id"], "result": None}
                            ).encode()
                        )
                    )
                continue
            if item.get("id") is None:
                self.null_answers.append(item)
            else:
                self.answers.setdefault(item["id"], []).append(item)
        self._arrived.set()

    async def answer(self, msg_id: Any, within: float = 30) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while msg_id not in self.answers:
                if self._reader.done():
                    self._reader.result()
                    raise EOFError(f"the server closed stdout before answering {msg_id!r}")
                self._arrived.clear()
                await self._arrived.wait()
            return self.answers[msg_id][0]

        return await asyncio.wait_for(wait(), within)

    async def error(self, msg_id: Any) -> dict[str, Any]:
        answer = await self.answer(msg_id)
        assert "error" in answer, answer
        return answer["error"]  # type: ignore[no-any-return]

    async def close(self) -> int:
        """Close stdin, wait for the exit, and return its code (stdout fully read)."""
        assert self.process.stdin is not None
        if not self.process.stdin.is_closing():
            self.process.stdin.close()
        return await self.wait_exit()

    async def wait_exit(self) -> int:
        code = await asyncio.wait_for(self.process.wait(), 60)
        await asyncio.wait_for(asyncio.gather(self._reader, self._errors), 60)
        return code


async def spawn(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    stdin: Any = asyncio.subprocess.PIPE,
) -> Wire:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crank.lsp",
        *args,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env if env is not None else server_env(tmp_path),
        cwd=str(tmp_path),
    )
    return Wire(process)


def init_params(project: Path, crank: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "processId": None,
        "capabilities": {"experimental": {"crank": {"events": True}}},
        "workspaceFolders": [{"uri": project.as_uri(), "name": project.name}],
    }
    if crank is not None:
        params["initializationOptions"] = {"crank": crank}
    return params


async def started(tmp_path: Path, crank: dict[str, Any] | None = None, **kwargs: Any) -> Wire:
    """A server past ``initialize`` and ``initialized`` on one folder, ``tmp_path/p``."""
    project = tmp_path / "p"
    project.mkdir(exist_ok=True)
    wire = await spawn(tmp_path, **kwargs)
    wire.send(request("init", "initialize", init_params(project, crank)))
    assert "result" in await wire.answer("init")
    wire.send(notification("initialized", {}))
    return wire
