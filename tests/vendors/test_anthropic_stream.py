"""The Anthropic model against a real loopback server streaming real SSE bytes."""

import asyncio
import json

from tests.support.model_server import ModelServer
from vendor_helpers import FIXTURES, KEY, MakeModel, collect, done_message, joined, simple_request

from crank.agent.messages import assistant_message, tool_result, user_message
from crank.agent.model import AbortSignal, ModelRequest

TOOLS = [
    {"name": "read", "description": "Read a file", "parameters": {"type": "object"}},
    {"name": "bash", "description": "Run a command", "parameters": {"type": "object"}},
]


async def test_thinking_text_and_tool_call_are_assembled(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {
            "thinking": "Plan: read it.",
            "signature": "sig-abc",
            "text": "Reading now.",
            "toolCalls": [
                {"id": "toolu_1", "name": "read", "arguments": {"path": "a.py", "n": [1, 2]}}
            ],
            "chunks": 5,
            "pings": True,
            "usage": {"input": 100, "output": 20, "cacheRead": 1000, "cacheWrite": 50},
        }
    )
    events = await collect(make_model())
    message = done_message(events)
    assert message["stopReason"] == "toolUse"
    assert message["content"] == [
        {"type": "thinking", "thinking": "Plan: read it.", "signature": "sig-abc"},
        {"type": "text", "text": "Reading now."},
        {
            "type": "toolCall",
            "id": "toolu_1",
            "name": "read",
            "arguments": {"path": "a.py", "n": [1, 2]},
        },
    ]
    assert joined(events, "thinking_delta", 0) == "Plan: read it."
    assert joined(events, "text_delta", 1) == "Reading now."
    assert json.loads(joined(events, "toolcall_delta", 2)) == {"path": "a.py", "n": [1, 2]}
    assert {"type": "toolcall_start", "contentIndex": 2, "id": "toolu_1", "name": "read"} in events
    usage = message["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (
        100,
        20,
        1000,
        50,
    )
    assert usage["cost"] == round((100 * 3 + 20 * 15 + 1000 * 0.3 + 50 * 3.75) / 1e6, 6)


async def test_recorded_fixture_stream(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"rawFile": str(FIXTURES / "anthropic_thinking_tool_use.sse")})
    message = done_message(await collect(make_model()))
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "toolCall"]
    assert message["content"][0]["signature"].startswith("EqQB")
    assert message["content"][2]["arguments"] == {"path": "tests/test_app.py"}
    assert message["usage"]["cacheRead"] == 5120 and message["usage"]["output"] == 89


def _transcript() -> list:
    thinking = {"type": "thinking", "thinking": "secret plan", "signature": "SIG/+=="}
    call = {"type": "toolCall", "id": "toolu_9", "name": "read", "arguments": {"path": "x"}}
    call2 = {"type": "toolCall", "id": "toolu_10", "name": "bash", "arguments": {"cmd": "ls"}}
    return [
        user_message("first", 1),
        assistant_message(
            [thinking, {"type": "text", "text": "ok"}, call, call2],
            stop_reason="toolUse",
            timestamp=2,
        ),
        tool_result("toolu_9", "read", "contents"),
        tool_result("toolu_10", "bash", "boom", is_error=True),
        user_message("second", 3),
    ]


def _breakpoints(body: dict) -> int:
    text = json.dumps(body)
    return text.count('"cache_control"')


async def test_request_shape_cache_marks_and_signature(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"text": "a"}, {"text": "b"})
    request = ModelRequest(system="SYS", messages=_transcript(), tools=TOOLS)
    model = make_model()
    await collect(model, request)
    await collect(model, request)
    first, second = server.requests
    assert first["headers"]["x-api-key"] == KEY and first["headers"]["anthropic-version"]
    body = first["body"]
    assert body == second["body"], "same request, same bytes"
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-5"
    assert body["system"] == [
        {"type": "text", "text": "SYS", "cache_control": {"type": "ephemeral"}}
    ]
    assert [t["name"] for t in body["tools"]] == ["read", "bash"]
    assert "cache_control" not in body["tools"][0] and body["tools"][1]["cache_control"]
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "assistant", "user"], "tool results and the next user turn merge"
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "secret plan", "signature": "SIG/+=="}
    results = body["messages"][2]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "toolu_9", "content": "contents"}
    assert results[1]["is_error"] is True and results[1]["tool_use_id"] == "toolu_10"
    assert results[2]["type"] == "text" and results[2]["text"] == "second"
    assert results[2]["cache_control"] == {"type": "ephemeral"}
    assert _breakpoints(body) == 4


