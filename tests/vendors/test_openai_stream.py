"""The OpenAI-compatible model against a real loopback server."""

import json
import logging
import socket

import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import FIXTURES, KEY, MakeModel, collect, done_message, joined, simple_request

from crank.agent.messages import assistant_message, tool_result, user_message
from crank.agent.model import AbortSignal, ModelRequest

TOOLS = [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}]


async def test_reasoning_text_and_parallel_tool_calls(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {
            "thinking": "hmm",
            "text": "Two reads.",
            "chunks": 4,
            "pings": True,
            "omitToolIds": True,
            "toolCalls": [
                {"name": "read", "arguments": {"path": "a"}},
                {"name": "read", "arguments": {"path": "b"}},
            ],
            "usage": {"input": 40, "cacheRead": 60, "output": 7},
        }
    )
    events = await collect(make_model("openai"))
    message = done_message(events)
    assert message["stopReason"] == "toolUse"
    thinking, text, first, second = message["content"]
    assert thinking == {"type": "thinking", "thinking": "hmm"}
    assert text == {"type": "text", "text": "Two reads."}
    assert (first["arguments"], second["arguments"]) == ({"path": "a"}, {"path": "b"})
    assert first["id"].startswith("call_") and first["id"] != second["id"], "ids made up"
    assert joined(events, "text_delta", 1) == "Two reads."
    assert json.loads(joined(events, "toolcall_delta", 3)) == {"path": "b"}
    usage = message["usage"]
    assert (usage["input"], usage["cacheRead"], usage["output"]) == (40, 60, 7)
    assert usage["cost"] == round((40 * 2.5 + 60 * 1.25 + 7 * 10) / 1e6, 6)


async def test_recorded_openai_fixture(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"rawFile": str(FIXTURES / "openai_parallel_tool_calls.sse")})
    message = done_message(await collect(make_model("openai")))
    assert [c["id"] for c in message["content"]] == [
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "call_ABTz8G1uXb6i0pBq2oW7FvXk",
    ]
    assert [c["arguments"]["path"] for c in message["content"]] == ["a.py", "b.py"]
    assert (message["usage"]["input"], message["usage"]["cacheRead"]) == (260, 1280)


async def test_local_server_without_usage_or_done(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(FIXTURES / "ollama_text_no_usage.sse")})
    message = done_message(await collect(make_model("openai", model="qwen3:8b", api_key=None)))
    assert message["content"] == [
        {"type": "thinking", "thinking": "Short question."},
        {"type": "text", "text": "Four."},
    ]
    assert message["usage"]["input"] > 0 and message["usage"]["output"] >= 1, "estimated"
    assert message["usage"]["cost"] == 0.0
    assert "authorization" not in server.requests[0]["headers"]
    server.add({"text": "no done", "noDone": True, "noUsage": True})
    assert done_message(await collect(make_model("openai")))["stopReason"] == "stop"


async def test_broken_arguments_stay_visible_and_go_back_raw(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {"toolCalls": [{"id": "c1", "name": "read", "argumentsText": '{"path": "a'}]},
        {"text": "ok"},
    )
    model = make_model("openai")
    message = done_message(await collect(model))
    assert message["content"][0]["arguments"] == {"_raw": '{"path": "a'}
    request = ModelRequest(
        system="S",
        tools=TOOLS,
        messages=[
            user_message("go", 1),
            message,
            tool_result("c1", "read", "bad arguments", is_error=True),
        ],
    )
    await collect(model, request)
    sent = server.requests[1]["body"]["messages"]
    assert sent[2]["tool_calls"][0]["function"]["arguments"] == '{"path": "a'
    assert sent[3] == {"role": "tool", "tool_call_id": "c1", "content": "bad arguments"}


async def test_request_shape(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "x"})
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "p"}}
    request = ModelRequest(
        system="SYS",
        tools=TOOLS,
        max_output_tokens=300,
        messages=[
            user_message("one", 1),
            user_message("two", 2),
            assistant_message([{"type": "text", "text": "a"}], timestamp=3),
            assistant_message(
                [{"type": "thinking", "thinking": "t"}, call], stop_reason="toolUse", timestamp=4
            ),
            tool_result("c1", "read", "data"),
        ],
    )
    await collect(make_model("openai"), request)
    seen = server.requests[0]
    assert seen["path"] == "/v1/chat/completions"
    assert seen["headers"]["authorization"] == f"Bearer {KEY}"
    body = seen["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 300
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file",
            "parameters": {"type": "object"},
        },
    }
    assert body["messages"] == [
        {"role": "system", "content": "SYS"},
        {"role": "user", "content": "one\n\ntwo"},
        {
            "role": "assistant",
            "content": "a",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"path": "p"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "data"},
    ]


async def test_errors_classified_and_key_scrubbed(
    server: ModelServer, make_model: MakeModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.add(
        {"status": 429, "retryAfter": 0},
        {"text": "after"},
        {
            "status": 400,
            "errorCode": "context_length_exceeded",
            "errorMessage": "maximum context length is 8192",
        },
        {"status": 401, "errorMessage": f"Incorrect API key provided: {KEY}"},
        {"text": "abc", "chunks": 3, "errorAfter": 3, "error": {"message": "backend crashed"}},
    )
    events = await collect(make_model("openai"))
    assert (
        events[0]["type"] == "retry_start" and done_message(events)["content"][0]["text"] == "after"
    )
    overflow = done_message(await collect(make_model("openai")))
    assert overflow["errorKind"] == "overflow" and "8192" in overflow["errorMessage"]
    auth = done_message(await collect(make_model("openai")))
    assert (
        auth["errorKind"] == "auth"
        and KEY not in json.dumps(auth)
        and "***" in auth["errorMessage"]
    )
    midstream = done_message(await collect(make_model("openai")))
    assert midstream["errorKind"] == "server" and "backend crashed" in midstream["errorMessage"]
    assert midstream["content"] == [{"type": "text", "text": "ab"}]
    assert len(server.requests) == 5
    assert caplog.records and KEY not in caplog.text


async def test_connection_refused_is_a_network_error(make_model: MakeModel) -> None:
    model = make_model("openai", base_url="http://127.0.0.1:9/v1", max_retries=1)
    events = await collect(model)
    message = done_message(events)
    assert message["errorKind"] == "network" and message["stopReason"] == "error"
    assert [e["type"] for e in events] == ["retry_start", "retry_end", "done"]


async def test_a_retry_after_a_refused_connection_quotes_its_own_error(
    make_model: MakeModel,
) -> None:
    """Refused once, then the server is up and answers 503: the second retry notice
    said "no answer yet, trying once more" (the refusal counted for every later
    attempt) instead of what the server said."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    model = make_model("openai", base_url=f"http://127.0.0.1:{port}/v1", max_retries=3)
    server = ModelServer(
        [{"status": 503, "errorMessage": "the model is loading"}, {"text": "ready"}], port=port
    )
    events = []
    try:
        stream = model.stream(simple_request(), AbortSignal())
        async for event in stream:
            events.append(event)
            if event["type"] == "retry_start" and len(events) == 1:
                await server.start()  # the retry of the refused connection finds it up
    finally:
        await model.aclose()
        await server.stop()
    retries = [e["error"] for e in events if e["type"] == "retry_start"]
    assert retries[0] == "no answer yet, trying once more"
    assert "the model is loading" in retries[1], retries
    assert done_message(events)["content"] == [{"type": "text", "text": "ready"}]
