"""What an OpenAI-compatible local server needs from every request (issue 29):
``max_tokens`` always, bounded by the window minus the request; ``tool_choice`` named
whenever tools are offered (llama-cpp-python applies tools only then). Through the
loopback server: the bodies are what crossed real HTTP."""

from __future__ import annotations

from tests.support.model_server import ModelServer
from vendor_helpers import MakeModel, collect, simple_request

TOOLS = [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]


async def test_max_tokens_is_sent_with_no_limit_configured(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"text": "ok"})
    await collect(make_model("openai", model="smollm2", api_key=None))
    body = server.requests[0]["body"]
    assert "max_tokens" in body, "no request without an output limit"
    assert 16 <= body["max_tokens"] <= 4096, "the model's known output limit (4096)"


async def test_max_tokens_leaves_the_request_room_in_the_window(
    server: ModelServer, make_model: MakeModel
) -> None:
    """A configured limit larger than what the window has left beside the request is
    cut to fit: one reply cannot eat the window."""
    server.add({"text": "ok"})
    model = make_model("openai", model="m", api_key=None, context_window=1000)
    request = simple_request("x" * 2400)  # about 600 tokens of prompt
    await collect(model, request)
    limit = server.requests[0]["body"]["max_tokens"]
    assert 16 <= limit <= 1000 - 600, limit


async def test_tool_choice_auto_goes_with_tools(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "ok"}, {"text": "ok"})
    model = make_model("openai", model="m", api_key=None)
    await collect(model, simple_request(tools=TOOLS))
    await collect(model, simple_request())
    with_tools, without = (r["body"] for r in server.requests)
    assert with_tools["tool_choice"] == "auto"
    assert "tool_choice" not in without and "tools" not in without