async def test_never_more_than_four_breakpoints(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "a"})
    request = ModelRequest(system="SYS", messages=_transcript(), tools=TOOLS, cache_marks=(2, 0, 1))
    await collect(make_model(), request)
    body = server.requests[0]["body"]
    assert _breakpoints(body) == 4
    marked = [i for i, m in enumerate(body["messages"]) if "cache_control" in json.dumps(m)]
    assert marked == [1, 2], "the latest marks are the ones kept"


async def test_retry_after_429_then_success(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"status": 429, "retryAfter": 0}, {"text": "fine"})
    events = await collect(make_model())
    types = [e["type"] for e in events]
    assert types[0] == "retry_start" and events[0]["delayMs"] == 0
    assert "rate_limit" in events[0]["error"]
    assert {"type": "retry_end", "attempt": 1, "success": True} in events
    assert done_message(events)["content"] == [{"type": "text", "text": "fine"}]
    assert len(server.requests) == 2


async def test_overloaded_529_and_500_are_retried_then_give_up(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"status": 529}, {"status": 500}, {"status": 500})
    events = await collect(make_model(max_retries=2))
    message = done_message(events)
    assert message["stopReason"] == "error" and message["errorKind"] == "server"
    assert "gave up after 3 attempts" in message["errorMessage"]
    assert [e["type"] for e in events].count("retry_start") == 2
    assert [e["success"] for e in events if e["type"] == "retry_end"] == [False, False]
    assert len(server.requests) == 3


async def test_error_event_after_content_keeps_content_and_does_not_retry(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {"rawFile": str(FIXTURES / "anthropic_overloaded_midstream.sse")}, {"text": "unused"}
    )
    message = done_message(await collect(make_model()))
    assert message["stopReason"] == "error" and message["errorKind"] == "overloaded"
    assert "Overloaded" in message["errorMessage"]
    assert message["content"] == [{"type": "text", "text": "Hello"}]
    assert len(server.requests) == 1


async def test_error_event_before_content_is_retried(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add(
        {"text": "x", "errorAfter": 1, "error": {"type": "overloaded_error"}}, {"text": "second"}
    )
    message = done_message(await collect(make_model()))
    assert message["content"] == [{"type": "text", "text": "second"}]


async def test_dropped_connection(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "abcdef", "chunks": 3, "dropAfter": 3})
    message = done_message(await collect(make_model()))
    assert message["stopReason"] == "error" and message["errorKind"] == "network"
    assert message["content"] == [{"type": "text", "text": "ab"}]
    assert len(server.requests) == 1, "content had streamed: no retry"
    server.add({"text": "x", "dropAfter": 0}, {"text": "after drop"})
    message = done_message(await collect(make_model()))
    assert message["content"] == [{"type": "text", "text": "after drop"}]
    assert len(server.requests) == 3


async def test_overflow_401_are_not_retried(server: ModelServer, make_model: MakeModel) -> None:
    server.add(
        {"status": 400, "errorMessage": "prompt is too long: 210000 tokens > 200000 maximum"}
    )
    message = done_message(await collect(make_model()))
    assert message["errorKind"] == "overflow" and "210000 tokens" in message["errorMessage"]
    server.add({"status": 401, "errorMessage": "invalid x-api-key"})
    message = done_message(await collect(make_model()))
    assert message["errorKind"] == "auth" and "invalid x-api-key" in message["errorMessage"]
    assert len(server.requests) == 2


