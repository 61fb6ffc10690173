"""A WorkspaceHost without the LSP layer. The editor is a stand-in that records what
the host sends (the real one is exercised end to end in tests/lsp)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from crank.agent.messages import assistant_message, user_message
from crank.agent.model import AbortSignal
from crank.agent.tools import run_tool
from crank.session import SessionLog
from crank.tools import MemoryDocuments, OpenDocuments
from crank.workspace import CrankError, Settings, WorkspaceHost
from crank.workspace import daily as daily_module


class RecordingEditor:
    """Stands in for the editor: keeps events and log lines, allows everything."""

    def __init__(self) -> None:
        self.documents = MemoryDocuments()
        self.files = OpenDocuments(self.documents)
        self.terminal = None
        self.events: list[dict[str, Any]] = []
        self.lines: list[str] = []

    def send_event(self, params: dict[str, Any]) -> None:
        self.events.append(params)

    async def apply_edit(self, path: Path, old_text: str, new_text: str) -> None:
        await self.documents.apply_edit(path, old_text, new_text)

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"decision": "allow"}

    def log(self, message: str) -> None:
        self.lines.append(message)

    def commands_changed(self, workspace: str) -> None:
        self.lines.append(f"commands changed: {workspace}")


def resolved(path: Path) -> str:
    return str(path.resolve())


async def test_the_prompt_is_rebuilt_when_the_day_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    days = [datetime.date(2026, 11, 29)]
    folder = resolved(tmp_path)
    looked = asyncio.Semaphore(0)

    def seconds_until_tomorrow() -> float:
        looked.release()  # one more look at the date (the first is at start)
        return 0.01

    monkeypatch.setattr(daily_module, "seconds_until_tomorrow", seconds_until_tomorrow)
    editor = RecordingEditor()
    host = WorkspaceHost(
        tmp_path.as_uri(),
        tmp_path,
        editor,
        Settings(session_dir=str(tmp_path / "s")),
        env={},
        user_dir=tmp_path / "user",
        resume_last=False,
        today=lambda: days[-1],
    )
    await host.start()
    try:
        assert "Current date: 2026-11-29" in host.system_prompt()["text"]
        for _ in range(4):  # three midnights passed on the same date: nothing changed
            await looked.acquire()
        assert not [e for e in editor.events if e["event"]["type"] == "system_prompt_changed"]
        days.append(datetime.date(2026, 11, 30))
        for _ in range(100):
            if any(e["event"]["type"] == "system_prompt_changed" for e in editor.events):
                break
            await asyncio.sleep(0.02)
        assert "Current date: 2026-11-30" in host.system_prompt()["text"]
        assert host.harness.system.endswith(f"Current working directory: {folder}")
        assert "2026-11-30" in host.harness.system
    finally:
        await host.close()


class AnsweringEditor(RecordingEditor):
    """Answers each permission question from a table keyed by ``toolCallId`` (rejects
    any id it does not know), and keeps every question it was asked."""

    def __init__(self, answers: dict[str, str]) -> None:
        super().__init__()
        self.answers = answers
        self.questions: list[dict[str, Any]] = []

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.questions.append(params)
        return {"decision": self.answers.get(params["toolCallId"], "reject")}


def scripted_host(tmp_path: Path, editor: RecordingEditor, replies: list[Any]) -> WorkspaceHost:
    """A host in ``tmp_path/ws`` whose provider is the scripted model (a stand-in for a
    real one: only the permission routing is under test here)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    return WorkspaceHost(
        folder.as_uri(),
        folder,
        editor,
        Settings(
            provider_layers=({"api": "scripted", "model": "script"},),
            script=str(script),
            session_dir=str(tmp_path / "s"),
        ),
        env={},
        rules_file=tmp_path / "rules.json",
        user_dir=tmp_path / "user",
        resume_last=False,
    )


async def test_two_identical_calls_in_one_batch_each_get_their_own_answer(
    tmp_path: Path,
) -> None:
    same = {"name": "write", "arguments": {"path": "a.txt", "content": "x\n"}}
    # The scripted model numbers its calls call_1, call_2: allow the first only.
    editor = AnsweringEditor({"call_1": "allow"})
    host = scripted_host(tmp_path, editor, [{"calls": [same, same]}, {"text": "done"}])
    await host.start()
    try:
        accepted = host.prompt_run("write it twice")
        run = host.harness.current_run
        assert run is not None
        await run.wait()
        # One run id, minted once: the answer, every event and every question carry it.
        assert accepted["runId"] == run.id
        assert {e["runId"] for e in editor.events if "runId" in e} == {run.id}
        assert {q["runId"] for q in editor.questions} == {run.id}
        results = [m for m in host.harness.messages if m["role"] == "toolResult"]
        assert [q["toolCallId"] for q in editor.questions] == ["call_1", "call_2"]
        assert [r["toolCallId"] for r in results] == ["call_1", "call_2"]
        assert not results[0]["isError"] and results[0]["content"].startswith("Created a.txt")
        assert results[1]["isError"] and "declined" in results[1]["content"]
    finally:
        await host.close()


