"""A finished reply leaves its connection in the pool, so the next turn reuses it.

Over real loopback HTTP with a server that says ``keep-alive`` (as Anthropic's,
OpenAI's and most local servers do): a stream is read to its end marker (``[DONE]``,
``message_stop``) and then to the end of its body, so httpx can hand the connection
back; stopping at the marker made httpx close it, and every turn of an agent paid a
new TCP connection (and against a cloud API a new TLS handshake). Promised: two
replies in a row share one connection; nothing after the end marker is parsed.
"""

from __future__ import annotations

import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import MakeModel, collect, done_message, simple_request

from crank.agent.model import AbortSignal


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_two_turns_share_one_connection(
    server: ModelServer, make_model: MakeModel, api: str
) -> None:
    server.add({"text": "first", "keepAlive": True}, {"text": "second", "keepAlive": True})
    model = make_model(api)
    first = [e async for e in model.stream(simple_request(), AbortSignal())]
    second = await collect(model)
    assert done_message(first)["content"][0]["text"] == "first"
    assert done_message(second)["content"][0]["text"] == "second"
    connections = [request["connection"] for request in server.requests]
    assert connections[0] == connections[1], "the second turn opened a new connection"


async def test_a_server_that_closes_after_the_reply_still_serves_the_next(
    server: ModelServer, make_model: MakeModel
) -> None:
    """``Connection: close`` (the loopback default): the reply is whole, the next turn
    connects again."""
    server.add({"text": "first"}, {"text": "second"})
    model = make_model("openai")
    first = [e async for e in model.stream(simple_request(), AbortSignal())]
    second = await collect(model)
    assert done_message(first)["content"][0]["text"] == "first"
    assert done_message(second)["content"][0]["text"] == "second"
    assert len({request["connection"] for request in server.requests}) == 2
