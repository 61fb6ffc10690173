"""The one place that decides what an incoming frame is, and answers what it must.

``Inbox.receive`` takes what ``framing.FrameParser`` delimited. Every message that
carries a readable id gets exactly one answer: either the one its handler gives
(pygls sends it), or a refusal from here, which then never reaches pygls:

- a body that is not UTF-8 JSON (``NaN`` and friends included): -32700, id null;
- a body nested deeper than ``MAX_DEPTH``: -32600 with its id when it can be read;
- a batch (a JSON array): one -32600 per element, sent back as an array (JSON-RPC
  2.0's batch answer), since LSP has no batches; an empty array is one -32600;
- not an object, ``jsonrpc`` not exactly ``"2.0"``, a ``method`` that is not a string,
  an id that is neither a string nor an integer, a message with neither ``method`` nor
  ``result``/``error``, a notification method sent with an id: -32600 (with the id
  when it is a valid one, else null);
- any request but ``initialize`` before ``initialize``: -32002; a second
  ``initialize``: -32600; any request after ``shutdown``: -32600;
- a method nobody handles: -32601; params that are not an object or array, or that do
  not fit the standard LSP type of the method: -32602 naming the fields.

Notifications are never answered; one that is refused is logged in one line (before
``initialize`` and after ``shutdown`` only ``exit`` is acted on, as LSP says). The
client's answers to our own requests go to the request that waits for them; one that
is malformed fails that request instead of leaving it waiting forever.

Every refusal is logged as one line on stderr; tracebacks only at DEBUG.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
from typing import Any

import cattrs
from lsprotocol import types
from pygls.protocol import JsonRPCProtocol

from . import pygls_adapter as adapter
from .bodies import Undecodable, decode, valid_id
from .errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    SERVER_NOT_INITIALIZED,
    camel_case,
)
from .framing import Event, Frame, Refused, Skipped

log = logging.getLogger("crank.lsp")


def _fields(exc: Exception) -> str:
    """cattrs' structuring errors as ``field: problem`` in the wire's camelCase."""
    try:
        lines = cattrs.transform_error(exc, path="$")
    except Exception:
        return str(exc) or type(exc).__name__
    named = []
    for line in lines:
        problem, _, path = line.rpartition(" @ ")
        path = path.removeprefix("$.params.").removeprefix("$.params").removeprefix("$.")
        path = ".".join(camel_case(part) for part in path.split(".")) if path else "params"
        named.append(f"{path}: {problem or line}")
    return "; ".join(named)


def _error(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class Inbox:
    """One per connection: what arrives goes through ``receive``, in order."""

    def __init__(self, protocol: JsonRPCProtocol, requests: Collection[str] = ()) -> None:
        self.protocol = protocol
        self.requests = frozenset(requests)
        """Custom methods that are requests (lsprotocol knows the standard ones)."""
        self.initialize_received = False
        self._shutdown_id: Any = None

    def receive(self, event: Event) -> None:
        try:
            if isinstance(event, Frame):
                self._frame(event.body)
            elif isinstance(event, Refused):
                self._refused(event)
            elif isinstance(event, Skipped):
                log.warning(
                    "skipped %d bytes that are not a frame header (%r...)",
                    event.count,
                    event.preview,
                )
        except (BrokenPipeError, ConnectionError):
            raise
        except Exception as exc:
            log.error("a frame could not be handled: %s", exc, exc_info=log.isEnabledFor(10))

    # -- bodies ----------------------------------------------------------------------

    def _send(self, payload: dict[str, Any] | list[Any]) -> None:
        adapter.send_payload(self.protocol, payload)

    def _refuse(self, msg_id: Any, code: int, message: str) -> dict[str, Any]:
        log.warning("refused a message (%d): %s", code, message)
        return _error(msg_id if valid_id(msg_id) else None, code, message)

    def _refused(self, event: Refused) -> None:
        msg_id = None
        if event.body:
            try:
                value = decode(event.body)
            except Undecodable:
                value = None
            if isinstance(value, dict) and _is_answer(value):
                self._bad_answer(value.get("id"), f"its frame was refused: {event.reason}")
            elif isinstance(value, dict):
                msg_id = value.get("id")
        if valid_id(msg_id):
            self._send(self._refuse(msg_id, INVALID_REQUEST, f"frame refused: {event.reason}"))
        else:
            self._send(self._refuse(None, PARSE_ERROR, f"frame refused: {event.reason}"))

    def _frame(self, body: bytes) -> None:
        try:
            value = decode(body)
        except Undecodable as exc:
            self._send(self._refuse(exc.msg_id, exc.code, exc.reason))
            return
        if isinstance(value, list):
            self._batch(value)
            return
        answer = self._message(value)
        if answer is not None:
            self._send(answer)

    def _batch(self, items: list[Any]) -> None:
        if not items:
            self._send(self._refuse(None, INVALID_REQUEST, "an empty batch"))
            return
        answers = []
        for item in items:
            is_notification = isinstance(item, dict) and "method" in item and "id" not in item
            is_response = (
                isinstance(item, dict)
                and "method" not in item
                and ("result" in item or "error" in item)
            )
            if is_notification or is_response:
                continue
            msg_id = item.get("id") if isinstance(item, dict) else None
            answers.append(
                _error(
                    msg_id if valid_id(msg_id) else None,
                    INVALID_REQUEST,
                    "batches (JSON arrays) are not supported: send each message in its own frame",
                )
            )
        log.warning("refused a batch of %d messages", len(items))
        if answers:
            self._send(answers)

    # -- one message -----------------------------------------------------------------

    def _message(self, data: Any) -> dict[str, Any] | None:
        if not isinstance(data, dict):
            return self._refuse(
                None, INVALID_REQUEST, f"a message must be a JSON object, not {_kind(data)}"
            )
        msg_id = data.get("id")
        answer_id = msg_id if valid_id(msg_id) else None
        is_response = _is_answer(data)
        if data.get("jsonrpc") != "2.0":
            problem = f'jsonrpc must be "2.0", not {json.dumps(data.get("jsonrpc"))}'
            if "jsonrpc" not in data:
                problem = 'the message has no "jsonrpc": "2.0"'
            if is_response:
                self._bad_answer(msg_id, problem)
                return None
            return self._refuse(answer_id, INVALID_REQUEST, problem)
        if is_response:
            self._response(data)
            return None
        if "method" not in data:
            return self._refuse(
                answer_id,
                INVALID_REQUEST,
                "a message needs a method (a request or notification) or a result or an "
                "error (an answer)",
            )
        method = data["method"]
        if not isinstance(method, str):
            return self._refuse(answer_id, INVALID_REQUEST, "method must be a string")
        if "id" in data and not valid_id(msg_id):
            return self._refuse(
                None, INVALID_REQUEST, f"{method}: id must be a string or an integer"
            )
        params = data.get("params")
        if params is not None and not isinstance(params, dict | list):
            if "id" in data:
                return self._refuse(
                    msg_id, INVALID_PARAMS, "invalid params: params: must be an object or an array"
                )
            log.warning("ignored %s: its params are not an object or an array", method)
            return None
        if "id" in data:
            return self._request(data, msg_id, method)
        self._notification(data, method)
        return None

    def _request(self, data: dict[str, Any], msg_id: Any, method: str) -> dict[str, Any] | None:
        protocol = self.protocol
        message_type = protocol.get_message_type(method)
        if message_type is not None and not adapter.is_request_type(message_type):
            return self._refuse(
                msg_id, INVALID_REQUEST, f"{method} is a notification: send it without an id"
            )
        if method == types.SHUTDOWN and self._shutdown_id is not None:
            return self._refuse(
                msg_id, INVALID_REQUEST, "shutdown was already received: send exit next"
            )
        if method == types.INITIALIZE and self.initialize_received:
            return self._refuse(
                msg_id, INVALID_REQUEST, "initialize was already received: it is sent once"
            )
        if method != types.INITIALIZE and not self.initialize_received:
            return self._refuse(
                msg_id,
                SERVER_NOT_INITIALIZED,
                f"{method}: the server is not initialized; send initialize first",
            )
        if adapter.is_shut_down(protocol):
            return self._refuse(msg_id, INVALID_REQUEST, f"{method}: the server is shutting down")
        if not adapter.has_handler(protocol, method):
            return self._refuse(msg_id, METHOD_NOT_FOUND, f"method not found: {method}")
        try:
            message = self._structure(data, message_type)
        except Exception as exc:
            log.debug("the params of %s do not structure", method, exc_info=True)
            return self._refuse(msg_id, INVALID_PARAMS, f"invalid params: {_fields(exc)}")
        if method == types.INITIALIZE:
            self.initialize_received = True
        if method == types.SHUTDOWN:
            self._shutdown_id = msg_id
        protocol.handle_message(message)
        return None

    def _notification(self, data: dict[str, Any], method: str) -> None:
        protocol = self.protocol
        if method != types.EXIT and (
            not self.initialize_received or adapter.is_shut_down(protocol)
        ):
            when = "after shutdown" if self.initialize_received else "before initialize"
            log.info("ignored the notification %s %s", method, when)
            return
        message_type = protocol.get_message_type(method)
        if method in self.requests or (
            message_type is not None and adapter.is_request_type(message_type)
        ):
            log.warning("ignored %s: it is a request and was sent without an id", method)
            return
        if not adapter.has_handler(protocol, method) and method != types.CANCEL_REQUEST:
            if message_type is None and not method.startswith("$/"):
                log.info("ignored the notification %s: nothing handles it", method)
            return
        try:
            message = self._structure(data, message_type)
        except Exception as exc:
            log.warning("ignored %s: invalid params: %s", method, _fields(exc))
            return
        if method == types.EXIT and self._shutdown_id is not None:
            # LSP: exit after shutdown *was received* exits 0, even if it is still
            # being handled (a client that did not wait for its answer).
            adapter.after_handled(
                protocol, self._shutdown_id, lambda: protocol.handle_message(message)
            )
            return
        protocol.handle_message(message)

    def _response(self, data: dict[str, Any]) -> None:
        protocol = self.protocol
        msg_id = data.get("id")
        if not adapter.is_pending(protocol, msg_id):
            log.warning("ignored an answer to %s, which is not a request of ours", msg_id)
            return
        if "result" in data and "error" in data:
            self._bad_answer(msg_id, "it has both a result and an error")
            return
        error = data.get("error")
        if "error" in data and not (
            isinstance(error, dict)
            and valid_id(error.get("code"))
            and not isinstance(error.get("code"), str)
            and isinstance(error.get("message"), str)
        ):
            self._bad_answer(msg_id, "its error is not {code: integer, message: string}")
            return
        try:
            message = protocol.structure_message(data)
        except Exception as exc:
            self._bad_answer(msg_id, f"it does not fit the request's result type: {_fields(exc)}")
            return
        protocol.handle_message(message)

    def _bad_answer(self, msg_id: Any, problem: str) -> None:
        if adapter.is_pending(self.protocol, msg_id):
            log.warning("the client's answer to %s is unusable: %s", msg_id, problem)
            adapter.fail_request(
                self.protocol, msg_id, f"the client's answer is unusable: {problem}"
            )
        else:
            log.warning("ignored an unusable answer: %s", problem)

    def _structure(self, data: dict[str, Any], message_type: type[Any] | None) -> Any:
        if message_type is None:
            return self.protocol.structure_message(data)
        return adapter.structure(self.protocol, data, message_type)


def _is_answer(data: dict[str, Any]) -> bool:
    """A message shaped as an answer to a request of ours: never answered itself."""
    return "method" not in data and ("result" in data or "error" in data)


def _kind(value: Any) -> str:
    return {str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )
