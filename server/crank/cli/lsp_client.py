"""A small LSP client over a child process's stdio: what an editor does, in ~100 lines.

Used by ``crank demo`` to drive a real ``crank serve`` the way the editors do. It frames
JSON-RPC with ``Content-Length`` headers, matches responses to requests, hands
notifications to one callback, and answers the server's own requests through another.
Params stay plain dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

from crank.workspace.errors import RPC_INTERNAL_ERROR

Handler = Callable[[str, Any], Awaitable[Any]]
Listener = Callable[[str, Any], None]


class ServerError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: dict[str, Any]) -> None:
        super().__init__(f"{method}: {error.get('message')} (code {error.get('code')})")
        self.code = error.get("code")


class LspClient:
    def __init__(
        self, process: asyncio.subprocess.Process, on_notify: Listener, on_request: Handler
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._writer = process.stdin
        self._reader = process.stdout
        self._on_notify = on_notify
        self._on_request = on_request
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._answering: set[asyncio.Task[None]] = set()
        self._reading = asyncio.create_task(self._read_forever())

    async def request(self, method: str, params: Any = None) -> Any:
        """The result of ``method``; ConnectionError once the server's output is closed
        (a request it can no longer answer is never waited on)."""
        if self._reading.done():
            raise ConnectionError("the server closed its output")
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[self._next_id] = future
        await self._send(
            {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        )
        return await future

    async def wait_for(self, event: asyncio.Event) -> None:
        """Wait until ``event`` is set; ConnectionError if the server's output closes
        first (it exited or crashed), so a caller waiting on a notification the server
        will never send does not hang."""
        waiting = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({waiting, self._reading}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
        if not event.is_set():
            raise ConnectionError("the server closed its output before it was done")

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        self._writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self._writer.drain()

    async def _read_message(self) -> dict[str, Any] | None:
        length = None
        while True:
            line = await self._reader.readline()
            if not line:
                return None
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if length is None:
            raise ValueError("a message without Content-Length")
        message: dict[str, Any] = json.loads(await self._reader.readexactly(length))
        return message

    async def _read_forever(self) -> None:
        try:
            while (message := await self._read_message()) is not None:
                if "method" in message and "id" in message:
                    task = asyncio.create_task(self._answer(message))
                    self._answering.add(task)
                    task.add_done_callback(self._answering.discard)
                elif "method" in message:
                    self._on_notify(message["method"], message.get("params"))
                elif (future := self._waiting.pop(message.get("id", -1), None)) is not None:
                    if "error" in message:
                        future.set_exception(ServerError(str(message.get("id")), message["error"]))
                    else:
                        future.set_result(message.get("result"))
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("the server closed its output"))

    async def _answer(self, message: dict[str, Any]) -> None:
        try:
            result = await self._on_request(message["method"], message.get("params"))
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        except Exception as exc:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": RPC_INTERNAL_ERROR, "message": str(exc)},
            }
        with contextlib.suppress(ConnectionError):
            await self._send(reply)

    async def close(self) -> None:
        """shutdown + exit as LSP says, then wait for the process."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.request("shutdown"), 5)
            await self.notify("exit")
        try:
            await asyncio.wait_for(self.process.wait(), 5)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self._reading.cancel()
