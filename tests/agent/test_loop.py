"""The loop's principles (DESIGN.md 1-4), one test each, through the Harness."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from crank.agent.harness import Harness
from crank.agent.messages import tool_calls
from crank.agent.scripted import Reply, ScriptedModel, call, calls, say
from crank.agent.tools import ToolCall

from .helpers import assert_balanced, echo_tool, failing_tool


async def run_all(harness: Harness, text: str) -> list[dict[str, Any]]:
    run = harness.prompt(text)
    events = [event async for event in run.events()]
    await run.wait()
    return events


async def test_tool_calls_with_a_stop_label_still_go_round() -> None:
    model = ScriptedModel([call("echo", {"text": "a"}, stop_reason="stop"), say("after")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    events = await run_all(harness, "go")
    assert len(model.requests) == 2
    assert harness.messages[2]["role"] == "toolResult"
    assert next(e for e in events if e["type"] == "agent_end")["stopReason"] == "stop"


async def test_a_tool_use_label_without_calls_ends_the_run() -> None:
    model = ScriptedModel([say("no calls here", stop_reason="toolUse"), say("never sent")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    await run_all(harness, "go")
    assert len(model.requests) == 1
    assert [m["role"] for m in harness.messages] == ["user", "assistant"]


async def test_a_length_stop_is_reported_not_acted_on() -> None:
    model = ScriptedModel([say("cut sh", stop_reason="length")])
    harness = Harness(system="s", tools=[], model=model)
    events = await run_all(harness, "go")
    assert [e["stopReason"] for e in events if e["type"] == "agent_end"] == ["length"]
    assert len(model.requests) == 1


async def test_a_failing_tool_in_the_middle_of_a_batch_gets_one_result_each() -> None:
    batch = calls(("echo", {"text": "1"}), ("explode", {"text": "2"}), ("echo", {"text": "3"}))
    model = ScriptedModel([batch, say("recovered")])
    harness = Harness(system="s", tools=[echo_tool(), failing_tool()], model=model)
    events = await run_all(harness, "go")
    results = [m for m in harness.messages if m["role"] == "toolResult"]
    assert [r["isError"] for r in results] == [False, True, False]
    assert "kaboom" in results[1]["content"]
    assert harness.messages[-1]["role"] == "assistant"
    assert_balanced(events)


async def test_unknown_tool_names_the_tools_that_exist() -> None:
    model = ScriptedModel([call("teleport", {"text": "x"}), say("ok")])
    harness = Harness(system="s", tools=[echo_tool(), failing_tool()], model=model)
    await run_all(harness, "go")
    result = harness.messages[2]
    assert result["role"] == "toolResult" and result["isError"]
    assert (
        "teleport" in result["content"]
        and "echo" in result["content"]
        and "explode" in result["content"]
    )


async def test_bad_arguments_name_the_field_and_the_tool_never_runs() -> None:
    ran: list[str] = []
    tool = echo_tool()
    original = tool.execute

    async def spy(call: ToolCall, signal: Any, on_update: Any) -> Any:
        ran.append("yes")
        return await original(call, signal, on_update)

    object.__setattr__(tool, "execute", spy)
    model = ScriptedModel([call("echo", {"text": 42}), call("echo", {}), say("ok")])
    harness = Harness(system="s", tools=[tool], model=model)
    await run_all(harness, "go")
    wrong_type, missing = (m for m in harness.messages if m["role"] == "toolResult")
    assert (
        wrong_type["isError"]
        and "text" in wrong_type["content"]
        and "string" in wrong_type["content"]
    )
    assert missing["isError"] and "'text' is a required property" in missing["content"]
    assert ran == []


async def test_max_turns_ends_the_run_with_a_recorded_error() -> None:
    model = ScriptedModel([call("echo", {"text": str(i)}) for i in range(10)])
    harness = Harness(system="s", tools=[echo_tool()], model=model, max_turns=3)
    events = await run_all(harness, "go")
    assert len(model.requests) == 3
    last = harness.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert "3 turns" in last.get("errorMessage", "")
    assert [e["stopReason"] for e in events if e["type"] == "agent_end"] == ["error"]
    assert_balanced(events)


async def test_a_provider_failure_is_recorded_not_raised() -> None:
    model = ScriptedModel([Reply(text="partial", error="server exploded")])
    harness = Harness(system="s", tools=[], model=model)
    events = await run_all(harness, "go")
    last = harness.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert last.get("errorMessage") == "server exploded"
    assert [e["stopReason"] for e in events if e["type"] == "agent_end"] == ["error"]


async def test_a_failed_reply_with_calls_answers_each_call_without_running_it() -> None:
    model = ScriptedModel([Reply(calls=(("explode", {"text": "x"}),), error="stream broke")])
    harness = Harness(system="s", tools=[failing_tool()], model=model)
    events = await run_all(harness, "go")
    result = harness.messages[-1]
    assert result["role"] == "toolResult" and result["isError"] and "Not run" in result["content"]
    assert not [e for e in events if e["type"] == "tool_execution_start"]


async def test_mutate_then_announce_listeners_see_the_record_already_changed() -> None:
    model = ScriptedModel([call("echo", {"text": "a"}), say("done")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    seen: list[bool] = []

    def listener(event: dict[str, Any]) -> None:
        if event["type"] == "message_end":
            seen.append(harness.messages[-1] is event["message"])

    harness.subscribe(listener)
    await run_all(harness, "go")
    assert seen == [True, True, True, True]


async def test_listeners_hear_before_the_consumer_and_may_annotate() -> None:
    model = ScriptedModel([say("hello")])
    harness = Harness(system="s", tools=[], model=model)

    def saver(event: dict[str, Any]) -> None:
        if event["type"] == "message_end":
            event["entryId"] = f"e{len(harness.messages)}"

    harness.subscribe(saver)
    events = await run_all(harness, "go")
    assert [e.get("entryId") for e in events if e["type"] == "message_end"] == ["e1", "e2"]


async def test_deltas_concatenate_to_the_final_text() -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 20
    model = ScriptedModel([Reply(text=text, thinking="let me think")], chunk_size=3)
    harness = Harness(system="s", tools=[], model=model)
    events = await run_all(harness, "go")
    deltas = [e["delta"] for e in events if e["type"] == "message_update"]
    final = [e["message"] for e in events if e["type"] == "message_end"][-1]
    for index, block in enumerate(final["content"]):
        joined = "".join(d["text"] for d in deltas if d["contentIndex"] == index)
        assert joined == (block["text"] if block["type"] == "text" else block["thinking"])


async def test_tool_call_deltas_name_the_call() -> None:
    model = ScriptedModel([call("echo", {"text": "abc"}), say("ok")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    events = await run_all(harness, "go")
    starts = [
        e["delta"]
        for e in events
        if e["type"] == "message_update" and e["delta"]["kind"] == "toolCall"
    ]
    assert starts[0]["toolName"] == "echo" and starts[0]["toolCallId"]
    assert "".join(d["text"] for d in starts) == '{"text": "abc"}'


async def test_continue_runs_from_the_transcript_without_a_new_message() -> None:
    model = ScriptedModel([Reply(error="overloaded"), say("second try worked")])
    harness = Harness(system="s", tools=[], model=model)
    await run_all(harness, "go")
    run = harness.continue_()
    await run.wait()
    assert [m["role"] for m in model.requests[1].messages] == ["user"]
    assert harness.messages[-1]["content"][0]["text"] == "second try worked"  # type: ignore[index,typeddict-item]


async def test_system_prompt_changed_during_a_run_applies_to_the_next_run() -> None:
    gate, entered = asyncio.Event(), asyncio.Event()
    from .helpers import gated_tool

    model = ScriptedModel([call("gated", {"text": "x"}), say("one"), say("two")])
    harness = Harness(system="old", tools=[gated_tool(gate, entered)], model=model)
    run = harness.prompt("go")
    await entered.wait()
    harness.set_system("new")
    gate.set()
    await run.wait()
    await harness.prompt("again").wait()
    assert [r.system for r in model.requests] == ["old", "old", "new"]


@pytest.mark.parametrize("count", [1, 5])
async def test_tool_calls_are_answered_in_call_order(count: int) -> None:
    batch = calls(*[("echo", {"text": str(i)}) for i in range(count)])
    model = ScriptedModel([batch, say("ok")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    await run_all(harness, "go")
    ids = [c["id"] for c in tool_calls(harness.messages[1])]
    results = [m["toolCallId"] for m in harness.messages if m["role"] == "toolResult"]
    assert results == ids
