"""Hooks the context layer builds on: before_request at safe points, overflow recovery
once per run, adopt_messages only inside a hook, announce in order with the run."""

from __future__ import annotations

from typing import Any

import pytest

from crank.agent.harness import Harness, HarnessBusy
from crank.agent.messages import user_message
from crank.agent.scripted import ScriptedModel, call, say

from .helpers import assert_balanced, echo_tool


async def test_before_request_runs_before_every_request_at_a_safe_point() -> None:
    seen: list[str] = []

    async def hook(harness: Harness) -> None:
        last = harness.messages[-1]
        seen.append(last["role"])

    model = ScriptedModel([call("echo", {"text": "a"}), say("done")])
    harness = Harness(system="s", tools=[echo_tool()], model=model, before_request=hook)
    await harness.prompt("go").wait()
    assert seen == ["user", "toolResult"]


async def test_a_hook_can_swap_the_transcript_and_announce_in_order() -> None:
    async def compact(harness: Harness) -> None:
        if len(harness.messages) > 2:
            await harness.announce({"type": "compaction_start", "reason": "threshold"})
            harness.adopt_messages([user_message("summary"), *harness.messages[-2:]])
            await harness.announce({"type": "compaction_end", "compacted": True})

    model = ScriptedModel([call("echo", {"text": "a"}), say("done")])
    harness = Harness(system="s", tools=[echo_tool()], model=model, before_request=compact)
    run = harness.prompt("go")
    events = [e async for e in run.events()]
    await run.wait()
    types = [e["type"] for e in events]
    assert (
        types.index("compaction_start") < types.index("compaction_end") < types.index("agent_end")
    )
    assert types.index("compaction_start") > types.index("tool_execution_end")
    assert model.requests[1].messages[0]["content"] == "summary"
    assert harness.messages[0]["content"] == "summary"
    assert_balanced(events)


async def test_adopt_messages_outside_a_hook_is_refused_while_running() -> None:
    model = ScriptedModel([say("slow", delay=0.01)])
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("go")
    with pytest.raises(HarnessBusy):
        harness.adopt_messages([])
    await run.wait()


async def test_overflow_is_recovered_once_then_the_turn_is_tried_again() -> None:
    calls_made: list[int] = []

    async def recover(harness: Harness) -> bool:
        calls_made.append(len(harness.messages))
        harness.adopt_messages([user_message("short")])
        return True

    model = ScriptedModel([say("ok")], context_window=40)
    harness = Harness(system="s", tools=[], model=model, recover_overflow=recover)
    run = harness.prompt("x" * 400)
    events = [e async for e in run.events()]
    assert await run.wait() == "stop"
    assert calls_made == [2]
    retry = [e for e in events if e["type"].startswith("retry_")]
    assert [e["type"] for e in retry] == ["retry_start", "retry_end"] and retry[1]["success"]
    assert [m["role"] for m in harness.messages] == ["user", "assistant"]


async def test_overflow_recovery_never_loops() -> None:
    attempts: list[Any] = []

    async def recover(harness: Harness) -> bool:
        attempts.append(1)
        return True  # claims room but makes none

    model = ScriptedModel([say("never")], context_window=10)
    harness = Harness(system="s", tools=[], model=model, recover_overflow=recover)
    assert await harness.prompt("y" * 400).wait() == "error"
    assert attempts == [1]
    assert len(model.requests) == 2


async def test_an_event_announced_by_a_listener_follows_the_event_it_heard() -> None:
    model = ScriptedModel([say("hi")])
    harness = Harness(system="s", tools=[], model=model)

    async def meter(event: dict[str, Any]) -> None:
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            await harness.announce({"type": "usage_update", "contextTokens": 1})

    heard: list[str] = []
    harness.subscribe(meter)
    harness.subscribe(lambda e: heard.append(e["type"]))
    run = harness.prompt("go")
    consumed = [e["type"] async for e in run.events()]
    await run.wait()
    for seen in (heard, consumed):
        assert seen.index("usage_update") == seen.index("message_end", 3) + 1


@pytest.mark.parametrize("which", ["before_request", "build_request"])
async def test_a_hook_that_raises_still_settles_the_run_balanced(which: str) -> None:
    async def broken_hook(*_: Any) -> Any:
        raise RuntimeError("the disk is full")

    model = ScriptedModel([say("never sent")])
    harness = Harness(system="s", tools=[], model=model, **{which: broken_hook})
    run = harness.prompt("go")
    events = [e async for e in run.events()]
    assert events[-1]["type"] == "agent_settled"
    assert_balanced(events)
    assert not harness.is_running
    last = harness.messages[-1]
    assert last["role"] == "assistant" and last["stopReason"] == "error"
    assert "the disk is full" in last["errorMessage"]
    assert model.requests == []
    assert await harness.abort() == "idle"
    again = ScriptedModel([say("fine")])
    harness.model = again
    harness.before_request = harness.build_request = None
    assert await harness.prompt("again").wait() == "stop"
