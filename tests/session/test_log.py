from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from crank.session import SessionClosed, SessionLocked, SessionLog, read_tree, resume
from crank.session.deferred import message_of
from crank.session.entries import new_entry_id

from .conftest import ask, say

SERVER = str(Path(__file__).resolve().parents[2] / "server")


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_file_is_a_header_then_entries_naming_their_parents(log: SessionLog) -> None:
    first = await log.append_message(ask("hello"))
    second = await log.append_message(say("hi"))
    header, one, two = lines_of(log.path)
    assert header["type"] == "session" and header["version"] == 1
    assert header["id"] == log.session_id and isinstance(header["created"], str)
    assert (one["id"], one["parentId"], one["type"]) == (first, None, "message")
    assert (two["id"], two["parentId"]) == (second, first)
    assert all(len(str(e["id"])) == 8 and int(str(e["id"]), 16) >= 0 for e in (one, two))
    assert isinstance(one["timestamp"], int)
    assert log.path.read_bytes().endswith(b"\n")


async def test_replay_of_the_live_log_equals_a_fresh_read(log: SessionLog) -> None:
    messages = [ask("one"), say("two"), ask("three")]
    for message in messages:
        await log.append_message(message)
    assert log.replay() == messages
    assert resume(log.path) == messages


def test_entry_ids_are_collision_checked() -> None:
    tokens = iter(["aaaaaaaa", "aaaaaaaa", "bbbbbbbb"])
    assert new_entry_id({"aaaaaaaa"}, lambda n: next(tokens)) == "bbbbbbbb"


async def test_concurrent_appends_keep_call_order(log: SessionLog) -> None:
    messages = [ask(f"m{i}") for i in range(12)]
    ids = await asyncio.gather(*(log.append_message(m) for m in messages))
    entries = read_tree(log.path).entries
    assert [e["id"] for e in entries] == ids
    contents = [message_of(log.path, e)["content"] for e in entries]
    assert contents == [f"m{i}" for i in range(12)]
    assert all(e["parentId"] == p for e, p in zip(entries[1:], ids, strict=False))


async def test_listener_writes_before_returning_and_names_the_entry(log: SessionLog) -> None:
    listener = log.listener()
    event: dict[str, object] = {"type": "message_end", "message": ask("saved?")}
    await listener(event)
    on_disk = lines_of(log.path)[-1]
    assert event["entryId"] == on_disk["id"]
    assert on_disk["message"] == {"role": "user", "content": "saved?", "timestamp": 1}


async def test_listener_ignores_other_events_and_tracks_runs(log: SessionLog) -> None:
    listener = log.listener()
    await listener({"type": "agent_start"})
    assert log.running
    await listener({"type": "message_update", "delta": {}})
    await listener({"type": "agent_settled"})
    assert not log.running
    assert len(lines_of(log.path)) == 1


async def test_data_json_cannot_hold_is_refused_and_nothing_is_written(log: SessionLog) -> None:
    before = log.path.read_bytes()
    bad = {"role": "user", "content": "x", "timestamp": 1, "extra": float("nan")}
    with pytest.raises(ValueError, match="message entry"):
        await log.append_message(bad)  # type: ignore[arg-type]
    assert log.path.read_bytes() == before
    assert await log.append_message(ask("still fine"))


async def test_closed_log_refuses_appends(log: SessionLog) -> None:
    log.close()
    with pytest.raises(SessionClosed, match="closed"):
        await log.append_message(ask("late"))


def _try_open_in_child(path: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        "from crank.session import SessionLocked, SessionLog, resume\n"
        "print(len(resume(sys.argv[1])))\n"
        "try:\n    SessionLog.open(sys.argv[1])\n"
        "except SessionLocked as e:\n    print(e.kind, e)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SERVER},
        check=True,
    )


async def test_a_second_process_is_refused_as_locked_but_may_read(log: SessionLog) -> None:
    await log.append_message(ask("mine"))
    output = _try_open_in_child(log.path).stdout.splitlines()
    assert output[0] == "1"
    assert output[1].startswith("session_locked ") and str(log.path) in output[1]
    log.close()
    assert _try_open_in_child(log.path).stdout.splitlines() == ["1"]


def test_the_same_process_cannot_open_a_session_twice(log: SessionLog) -> None:
    with pytest.raises(SessionLocked):
        SessionLog.open(log.path)


def test_sync_append_for_the_command_line(log: SessionLog) -> None:
    entry_id = log.append_message_sync(ask("from the CLI"))
    assert read_tree(log.path).tip == entry_id


def test_a_new_file_is_synced_by_its_first_append_which_returns_after_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``create`` waits for no disk (it runs before a session's first event); the first
    append's fsync covers the header with the entry, and the folder's (the new name)
    follows, both before the append returns. ``os.fsync`` is wrapped only to see which
    file each call syncs and how much of it is written; the calls reach the kernel."""
    real = os.fsync
    synced: list[tuple[str, int]] = []  # ("dir" | "file", bytes in it when synced)

    def seeing(fd: int) -> None:
        info = os.fstat(fd)
        synced.append(("dir" if stat.S_ISDIR(info.st_mode) else "file", info.st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", seeing)
    log = SessionLog.create(tmp_path / "sessions", cwd=str(tmp_path))
    try:
        assert synced == []
        header = log.path.stat().st_size
        log.append_message_sync(ask("first"))
        with_first = log.path.stat().st_size
        assert with_first > header
        assert [kind for kind, _ in synced] == ["file", "dir"]
        assert synced[0][1] == with_first  # the header and the entry, in one fsync
        log.append_message_sync(ask("second"))
        assert [kind for kind, _ in synced] == ["file", "dir", "file"]  # the name once
    finally:
        log.close()
