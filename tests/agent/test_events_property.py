"""Property: on every exit path events are balanced and agent_settled is last and single,
and the record the run leaves behind always repairs into a valid view."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crank.agent.harness import Harness, ListenerFailed
from crank.agent.scripted import Reply, ScriptedModel
from crank.agent.view import build_view, is_valid_view

from .helpers import assert_balanced, echo_tool, failing_tool

replies = st.builds(
    Reply,
    text=st.sampled_from(["", "hello", "a longer answer"]),
    calls=st.lists(
        st.tuples(st.sampled_from(["echo", "explode", "nope"]), st.just({"text": "x"})), max_size=3
    ).map(tuple),
    stop_reason=st.sampled_from([None, "stop", "toolUse", "length"]),
    error=st.sampled_from([None, None, None, "provider failed"]),
    hang_after=st.sampled_from([None, None, None, 0, 1]),
)


async def scenario(
    script: list[Reply], fail_at: int | None, abort_at: int | None, max_turns: int
) -> None:
    model = ScriptedModel(script)
    harness = Harness(
        system="s", tools=[echo_tool(), failing_tool()], model=model, max_turns=max_turns
    )
    count = 0

    def maybe_fail(event: dict[str, Any]) -> None:
        nonlocal count
        count += 1
        if fail_at is not None and count == fail_at:
            raise RuntimeError("listener broke")

    heard: list[dict[str, Any]] = []
    harness.subscribe(maybe_fail)
    harness.subscribe(heard.append)
    run = harness.prompt("go")
    consumed: list[dict[str, Any]] = []
    hangs = any(r.hang_after is not None for r in script)
    loop = asyncio.get_running_loop()
    aborts: list[asyncio.Task[str]] = []
    timers: list[asyncio.TimerHandle] = []

    def abort() -> None:
        aborts.append(loop.create_task(harness.abort()))

    async for event in run.events():
        consumed.append(event)
        if abort_at is not None and len(consumed) == abort_at:
            abort()
        if hangs and event["type"] == "message_start" and event["message"]["role"] == "assistant":
            timers.append(loop.call_later(0.02, abort))
    try:
        await asyncio.wait_for(run.wait(), 5)
    except ListenerFailed:
        assert fail_at is not None
    finally:  # the scenario's own aborts end before the loop does (never left unawaited)
        for timer in timers:
            timer.cancel()
        await asyncio.gather(*aborts)
    assert_balanced(consumed)
    assert_balanced(heard)
    assert is_valid_view(build_view(harness.messages))
    assert not harness.is_running


@settings(max_examples=60, deadline=None)
@given(
    script=st.lists(replies, min_size=1, max_size=4),
    fail_at=st.one_of(st.none(), st.integers(1, 30)),
    abort_at=st.one_of(st.none(), st.integers(1, 30)),
    max_turns=st.integers(1, 5),
)
def test_events_balanced_and_settled_once_on_every_exit(
    script: list[Reply], fail_at: int | None, abort_at: int | None, max_turns: int
) -> None:
    # A hanging reply must be aborted to end: when the script has one, the scenario
    # aborts shortly after each assistant message starts.
    asyncio.run(scenario(script, fail_at, abort_at, max_turns))