async def test_identical_calls_in_flight_at_once_are_asked_about_by_their_own_ids(
    tmp_path: Path,
) -> None:
    """Tools run one at a time today; this drives two identical calls through the host's
    own tools at once, so the answer cannot depend on which call happens to be first."""
    editor = AnsweringEditor({"b": "allow"})
    host = scripted_host(tmp_path, editor, [])
    await host.start()
    try:
        args = {"path": "b.txt", "content": "y\n"}
        batch = [
            {"type": "toolCall", "id": call_id, "name": "write", "arguments": dict(args)}
            for call_id in ("a", "b")
        ]
        outcomes = await asyncio.gather(
            *(run_tool(host.tools, block, AbortSignal(), lambda _: None) for block in batch)  # type: ignore[arg-type]
        )
        by_id = {result["toolCallId"]: result for result, _ in outcomes}
        assert sorted(q["toolCallId"] for q in editor.questions) == ["a", "b"]
        assert by_id["a"]["isError"] and "declined" in by_id["a"]["content"]
        assert not by_id["b"]["isError"]
    finally:
        await host.close()


async def test_the_outside_question_names_the_call_that_asked(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("far\n")
    reads = [
        {"name": "read", "arguments": {"path": "../elsewhere.txt"}},
        {"name": "read", "arguments": {"path": "../elsewhere.txt", "offset": 1}},
    ]
    editor = AnsweringEditor({"call_2": "allow"})
    host = scripted_host(tmp_path, editor, [{"calls": reads}, {"text": "done"}])
    await host.start()
    try:
        host.prompt_run("read outside")
        run = host.harness.current_run
        assert run is not None
        await run.wait()
        asked = [(q["toolCallId"], q["toolName"], q["arguments"]) for q in editor.questions]
        assert asked == [
            ("call_1", "outside", reads[0]["arguments"]),
            ("call_2", "outside", reads[1]["arguments"]),
        ]
        results = [m for m in host.harness.messages if m["role"] == "toolResult"]
        assert results[0]["isError"] and not results[1]["isError"]
    finally:
        await host.close()


async def test_a_record_the_view_had_to_repair_is_logged_and_shown_in_state(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A crash between a call and its result: the file keeps the hole, the request
    repairs it, and the host says so (log and ``crank/state``) instead of hiding it."""
    editor = RecordingEditor()
    host = scripted_host(tmp_path, editor, [{"text": "resumed"}])
    crashed = SessionLog.create(host.store.directory, str(host.root))
    crashed.append_message_sync(user_message("go"))
    blocks: list[Any] = [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {}}]
    crashed.append_message_sync(assistant_message(blocks, stop_reason="toolUse"))
    session_id = crashed.session_id
    crashed.close()
    await host.start()
    try:
        with caplog.at_level("WARNING", logger="crank.session.housekeeping"):
            await host.open_session(session_id)
            repairs = host.state()["viewRepairs"]  # the meter builds the view at once
            assert repairs["interruptedResults"] == 1 and repairs["droppedOrphanResults"] == 0
            host.prompt_run("continue")
            run = host.harness.current_run
            assert run is not None
            await run.wait()
        sent = host.harness.model.requests[0].messages  # type: ignore[attr-defined]
        assert sent[2]["role"] == "toolResult" and sent[2]["toolCallId"] == "c1"
        assert host.state()["viewRepairs"] == repairs
        assert sum("repairs the record" in r.getMessage() for r in caplog.records) == 1
    finally:
        await host.close()


async def test_project_templates_wait_for_trust_and_the_change_is_announced(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    (root / ".crank" / "prompts").mkdir(parents=True)
    (root / ".crank" / "prompts" / "deploy.md").write_text("Deploy $1.\n", "utf-8")
    (tmp_path / "user" / "prompts").mkdir(parents=True)
    (tmp_path / "user" / "prompts" / "mine.md").write_text("Mine.\n", "utf-8")
    editor = RecordingEditor()
    settings = Settings(session_dir=str(tmp_path / "s"))
    host = WorkspaceHost(
        root.as_uri(), root, editor, settings, env={}, user_dir=tmp_path / "user", resume_last=False
    )
    await host.start()
    try:
        names = [c["name"] for c in host.commands()["commands"]]
        assert names == ["compact", "model", "new", "undo", "mine"]
        with pytest.raises(CrankError) as refused:
            await host.submit("/deploy prod")
        assert refused.value.kind == "unknown_command"
        assert not [line for line in editor.lines if line.startswith("commands changed")]
        await host.reconfigure(dataclasses.replace(settings, trusted=True))
        assert f"commands changed: {root.as_uri()}" in editor.lines
        names = [c["name"] for c in host.commands()["commands"]]
        assert names == ["compact", "model", "new", "undo", "deploy", "mine"]
    finally:
        await host.close()


async def test_a_closed_host_leaves_no_task_of_its_own(tmp_path: Path) -> None:
    """Everything a host starts (the watcher, the daily refresh, a run, announcements)
    has ended when ``close`` returns: nothing of a closed workspace runs on."""
    before = asyncio.all_tasks()
    host = scripted_host(tmp_path, RecordingEditor(), [{"text": "hi"}])
    await host.start()
    host.prompt_run("hello")
    run = host.harness.current_run
    if run is not None:
        await run.wait()
    stuck = asyncio.Event()

    async def slow_listener(event: object) -> None:
        await stuck.wait()

    host.harness.subscribe(slow_listener)  # a listener that never returns
    host.harness.follow_up("later")  # idle: its announcement runs in the background
    await host.close()
    left = {task for task in asyncio.all_tasks() - before if not task.done()}
    assert left == set(), sorted(task.get_name() for task in left)


async def test_a_first_prompt_waits_for_no_disk_before_agent_start_and_is_saved_before_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first prompt of a new session creates its file, and nothing is synced before
    ``agent_start`` goes out (the loop does not wait for the disk); the user message's
    ``message_end`` still comes only once the file (header and prompt, one fsync) and
    its folder are synced, off the event loop. ``os.fsync`` is wrapped only to see what
    each call syncs and from which thread; the calls reach the kernel."""
    real = os.fsync
    synced: list[tuple[int, int, bool]] = []  # (inode, bytes when synced, on the loop?)
    loop_thread = threading.get_ident()

    def seeing(fd: int) -> None:
        info = os.fstat(fd)
        synced.append((info.st_ino, info.st_size, threading.get_ident() == loop_thread))
        real(fd)

    class Watching(RecordingEditor):
        def __init__(self) -> None:
            super().__init__()
            self.synced_by: dict[str, list[tuple[int, int, bool]]] = {}

        def send_event(self, params: dict[str, Any]) -> None:
            event = params["event"]
            key = event["type"] + (f":{event['message']['role']}" if "message" in event else "")
            self.synced_by.setdefault(key, list(synced))
            super().send_event(params)

    editor = Watching()
    host = scripted_host(tmp_path, editor, [{"text": "hi"}])
    await host.start()
    try:
        monkeypatch.setattr(os, "fsync", seeing)
        host.prompt_run("hello")
        run = host.harness.current_run
        assert run is not None
        await run.wait()
        log = host.session.log
        assert log is not None
        assert editor.synced_by["agent_start"] == []
        file, folder = log.path.stat(), log.path.parent.stat()
        header_and_prompt = sum(len(line) for line in log.path.read_bytes().splitlines(True)[:2])
        assert editor.synced_by["message_end:user"] == [
            (file.st_ino, header_and_prompt, False),
            (folder.st_ino, folder.st_size, False),
        ]
    finally:
        await host.close()


async def test_a_compacted_session_opens_with_every_reply_counted_and_old_ones_unread(
    tmp_path: Path,
) -> None:
    """What the session used is summed over every reply in the file, the compacted ones
    too, without decoding those (``crank/session/deferred.py``); the transcript is the
    summary and what it kept."""
    from crank.session.deferred import is_deferred

    editor = RecordingEditor()
    host = scripted_host(tmp_path, editor, [{"text": "resumed"}])
    old = SessionLog.create(host.store.directory, str(host.root))
    ids = []
    for n in range(6):
        ids.append(old.append_message_sync(user_message(f"ask {n}")))
        reply = assistant_message([{"type": "text", "text": f"answer {n}"}])
        reply["usage"] = {**reply["usage"], "input": 100 + n, "output": 10, "cost": 0.5}
        ids.append(old.append_message_sync(reply))
    old.append_sync(
        "compaction", {"summary": "six asks", "firstKeptId": ids[-2], "tokensBefore": 9}
    )
    session_id = old.session_id
    old.close()
    await host.start()
    try:
        await host.open_session(session_id)
        usage = host.state()["usage"]
        assert (usage["input"], usage["output"], usage["cost"]) == (615, 60, 3.0)
        log = host.session.log
        assert log is not None
        held = [e["message"] for e in log.tree.entries if e["type"] == "message"]
        assert [is_deferred(m) for m in held] == [True] * 10 + [False] * 2
        assert [m["content"] for m in host.harness.messages][1:] == [
            "ask 5",
            [{"type": "text", "text": "answer 5"}],
        ]
    finally:
        await host.close()


def _session_to_resume(tmp_path: Path) -> tuple[Path, Settings, Path]:
    """A project folder, its settings, and the file of the one session a host resumes."""
    from crank.session.store import SessionStore

    root = tmp_path / "project"
    root.mkdir()
    settings = Settings(session_dir=str(tmp_path / "s"))
    made = SessionStore(root, settings.session_dir).create()
    made.append_message_sync(user_message("resume me"))
    made.close()
    return root, settings, made.path


async def test_closing_frees_the_session_before_stopping_mcp_servers_and_the_watcher(
    tmp_path: Path,
) -> None:
    """A window reload starts a new server while the old one closes; the new one resumes
    the newest session only if the old one has let go of its lock. So the lock goes
    as soon as the run has settled and been saved, not after the MCP servers (a server
    slow to end takes seconds) and the prompt watcher have stopped."""
    from crank.session.filelock import try_lock

    root, settings, path = _session_to_resume(tmp_path)
    host = WorkspaceHost(
        root.as_uri(), root, RecordingEditor(), settings, env={}, user_dir=tmp_path / "user"
    )
    await host.start()
    assert host.session.log is not None and host.session.log.path == path

    def free() -> bool:
        fd = os.open(path, os.O_RDONLY)
        try:
            return try_lock(fd)
        finally:
            os.close(fd)

    assert not free(), "the open session is held by its writer"
    seen: dict[str, bool] = {}
    mcp_close, watcher_stop = host.mcp.close, host.watcher.stop  # type: ignore[union-attr]

    async def closing_mcp() -> None:
        seen["mcp"] = free()
        await mcp_close()

    async def stopping_watcher() -> None:
        seen["watcher"] = free()
        await watcher_stop()

    host.mcp.close = closing_mcp  # type: ignore[method-assign]
    host.watcher.stop = stopping_watcher  # type: ignore[method-assign,union-attr]
    await host.close()
    assert seen == {"mcp": True, "watcher": True}
    assert free()


def _locked_session(tmp_path: Path) -> tuple[Path, Settings, Path, int]:
    """A project whose newest session another open file holds the writer's lock on."""
    from crank.session.filelock import try_lock

    root, settings, path = _session_to_resume(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    assert try_lock(fd)
    return root, settings, path, fd


async def test_a_session_still_held_by_a_closing_server_is_resumed_once_it_is_let_go(
    tmp_path: Path,
) -> None:
    """A window reload: the last server still holds the newest session when this one
    starts, and lets go of it a moment later; this one waits and resumes it."""
    root, settings, path, fd = _locked_session(tmp_path)
    asyncio.get_running_loop().call_later(0.3, os.close, fd)
    editor = RecordingEditor()
    host = WorkspaceHost(root.as_uri(), root, editor, settings, env={}, user_dir=tmp_path / "u")
    await host.start()
    try:
        assert host.session.log is not None and host.session.log.path == path
        assert [m["content"] for m in host.harness.messages] == ["resume me"]
        assert not [line for line in editor.lines if "not resumed" in line]
    finally:
        await host.close()


async def test_a_session_another_process_keeps_writing_is_not_resumed_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crank.workspace import session_slot

    monkeypatch.setattr(session_slot, "LOCKED_WAIT_S", 0.4)
    root, settings, path, fd = _locked_session(tmp_path)
    editor = RecordingEditor()
    host = WorkspaceHost(root.as_uri(), root, editor, settings, env={}, user_dir=tmp_path / "u")
    try:
        await host.start()
        assert host.session.log is None, "a new session, nothing written yet"
        [line] = [line for line in editor.lines if "not resumed" in line]
        assert str(path) in line and "being written by another process" in line
    finally:
        os.close(fd)
        await host.close()
