"""What crank.lsp.pygls_adapter relies on in pygls, checked against the installed pygls:
if an upgrade renames or retypes one of these, this fails naming it, instead of a
request going unanswered at run time. And nothing outside the adapter reaches them."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import Future
from pathlib import Path

import pytest
from lsprotocol import types

from crank.lsp import pygls_adapter as adapter
from crank.lsp.framing import Frame, FrameParser
from crank.lsp.server import build_server

SERVER = Path(__file__).resolve().parents[2] / "server" / "crank"


@pytest.fixture
def protocol():  # type: ignore[no-untyped-def]
    return build_server(env={}).protocol


@pytest.mark.parametrize("name", adapter.PRIVATE_NAMES)
def test_pygls_still_has(protocol, name: str) -> None:  # type: ignore[no-untyped-def]
    assert hasattr(protocol, name), f"pygls no longer has JsonRPCProtocol.{name}"


def test_the_shapes_the_adapter_expects(protocol) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(protocol._request_futures, dict)
    assert isinstance(protocol._result_types, dict)
    assert protocol._shutdown is False
    assert callable(protocol._send_data)
    assert hasattr(protocol._converter, "structure") and hasattr(protocol._converter, "unstructure")
    assert isinstance(protocol.fm.features, dict) and isinstance(protocol.fm.builtin_features, dict)


def test_send_payload_writes_one_frame(protocol) -> None:  # type: ignore[no-untyped-def]
    written: list[bytes] = []

    class Writer:
        def write(self, data: bytes) -> None:
            written.append(data)

        def close(self) -> None:
            pass

    protocol.set_writer(Writer())
    payload = {"jsonrpc": "2.0", "id": 1, "result": None}
    adapter.send_payload(protocol, payload)
    events = FrameParser().feed(b"".join(written))
    assert [json.loads(event.body) for event in events if isinstance(event, Frame)] == [payload]
    assert len(events) == 1


async def test_requests_of_ours_pending_failed_and_forgotten(protocol) -> None:  # type: ignore[no-untyped-def]
    protocol.set_writer(
        type("W", (), {"write": lambda self, d: None, "close": lambda self: None})()
    )
    future = protocol.send_request("crank/requestPermission", {}, msg_id="ours")
    assert adapter.is_pending(protocol, "ours")
    assert adapter.take_plain_result(protocol, "ours")  # a custom method: plain JSON
    adapter.expect_plain_result(protocol, "ours")
    adapter.fail_request(protocol, "ours", "unusable")
    with pytest.raises(Exception, match="unusable"):
        await asyncio.wrap_future(future)
    assert not adapter.is_pending(protocol, "ours")
    protocol.send_request(types.WINDOW_SHOW_MESSAGE_REQUEST, None, msg_id="two")
    adapter.forget_request(protocol, "two")
    assert not adapter.is_pending(protocol, "two")
    assert not adapter.is_pending(protocol, ["unhashable"])


def test_a_request_of_the_client_being_handled_is_not_ours(protocol) -> None:  # type: ignore[no-untyped-def]
    protocol._request_futures[5] = Future()
    assert not adapter.is_pending(protocol, 5)
    called: list[int] = []
    adapter.after_handled(protocol, 5, lambda: called.append(1))
    assert called == []
    protocol._request_futures[5].set_result(None)
    assert called == [1]


def test_structure_and_kinds(protocol) -> None:  # type: ignore[no-untyped-def]
    position = adapter.structure(protocol, {"line": 1, "character": 2}, types.Position)
    assert adapter.unstructure(protocol, position) == {"line": 1, "character": 2}
    assert adapter.is_request_type(types.ShutdownRequest)
    assert not adapter.is_request_type(types.InitializedNotification)
    assert adapter.has_handler(protocol, types.INITIALIZE)
    assert adapter.has_handler(protocol, "crank/state")
    assert not adapter.has_handler(protocol, types.TEXT_DOCUMENT_HOVER)


def test_no_module_but_the_adapter_reaches_pygls_private_names() -> None:
    names = "|".join(re.escape(name) for name in (*adapter.PRIVATE_NAMES, "_stop_event"))
    pattern = re.compile(rf"\.({names})\b")
    offenders = [
        f"{path.relative_to(SERVER)}:{number}: {line.strip()}"
        for path in SERVER.rglob("*.py")
        if path.name != "pygls_adapter.py"
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


class _Written:
    def __init__(self) -> None:
        self.data: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.data.append(data)

    def close(self) -> None:
        pass


def test_a_plain_answer_is_framed_by_our_encoder(protocol) -> None:  # type: ignore[no-untyped-def]
    """pygls still hands every answer to ``_send_data``: a ``crank/*`` result (a dict)
    is framed by ``framing.frame`` (compact UTF-8, no Content-Type header, a lone
    surrogate escaped), never by pygls's cattrs and standard library."""
    written = _Written()
    protocol.set_writer(written)
    result = {"messages": [{"role": "user", "content": "café \ud800", "n": 2**70}]}
    protocol._send_response(7, result=result)
    assert len(written.data) == 1
    header, _, body = written.data[0].partition(b"\r\n\r\n")
    assert header == b"Content-Length: %d" % len(body)
    assert "café".encode() in body  # UTF-8, not \\u escapes: our encoder wrote it
    answer = json.loads(body)
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"messages": [{"role": "user", "content": "café \\ud800", "n": 2**70}]},
    }


def test_answers_with_lsprotocol_types_and_errors_stay_with_pygls(protocol) -> None:  # type: ignore[no-untyped-def]
    written = _Written()
    protocol.set_writer(written)
    action = types.CodeAction(title="Fix with Crank", kind=types.CodeActionKind.QuickFix)
    protocol._send_response(8, result=[action])
    protocol._send_response(9, error=types.ResponseError(code=-32602, message="bad"))
    answers = [json.loads(data.partition(b"\r\n\r\n")[2]) for data in written.data]
    assert all(b"Content-Type" in data for data in written.data)  # pygls's own framing
    assert answers[0]["result"] == [{"title": "Fix with Crank", "kind": "quickfix"}]
    assert answers[1]["error"] == {"code": -32602, "message": "bad"}
