"""Every use of a pygls name that pygls does not document, in one place.

pygls 2.x keeps its book-keeping in underscore attributes (``_send_data``,
``_request_futures``, ``_result_types``, ``_converter``, ``_shutdown``). Crank needs a
few of them: to write an answer pygls itself would not send, to withdraw or fail a
request we sent, to structure and unstructure lsprotocol types, to know whether
``shutdown`` has been received. Nothing outside this module touches them;
tests/lsp/test_pygls_adapter.py fails loudly, naming the attribute, when a pygls
upgrade renames or retypes one (and checks that no other module reaches them).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import attrs
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol
from pygls.protocol.json_rpc import JsonRPCResponseMessage

from .errors import INTERNAL_ERROR
from .framing import frame

log = logging.getLogger(__name__)

PRIVATE_NAMES = (
    "_send_data",
    "_request_futures",
    "_result_types",
    "_converter",
    "_shutdown",
)
"""What this module relies on; the adapter test checks each exists on a real protocol."""


class PlainAnswers(JsonRPCProtocol):
    """pygls's protocol, with each answer whose result is plain JSON (a ``crank/*``
    method's object) framed by ``framing.frame``, our encoder, instead of pygls's: pygls
    unstructures the result through cattrs, copying every dict, then writes it with the
    standard library, which together took seconds for a resumed transcript's 50,000
    messages. An answer holding lsprotocol types (``initialize``, code actions) and
    every error answer still go through pygls, which knows their shapes."""

    def _send_data(self, data: Any) -> None:
        writer = self.writer
        if (
            writer is None
            or type(data) is not JsonRPCResponseMessage
            or type(data.result) is not dict
        ):
            super()._send_data(data)
            return
        try:
            body = frame({"jsonrpc": data.jsonrpc, "id": data.id, "result": data.result})
        except Exception:  # nothing JSON can hold: pygls answers, or reports, as it does
            super()._send_data(data)
            return
        try:
            writer.write(body)  # as ``LspEditor.send_notification`` writes: our writers are sync
        except BrokenPipeError:
            raise  # as pygls does: the reader went away
        except Exception:
            log.exception("an answer could not be written")


def send_payload(protocol: JsonRPCProtocol, payload: dict[str, Any] | list[Any]) -> None:
    """Write one JSON-RPC message (an answer pygls would not send) on the transport."""
    protocol._send_data(payload)


def is_shut_down(protocol: JsonRPCProtocol) -> bool:
    """Whether ``shutdown`` has been answered (pygls sets the flag)."""
    return bool(protocol._shutdown)


def is_pending(protocol: JsonRPCProtocol, msg_id: Any) -> bool:
    """Whether ``msg_id`` is one of our requests still waiting for the client's answer
    (pygls keeps the client's requests being handled in the same table, but only ours
    have an expected result type)."""
    try:
        return msg_id in protocol._result_types and msg_id in protocol._request_futures
    except TypeError:  # an unhashable id cannot be ours
        return False


def after_handled(protocol: JsonRPCProtocol, msg_id: Any, then: Callable[[], None]) -> None:
    """Call ``then`` once the client's request ``msg_id`` has been handled (at once if
    it is not in flight)."""
    future = protocol._request_futures.get(msg_id)
    if future is None or future.done():
        then()
    else:
        future.add_done_callback(lambda _: then())


def requests_in_flight(protocol: JsonRPCProtocol) -> list[asyncio.Future[Any]]:
    """The client's requests still being handled: each future's done callback sends
    its answer (ours are the ids with an expected result type)."""
    found: list[asyncio.Future[Any]] = []
    for msg_id, future in list(protocol._request_futures.items()):
        if msg_id in protocol._result_types or future.done():
            continue
        found.append(future if asyncio.isfuture(future) else asyncio.wrap_future(future))
    return found


def forget_request(protocol: JsonRPCProtocol, msg_id: Any) -> None:
    """Stop waiting for the answer to our request ``msg_id`` (we withdrew it)."""
    protocol._request_futures.pop(msg_id, None)
    protocol._result_types.pop(msg_id, None)


def fail_request(protocol: JsonRPCProtocol, msg_id: Any, message: str) -> None:
    """End our request ``msg_id`` with an error: the client's answer was unusable."""
    future = protocol._request_futures.pop(msg_id, None)
    protocol._result_types.pop(msg_id, None)
    if future is not None and not future.done():
        future.set_exception(JsonRpcException(message, INTERNAL_ERROR))


def take_plain_result(protocol: JsonRPCProtocol, msg_id: Any) -> bool:
    """True (and forgets the expectation) when our request ``msg_id`` has no lsprotocol
    result type: a custom request, whose answer stays plain JSON."""
    types = protocol._result_types
    if msg_id in types and types[msg_id] is None:
        del types[msg_id]
        return True
    return False


def expect_plain_result(protocol: JsonRPCProtocol, msg_id: Any) -> None:
    """Keep the answer to our request ``msg_id`` as plain JSON (for a request whose
    lsprotocol result type would misread what the client sends)."""
    protocol._result_types[msg_id] = None


def unstructure(protocol: JsonRPCProtocol, value: Any) -> Any:
    """An lsprotocol object as the JSON it is on the wire."""
    return protocol._converter.unstructure(value)


def structure(protocol: JsonRPCProtocol, data: Any, cls: type[Any]) -> Any:
    """JSON as an lsprotocol object; raises cattrs' errors when it does not fit."""
    return protocol._converter.structure(data, cls)


def is_request_type(cls: type[Any]) -> bool:
    """Whether an lsprotocol message class is a request (it has an ``id``)."""
    return attrs.has(cls) and "id" in attrs.fields_dict(cls)


def has_handler(protocol: JsonRPCProtocol, method: str) -> bool:
    """Whether pygls would find a handler for ``method`` (built in or registered)."""
    manager = protocol.fm
    return method in manager.builtin_features or method in manager.features
