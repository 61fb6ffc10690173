"""Messages that complete together share one fsync, and stay saved before announced.

Real files and the real Harness; ``os.fsync`` is wrapped only to count the calls (the
calls still reach the kernel)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from crank.agent.harness import Harness
from crank.agent.scripted import Reply, ScriptedModel
from crank.session import SessionLog, TornSession, read_tree, resume
from crank.session.repair import repair

from ..agent.helpers import echo_tool
from .conftest import ask, say


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The fsyncs of files. A folder's (a new session file's name, synced once, by the
    first append: tests/session/test_log.py) is not counted."""
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def ids_on_disk(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]]


def test_a_batch_is_one_write_one_fsync_and_a_chain(
    log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = log.append_message_sync(ask("before"))
    fsyncs = count_fsyncs(monkeypatch)
    items: list[tuple[str, dict[str, Any]]] = [
        ("message", {"message": {"role": "user", "content": f"m{n}", "timestamp": 1}})
        for n in range(5)
    ]
    ids = log.append_many_sync(items)
    assert len(fsyncs) == 1
    assert ids_on_disk(log.path) == [first, *ids] and len(set(ids)) == 5
    entries = read_tree(log.path).entries
    assert [entry["parentId"] for entry in entries] == [None, first, *ids[:-1]]
    assert log.tip == ids[-1]
    assert log.replay() == resume(log.path)


def test_a_batch_with_one_entry_json_cannot_hold_writes_none(log: SessionLog) -> None:
    log.append_message_sync(ask("kept"))
    before = log.path.read_bytes()
    good = ("message", {"message": {"role": "user", "content": "ok", "timestamp": 1}})
    bad = ("message", {"message": {"role": "user", "content": float("nan"), "timestamp": 1}})
    with pytest.raises(ValueError, match="cannot be written as JSON"):
        log.append_many_sync([good, bad])
    assert log.path.read_bytes() == before
    assert len(log.tree) == 1
    log.append_message_sync(ask("still writable"))  # nothing was broken


def test_a_batch_torn_by_a_crash_is_repaired_to_its_complete_lines(log: SessionLog) -> None:
    log.append_message_sync(ask("first"))
    items = [
        ("message", {"message": {"role": "user", "content": "x" * 50, "timestamp": 1}})
        for _ in range(3)
    ]
    ids = log.append_many_sync(items)
    log.close()
    data = log.path.read_bytes()
    log.path.write_bytes(data[: len(data) - 20])  # the power went out inside the last line
    with pytest.raises(TornSession):
        read_tree(log.path)
    outcome = repair(log.path)
    assert outcome.moved_bytes > 0
    assert ids_on_disk(log.path)[-2:] == ids[:2]
    assert [m["content"] for m in resume(log.path)] == ["first", "x" * 50, "x" * 50]


async def test_a_failed_reply_and_its_unrun_calls_share_one_fsync_and_are_on_disk_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path))
    calls = (("echo", {"text": "a"}), ("echo", {"text": "b"}), ("echo", {"text": "c"}))
    model = ScriptedModel([Reply(calls=calls, error="the provider hung up")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    harness.subscribe(log.listener(harness.messages_after))
    fsyncs = count_fsyncs(monkeypatch)
    seen: list[tuple[str, str]] = []

    async def after_the_saver(event: Any) -> None:
        if event["type"] == "message_end":
            assert event["entryId"] in ids_on_disk(log.path)  # saved before announced
            seen.append((event["message"]["role"], event["entryId"]))

    harness.subscribe(after_the_saver)
    await harness.prompt("go").wait()
    roles = [role for role, _ in seen]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "toolResult"]
    assert len(fsyncs) == 2  # the prompt; then the reply with its three results
    assert [entry_id for _, entry_id in seen] == ids_on_disk(log.path)
    assert resume(log.path) == list(harness.messages)
    log.close()


async def test_without_a_record_every_message_is_its_own_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path))
    calls = (("echo", {"text": "a"}), ("echo", {"text": "b"}))
    harness = Harness(
        system="s", tools=[echo_tool()], model=ScriptedModel([Reply(calls=calls, error="x")])
    )
    harness.subscribe(log.listener())
    fsyncs = count_fsyncs(monkeypatch)
    await harness.prompt("go").wait()
    assert len(fsyncs) == 4
    assert resume(log.path) == list(harness.messages)
    log.close()


async def test_tool_results_of_a_healthy_turn_are_each_saved_as_they_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A result is announced as soon as its tool finishes, so it cannot wait for the
    next tool: each is its own fsync (grouping is only for what completes together)."""
    log = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path))
    calls = (("echo", {"text": "a"}), ("echo", {"text": "b"}))
    model = ScriptedModel([Reply(calls=calls), Reply(text="done")])
    harness = Harness(system="s", tools=[echo_tool()], model=model)
    harness.subscribe(log.listener(harness.messages_after))
    fsyncs = count_fsyncs(monkeypatch)
    await harness.prompt("go").wait()
    assert len(fsyncs) == 5
    assert resume(log.path) == list(harness.messages)
    assert say("done")["content"] == harness.messages[-1]["content"]
    log.close()
