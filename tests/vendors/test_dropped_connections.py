"""Connections a server drops before answering, over real loopback HTTP.

What llama-cpp-python really does at its context wall (seen in its log and in httpcore's
with the real server, tests/real/test_llama_cpp.py): the streamed request gets a 200
with an empty body, the server logs the ValueError, and its uvicorn then closes the
connection although the response said ``keep-alive``. httpx puts that connection back
in its pool; a request sent on it at once (the unstreamed ask that learns the window)
is dropped before any header, with a reset (``ReadError``) or a FIN
(``RemoteProtocolError``), whichever reaches the client first. Sent again and again
on the same kind of pooled connection, the ask never got its answer: four attempts,
each a ReadError, and the window was never learned.

The loopback server plays the lost race deterministically (``dropNext``: the next
request on that connection is dropped) and a server that drops every request
(``drop``). Promised: a request the server may be closing the connection under is
never sent on that connection; a drop before any answer is sent again at once on a
fresh connection; a server that drops every request ends in one error that says what
happened and where, after the announced retries, never a hang.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import FIXTURES, MakeModel, collect, done_message

LLAMA = FIXTURES / "llama_cpp"
HOW = pytest.mark.parametrize("how", ["reset", "close"])


def retries(events: list[Any]) -> list[Any]:
    return [e for e in events if e["type"] == "retry_start"]


@HOW
async def test_the_window_is_learned_when_the_server_closes_the_empty_streams_connection(
    server: ModelServer, make_model: MakeModel, how: str
) -> None:
    server.add(
        {"rawFile": str(LLAMA / "overflow_stream.sse"), "dropNext": how},
        {"bodyFile": str(LLAMA / "overflow_unstreamed.json"), "status": 400},
    )
    model = make_model("openai", model="smollm2", api_key=None)
    events = await collect(model)
    message = done_message(events)
    assert server.dropped == [], "nothing was sent on the connection the server was closing"
    assert [r["body"]["stream"] for r in server.requests] == [True, False]
    assert message["errorKind"] == "overflow", message
    assert model.context_window == 2048
    assert retries(events) == []


@HOW
@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_request_dropped_before_any_answer_is_sent_again_at_once(
    server: ModelServer, make_model: MakeModel, how: str, api: str
) -> None:
    """A pooled connection the server has just closed (its keep-alive timeout, or an
    error like llama-cpp-python's) loses the request sent on it; a fresh connection
    takes it. That is a reconnect, not a failure: no retry is announced."""
    server.add({"drop": how}, {"text": "hello"})
    events = await collect(make_model(api))
    message = done_message(events)
    assert message["stopReason"] == "stop", message
    assert message["content"] == [{"type": "text", "text": "hello"}]
    assert len(server.dropped) == 1 and len(server.requests) == 2
    assert all(r["body"]["stream"] is True for r in server.requests), "asked the same way"
    assert retries(events) == []


@HOW
@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_server_that_drops_every_request_ends_in_one_clear_error(
    server: ModelServer, make_model: MakeModel, how: str, api: str
) -> None:
    server.add(*[{"drop": how}] * 10)
    model = make_model(api, max_retries=2)
    events = await collect(model)
    message = done_message(events)
    assert message["stopReason"] == "error" and message["errorKind"] == "network"
    text = message["errorMessage"]
    assert model.url() in text and "dropped the connection before answering" in text, text
    assert "gave up after 4 attempts" in text, text
    announced = retries(events)
    assert [e["attempt"] for e in announced] == [1, 2], "each retry is announced"
    assert all("dropped the connection" in e["error"] for e in announced)
    assert len(server.requests) == 4, "the reconnect, then the first try and two retries"