async def test_silent_stream_times_out_as_error(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "partial", "chunks": 1, "hangAfter": 3})
    message = done_message(await collect(make_model(read_timeout=0.3)))
    assert message["stopReason"] == "error" and message["errorKind"] == "timeout"
    assert message["content"] == [{"type": "text", "text": "partial"}]


async def test_cancel_closes_a_silent_stream(server: ModelServer, make_model: MakeModel) -> None:
    server.add({"text": "partial", "chunks": 1, "hangAfter": 3})
    model = make_model()
    seen: list = []
    got_text = asyncio.Event()

    async def consume() -> None:
        async for event in model.stream(simple_request(), AbortSignal()):
            seen.append(event)
            if event["type"] == "text_delta":
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 5)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        cancelled = True
    else:
        cancelled = False
    assert cancelled, "cancellation propagates"
    for _ in range(200):
        if server.disconnects:
            break
        await asyncio.sleep(0.01)
    assert server.disconnects, "the HTTP stream was closed"
    assert not any(e["type"] == "done" for e in seen)
    await model.aclose()


async def test_signal_abort_between_events_ends_aborted_with_partial(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"text": "abcdefghij", "chunks": 10, "delayMs": 20})
    signal = AbortSignal()
    model = make_model()
    events = []
    async for event in model.stream(simple_request(), signal):
        events.append(event)
        if event["type"] == "text_delta" and len(events) == 2:
            signal.abort("user pressed stop")
    message = done_message(events)
    assert message["stopReason"] == "aborted" and message["errorMessage"] == "user pressed stop"
    assert (
        message["content"][0]["text"].startswith("ab")
        and message["content"][0]["text"] != "abcdefghij"
    )
    await model.aclose()


async def test_abort_during_retry_wait_ends_at_once(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"status": 429, "retryAfter": 30})
    signal = AbortSignal()
    model = make_model()
    events = []
    async for event in model.stream(simple_request(), signal):
        events.append(event)
        if event["type"] == "retry_start":
            asyncio.get_running_loop().call_soon(signal.abort)
    assert [e["type"] for e in events] == ["retry_start", "retry_end", "done"]
    assert events[0]["delayMs"] == 30000
    assert done_message(events)["stopReason"] == "aborted"
    await model.aclose()


async def test_retry_after_beyond_the_limit_is_an_error_now(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"status": 429, "retryAfter": 3600})
    events = await collect(make_model())
    message = done_message(events)
    assert len(events) == 1 and message["errorKind"] == "rate_limit"
    assert "asked to wait 3600s" in message["errorMessage"]


async def test_usage_beyond_the_window_is_overflow(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"text": "hi", "usage": {"input": 900, "cacheRead": 200}})
    message = done_message(await collect(make_model(context_window=1000)))
    assert message["stopReason"] == "error" and message["errorKind"] == "overflow"
    assert message["content"] == [{"type": "text", "text": "hi"}]


async def test_already_aborted_sends_nothing(server: ModelServer, make_model: MakeModel) -> None:
    signal = AbortSignal()
    signal.abort("stopped before start")
    events = await collect(make_model(), signal=signal)
    assert done_message(events)["stopReason"] == "aborted" and len(events) == 1
    assert server.requests == []


async def test_redacted_thinking_is_kept_and_sent_back_unchanged(
    server: ModelServer, make_model: MakeModel
) -> None:
    server.add({"rawFile": str(FIXTURES / "anthropic_redacted_thinking.sse")}, {"text": "done"})
    model = make_model()
    reply = done_message(await collect(model))
    data = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
    assert reply["content"][0] == {"type": "thinking", "thinking": "", "redacted": data}
    assert reply["content"][1]["arguments"] == {"path": "a.py"}
    follow = ModelRequest(
        system="SYS",
        messages=[user_message("go", 1), reply, tool_result("toolu_01R", "read", "x = 1")],
        tools=TOOLS,
    )
    await collect(model, follow)
    sent = server.requests[1]["body"]["messages"][1]["content"]
    assert sent[0] == {"type": "redacted_thinking", "data": data}
    assert sent[1]["type"] == "tool_use"
