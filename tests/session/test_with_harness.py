"""The log with the real Harness: the saver hears first, resume sends exactly the active
branch, and a dangling call left by a crash is repaired in the view, not in the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crank.agent.harness import Harness
from crank.agent.scripted import ScriptedModel, call, say
from crank.agent.view import INTERRUPTED
from crank.session import SessionLog, SessionStore

from ..agent.helpers import echo_tool


def entry_ids_on_disk(path: Path) -> set[str]:
    return {json.loads(line)["id"] for line in path.read_text().splitlines()[1:]}


async def test_every_message_end_the_consumer_sees_is_already_on_disk(tmp_path: Path) -> None:
    log = SessionStore(tmp_path / "ws", tmp_path / "sessions").create()
    harness = Harness(
        system="s",
        tools=[echo_tool()],
        model=ScriptedModel([call("echo", {"text": "a"}), say("ok")]),
    )
    harness.subscribe(log.listener())
    run = harness.prompt("go")
    checked = 0
    async for event in run.events():
        if event["type"] == "message_end":
            assert event["entryId"] in entry_ids_on_disk(log.path)
            checked += 1
    await run.wait()
    assert checked == 4
    log.close()


async def test_resume_sends_exactly_the_active_branch(tmp_path: Path) -> None:
    log = SessionStore(tmp_path / "ws", tmp_path / "sessions").create()
    first = Harness(system="s", tools=[], model=ScriptedModel([say("one"), say("two")]))
    first.subscribe(log.listener())
    await first.prompt("keep me").wait()
    fork_point = log.tip
    await first.prompt("abandon me").wait()
    assert fork_point is not None
    await log.branch_to(fork_point)
    path = log.path
    log.close()

    reopened = SessionLog.open(path)
    model = ScriptedModel([say("three")])
    resumed = Harness(system="s", tools=[], model=model, messages=reopened.replay())
    resumed.subscribe(reopened.listener())
    await resumed.prompt("new attempt").wait()
    sent = [m["content"] for m in model.requests[0].messages if m["role"] == "user"]
    assert sent == ["keep me", "new attempt"]
    assert reopened.replay() == list(resumed.messages)
    reopened.close()


async def test_a_crash_between_call_and_result_is_repaired_in_the_view_only(tmp_path: Path) -> None:
    log = SessionStore(tmp_path / "ws", tmp_path / "sessions").create()
    harness = Harness(
        system="s", tools=[echo_tool()], model=ScriptedModel([call("echo", {"text": "a"})])
    )
    harness.subscribe(log.listener())
    run = harness.prompt("go")
    async for event in run.events():  # the process "dies" once the call is on disk
        if event["type"] == "tool_execution_start":
            break
    path = log.path
    before = path.read_bytes()
    await harness.abort()
    log.close()
    path.write_bytes(before)  # as if the process had been killed right there

    reopened = SessionLog.open(path)
    model = ScriptedModel([say("resumed")])
    resumed = Harness(system="s", tools=[echo_tool()], model=model, messages=reopened.replay())
    await resumed.prompt("carry on").wait()
    sent: list[Any] = model.requests[0].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "toolResult", "user"]
    assert sent[2]["content"] == INTERRUPTED
    assert not any('"toolResult"' in line for line in path.read_text().splitlines()[1:])
    reopened.close()
