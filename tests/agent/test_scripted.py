"""The scripted model behaves like a strict, caching provider where tests rely on it."""

from __future__ import annotations

from crank.agent.messages import Message, assistant_message, user_message
from crank.agent.model import AbortSignal, ModelRequest
from crank.agent.scripted import Reply, ScriptedModel, common_prefix_length, say


async def collect(model: ScriptedModel, messages: list[Message]) -> dict:  # type: ignore[type-arg]
    events = [
        e async for e in model.stream(ModelRequest(system="s", messages=messages), AbortSignal())
    ]
    assert events[-1]["type"] == "done"
    return events[-1]["message"]  # type: ignore[typeddict-item,return-value]


async def test_refuses_a_call_without_a_result() -> None:
    model = ScriptedModel([say("x")])
    dangling = assistant_message(
        [{"type": "toolCall", "id": "a", "name": "t", "arguments": {}}], stop_reason="toolUse"
    )
    reply = await collect(model, [user_message("go"), dangling, user_message("next")])
    assert reply["stopReason"] == "error" and reply["errorKind"] == "invalid_request"


async def test_refuses_a_request_over_its_window_as_overflow() -> None:
    model = ScriptedModel([say("x")], context_window=50)
    reply = await collect(model, [user_message("y" * 400)])
    assert reply["stopReason"] == "error" and reply["errorKind"] == "overflow"


async def test_cache_read_is_the_shared_prefix() -> None:
    model = ScriptedModel([say("a"), say("b")])
    first = [user_message("hello " * 100, timestamp=1)]
    await collect(model, first)
    second = [
        *first,
        assistant_message([{"type": "text", "text": "a"}], timestamp=2),
        user_message("more", timestamp=3),
    ]
    reply = await collect(model, second)
    assert reply["usage"]["cacheRead"] >= 150
    assert reply["usage"]["input"] < 80


async def test_a_reply_can_be_computed_from_the_request() -> None:
    model = ScriptedModel(
        [lambda request: Reply(text=f"you said {request.messages[-1]['content']}")]
    )
    reply = await collect(model, [user_message("ping")])
    assert reply["content"][0]["text"] == "you said ping"


def test_common_prefix_length() -> None:
    assert common_prefix_length("abcdef", "abcxyz") == 3
    assert common_prefix_length("", "abc") == 0
    assert common_prefix_length("same", "same") == 4


def test_replies_load_from_plain_json_and_unknown_keys_are_refused() -> None:
    from crank.agent.scripted import reply_from_dict

    reply = reply_from_dict({"text": "hi", "calls": [{"name": "read", "arguments": {"path": "a"}}]})
    assert reply.calls == (("read", {"path": "a"}),) and reply.text == "hi"
    try:
        reply_from_dict({"txt": "typo"})
    except ValueError as exc:
        assert "txt" in str(exc)
    else:
        raise AssertionError("a typo in a script must not be ignored")
