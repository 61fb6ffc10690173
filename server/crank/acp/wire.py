"""Newline-delimited JSON-RPC 2.0 over a pair of byte streams: ACP's framing.

Contract:
- Every request that carries an id gets exactly one answer: its handler's result, or
  an error. A line that is not JSON is -32700 (id null); JSON that is not a request
  object is -32600 (with the id when one can be read); an unknown method -32601; a
  handler's ``RpcError`` its own code; anything else a handler raises -32603 with the
  exception's text (logged with its traceback on stderr).
- Notifications (no id) are never answered; an unknown notification is logged.
- Each request runs in a task of its own, so a long ``session/prompt`` never holds up
  the ``session/cancel`` that ends it. Outgoing requests (``session/request_permission``)
  wait for the peer's answer; a cancelled wait forgets the id, and a late answer for
  an id nobody waits on is dropped.
- Nothing but protocol lines is written to the output; one lock keeps lines whole.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, BinaryIO

from crank.agent import wiretext
from crank.workspace.errors import (
    RPC_INTERNAL_ERROR,
    RPC_INVALID_PARAMS,
    RPC_INVALID_REQUEST,
    RPC_METHOD_NOT_FOUND,
    RPC_PARSE_ERROR,
)

log = logging.getLogger("crank.acp")

PARSE_ERROR = RPC_PARSE_ERROR
INVALID_REQUEST = RPC_INVALID_REQUEST
METHOD_NOT_FOUND = RPC_METHOD_NOT_FOUND
INVALID_PARAMS = RPC_INVALID_PARAMS
INTERNAL_ERROR = RPC_INTERNAL_ERROR
MAX_LINE_BYTES = 64 * 1024 * 1024
"""A longer line is refused (-32600) rather than held in memory."""

Handler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None]]


class RpcError(Exception):
    """An error answer: ``code`` and ``message`` go on the wire as they are."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class PeerGone(Exception):
    """The other side closed its output; an outgoing request can never be answered."""


class Peer:
    """One JSON-RPC connection: reads lines from ``reader``, writes to ``output``."""

    def __init__(self, output: BinaryIO) -> None:
        self._output = output
        self._requests: dict[str, Handler] = {}
        self._notifications: dict[str, NotificationHandler] = {}
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self.closed = False

    def on_request(self, method: str, handler: Handler) -> None:
        self._requests[method] = handler

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        self._notifications[method] = handler

    # -- writing ----------------------------------------------------------------------

    def _write(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        line = wiretext.dumps_compact(message) + b"\n"
        try:
            self._output.write(line)
            self._output.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.closed = True

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Ask the peer; raises ``RpcError`` for an error answer, ``PeerGone`` at EOF."""
        if self.closed:
            raise PeerGone(method)
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            return await future
        finally:
            self._waiting.pop(request_id, None)

    def _answer(self, request_id: Any, result: Any) -> None:
        self._write({"jsonrpc": "2.0", "id": request_id, "result": result})

    def _fail(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._write({"jsonrpc": "2.0", "id": request_id, "error": error})

    # -- reading ----------------------------------------------------------------------

    def receive(self, line: bytes) -> None:
        """Take one line from the peer (called in order, on the event loop)."""
        if not line.strip():
            return
        if len(line) > MAX_LINE_BYTES:
            self._fail(None, INVALID_REQUEST, f"a message of {len(line)} bytes is too large")
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            self._fail(None, PARSE_ERROR, f"parse error: {exc}")
            return
        if not isinstance(message, dict):
            self._fail(None, INVALID_REQUEST, "a message must be a JSON object")
            return
        if wiretext.may_hold_surrogate(line):
            where = wiretext.incoming_surrogate(message)
            if where is not None and "method" in message and "id" in message:
                bad_id = where.split(".")[0] == "id"
                self._fail(
                    None if bad_id else message["id"], INVALID_PARAMS, wiretext.refusal(where)
                )
                return
            if where is not None:
                message = wiretext.clean(message)
        has_id = "id" in message
        request_id = message.get("id")
        if has_id and not (isinstance(request_id, (str, int)) and not isinstance(request_id, bool)):
            self._fail(None, INVALID_REQUEST, "id must be a string or an integer")
            return
        if message.get("jsonrpc") != "2.0":
            if has_id:
                self._fail(request_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
            return
        method = message.get("method")
        if method is None and has_id and ("result" in message or "error" in message):
            self._settle(request_id, message)
            return
        if not isinstance(method, str):
            if has_id:
                self._fail(request_id, INVALID_REQUEST, "method must be a string")
            return
        params = message.get("params")
        if has_id:
            self._spawn(self._run_request(request_id, method, params))
        else:
            self._spawn(self._run_notification(method, params))

    def _settle(self, request_id: Any, message: dict[str, Any]) -> None:
        future = self._waiting.get(request_id) if isinstance(request_id, int) else None
        if future is None or future.done():
            log.debug("an answer to %r, which nobody waits for, was dropped", request_id)
            return
        error = message.get("error")
        if error is not None:
            code = error.get("code") if isinstance(error, dict) else None
            text = error.get("message") if isinstance(error, dict) else None
            if not isinstance(code, int) or isinstance(code, bool) or not isinstance(text, str):
                # a malformed error answer still fails the question (a rejection for a
                # permission), never leaves it waiting
                code, text = INTERNAL_ERROR, f"a malformed error answer: {str(error)[:200]}"
            future.set_exception(RpcError(code, text))
        else:
            future.set_result(message.get("result"))

    def refuse_oversized(self) -> None:
        """A line passed ``MAX_LINE_BYTES``: refused at once (-32600, id null); the
        reader skips the rest of it without holding it."""
        self._fail(
            None,
            INVALID_REQUEST,
            f"a message longer than {MAX_LINE_BYTES} bytes is refused (the rest of its line "
            "is skipped)",
        )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_request(self, request_id: Any, method: str, params: Any) -> None:
        handler = self._requests.get(method)
        if handler is None:
            self._fail(request_id, METHOD_NOT_FOUND, f"method not found: {method}")
            return
        try:
            result = await handler(params)
        except RpcError as exc:
            self._fail(request_id, exc.code, exc.message, exc.data)
        except asyncio.CancelledError:
            self._fail(request_id, INTERNAL_ERROR, f"{method} was cancelled (the agent is closing)")
            raise
        except Exception as exc:
            log.exception("%s failed", method)
            self._fail(request_id, INTERNAL_ERROR, f"{method} failed: {exc}")
        else:
            self._answer(request_id, result)

    async def _run_notification(self, method: str, params: Any) -> None:
        handler = self._notifications.get(method)
        if handler is None:
            log.info("notification %s is not handled", method)
            return
        try:
            await handler(params)
        except Exception:
            log.exception("notification %s failed", method)

    def end_of_input(self) -> None:
        """The peer's output ended: no answer can come, so outgoing requests fail."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(PeerGone("the client closed the connection"))

    async def drain(self) -> None:
        """Wait for every running handler to answer (the caller has made sure they
        can: the runs were aborted), then write nothing more."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        self.closed = True
