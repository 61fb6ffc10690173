"""A small LSP client over a child process's stdio: what an editor does, in ~100 lines.

Used by ``crank demo`` to drive a real ``crank serve`` the way the editors do. The
framing is the server's own (``crank.lsp.framing``: ``frame`` to write, the
``FrameParser`` to read, ``bodies.decode`` for a body), so stray output or a malformed
frame is skipped and logged, never the end of the connection. It matches responses to
requests, hands notifications to one callback, and answers the server's own requests
through another. Params stay plain dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from crank.lsp.bodies import Undecodable, decode
from crank.lsp.framing import Event, Frame, FrameParser, Refused, frame
from crank.workspace.errors import RPC_INTERNAL_ERROR

log = logging.getLogger(__name__)
READ_SIZE = 64 * 1024

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
        waiting = asyncio.create_task(event.wait())
        try:
            await asyncio.wait({waiting, self._reading}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()
        if not event.is_set():
            raise ConnectionError("the server closed its output before it was done")

    async def notify(self, method: str, params: Any = None) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _send(self, message: dict[str, Any]) -> None:
        self._writer.write(frame(message))
        await self._writer.drain()

    async def _read_forever(self) -> None:
        parser = FrameParser()
        try:
            while chunk := await self._reader.read(READ_SIZE):
                for event in parser.feed(chunk):
                    self._take(event)
            for event in parser.end():
                self._take(event)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ConnectionError("the server closed its output"))

    def _take(self, event: Event) -> None:
        """One delimited frame: a request to answer, a notification, or an answer."""
        if not isinstance(event, Frame):
            why = event.reason if isinstance(event, Refused) else f"{event.count} stray bytes"
            log.warning("the server sent something that is not a frame: %s", why)
            return
        try:
            message = decode(event.body)
        except Undecodable as exc:
            log.warning("the server sent a frame that is not a message: %s", exc.reason)
            return
        if not isinstance(message, dict):
            log.warning("the server sent a frame that is not an object")
            return
        if "method" in message and "id" in message:
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif "method" in message:
            self._on_notify(message["method"], message.get("params"))
        elif (
            isinstance(answered := message.get("id"), int)
            and (future := self._waiting.pop(answered, None)) is not None
        ):
            if "error" in message:
                future.set_exception(ServerError(str(message.get("id")), message["error"]))
            else:
                future.set_result(message.get("result"))

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
