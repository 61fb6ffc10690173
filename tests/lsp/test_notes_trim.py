"""Notes and trim through the real server over stdio, with a real HTTP model server on
loopback: a note saved in one turn is listed (by key) in the requests after a restart
and reads back word for word; under ``trim`` a long session's requests stay under the
window, keep the task and say that turns were removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer

from .helpers import running_server
from .test_context import small_window
from .test_runs import project

NOTE = "make -j4 check (not make test: that target was removed in 2024)"


def messages_of(request: dict[str, Any]) -> list[dict[str, Any]]:
    messages = request["body"]["messages"]
    assert isinstance(messages, list)
    return messages


def tool_names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request["body"].get("tools", [])]


async def test_a_note_saved_in_one_turn_is_listed_and_readable_after_a_restart(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    replies = [
        {"toolCalls": [{"name": "note_save", "arguments": {"key": "check", "text": NOTE}}]},
        {"text": "Noted the check command."},
        {"toolCalls": [{"name": "note_read", "arguments": {"key": "check"}}]},
        {"text": "The command is in the note."},
    ]
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 200_000)
        async with running_server(tmp_path, [folder], options) as crank:
            started = await crank.request("crank/prompt", {"text": "how are checks run?"})
            events = await crank.settled(started["runId"])
            assert crank.permission_requests == [], "a note is never asked about"
        ends = [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]
        assert ends[0]["result"]["isError"] is False, ends[0]
        first = model.requests[0]
        assert {"note_save", "note_read"} <= set(tool_names(first))
        assert "Notes you saved" not in json.dumps(messages_of(first)), "no notes yet"
        saved_turn = model.requests[1]
        assert "check" in messages_of(saved_turn)[-1]["content"]  # listed at the end at once
        sidecars = list((tmp_path / "sessions").rglob("*.notes.json"))
        assert len(sidecars) == 1 and NOTE in sidecars[0].read_text("utf-8")

        # A new server process: the newest session is resumed, its notes with it.
        async with running_server(tmp_path, [folder], options) as crank:
            started = await crank.request("crank/prompt", {"text": "run the checks"})
            events = await crank.settled(started["runId"])
        after_restart = model.requests[2]
        last = messages_of(after_restart)[-1]
        assert last["role"] == "user" and "Notes you saved" in last["content"]
        assert "check" in last["content"] and NOTE not in last["content"], "keys only"
        assert NOTE not in after_restart["body"]["messages"][0]["content"], "not the system"
        ends = [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]
        assert len(ends) == 1 and NOTE in ends[0]["result"]["content"]


async def test_trim_keeps_every_request_under_the_window(tmp_path: Path) -> None:
    folder = project(tmp_path)
    filler = "The parser keeps a table of every token it has seen so far. " * 25
    replies = [{"text": f"Answer {index}. {filler}"} for index in range(14)]
    task = "GOAL: explain the parser, one part per question"
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 6_000, policy="trim", keepRecentTokens=800)
        async with running_server(tmp_path, [folder], options) as crank:
            for index in range(14):
                text = task if index == 0 else f"and part {index}?"
                started = await crank.request("crank/prompt", {"text": text})
                events = await crank.settled(started["runId"])
                assert not [e for e in events if e["event"]["type"] == "compaction_start"]
            state = await crank.request("crank/state", {})
    assert len(model.requests) == 14
    for request in model.requests:
        assert len(json.dumps(request["body"])) // 4 < 6_000, "under the window"
        user = [m for m in messages_of(request) if m["role"] == "user"]
        assert user[0]["content"].startswith(task), "the task is always kept"
    last = messages_of(model.requests[-1])
    assert any("earlier turns of this conversation" in str(m["content"]) for m in last)
    assert state["usage"]["contextTokens"] < 6_000


async def test_turns_trimmed_out_of_view_can_be_recalled_word_for_word(tmp_path: Path) -> None:
    """Nothing the agent once saw is out of its reach: once ``trim`` has left turns out,
    the next run offers ``recall``, and it returns a dropped answer exactly."""
    folder = project(tmp_path)
    filler = "The parser keeps a table of every token it has seen so far. " * 25
    replies: list[dict[str, Any]] = [
        {"text": f"Answer {index}: code {index * 7919}. {filler}"} for index in range(10)
    ]
    replies += [
        {"toolCalls": [{"name": "recall", "arguments": {"query": "code 7919."}}]},
        {"text": "The first code was 7919."},
    ]
    async with ModelServer({"replies": replies, "estimateUsage": True}) as model:
        options = small_window(model, tmp_path, 6_000, policy="trim", keepRecentTokens=800)
        async with running_server(tmp_path, [folder], options) as crank:
            for index in range(11):
                text = "GOAL: explain the parser" if index == 0 else f"and part {index}?"
                started = await crank.request("crank/prompt", {"text": text})
                events = await crank.settled(started["runId"])
    assert "recall" not in tool_names(model.requests[0]), "nothing is out of view yet"
    asking = model.requests[10]
    assert "code 7919." not in json.dumps(messages_of(asking)), "answer 1 was trimmed"
    assert "recall" in tool_names(asking)
    ends = [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]
    assert ends and ends[0]["result"]["isError"] is False, ends
    assert "Answer 1: code 7919." in ends[0]["result"]["content"]
