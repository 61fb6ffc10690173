"""Finding and resuming sessions from an ACP client: ``session/list``, ``session/load``
of a session another ``crank acp`` holds, and replayed messages with boundaries."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from crank.acp.sessions import PAGE_SIZE, page
from tests.support.model_server import ModelServer

from .helpers import RecordingClient, crank_acp


def folder_in(tmp_path: Path, name: str = "project") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return folder


async def test_session_list_gives_a_folders_sessions_newest_first_with_titles(
    tmp_path: Path,
) -> None:
    folder, other = folder_in(tmp_path), folder_in(tmp_path, "other")
    script = {"replies": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}
    client = RecordingClient()
    answers: list[object] = []
    async with (
        ModelServer(script) as model,
        crank_acp(model, tmp_path, client, answers=answers) as conn,
    ):
        made = []
        for cwd, text in [
            (folder, "first question"),
            (other, "elsewhere"),
            (folder, "second question"),
        ]:
            session = await conn.new_session(cwd=str(cwd))
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
            made.append(session.session_id)
        listed = await conn.list_sessions(cwd=str(folder))
        empty = await conn.list_sessions(cwd=str(folder_in(tmp_path, "empty")))
        everywhere = await conn.list_sessions()
    capabilities = answers[0].agent_capabilities  # type: ignore[attr-defined]
    assert capabilities.session_capabilities.list is not None, "advertised as the schema says"
    assert [s.session_id for s in listed.sessions] == [made[2], made[0]], "newest first"
    assert [s.title for s in listed.sessions] == ["second question", "first question"]
    assert {s.cwd for s in listed.sessions} == {str(folder.resolve())}
    assert all(s.updated_at for s in listed.sessions)
    assert listed.next_cursor is None and empty.sessions == []
    assert [(s.session_id, s.cwd) for s in everywhere.sessions] == [
        (made[2], str(folder.resolve())),
        (made[1], str(other.resolve())),
        (made[0], str(folder.resolve())),
    ], "without a cwd: every folder's sessions, newest first"


def test_pages_follow_the_cursor_to_the_end() -> None:
    entries = [{"sessionId": str(n)} for n in range(PAGE_SIZE * 2 + 3)]
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        shown, cursor = page(entries, cursor)
        seen.extend(entry["sessionId"] for entry in shown)
        if cursor is None:
            break
    assert seen == [entry["sessionId"] for entry in entries]
    with pytest.raises(ValueError, match="cursor"):
        page(entries, "not-a-cursor")


async def test_loading_a_session_open_in_another_crank_acp_is_a_clear_error(
    tmp_path: Path,
) -> None:
    folder = folder_in(tmp_path)
    script = {"replies": [{"text": "hello"}]}
    async with ModelServer(script) as model:
        holder, other = RecordingClient(), RecordingClient()
        async with crank_acp(model, tmp_path, holder) as first:
            session = await first.new_session(cwd=str(folder))
            await first.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
            async with crank_acp(model, tmp_path, other) as second:
                with pytest.raises(acp.RequestError) as refused:
                    await second.load_session(cwd=str(folder), session_id=session.session_id)
                message = str(refused.value) + str(getattr(refused.value, "data", ""))
                assert "open in another Crank process" in message
                assert other.updates == [], "nothing replayed, no silent new session"
                listed = await second.list_sessions(cwd=str(folder))
                assert [s.session_id for s in listed.sessions] == [session.session_id]


async def test_replayed_messages_have_boundaries(tmp_path: Path) -> None:
    """A prompt whose turn failed, then the next: two user messages, told apart by
    ``messageId`` (the client would merge two runs of chunks otherwise)."""
    folder = folder_in(tmp_path)
    script = {"replies": [{"status": 400}, {"text": "the answer"}]}
    async with ModelServer(script) as model:
        live = RecordingClient()
        async with crank_acp(model, tmp_path, live) as conn:
            session = await conn.new_session(cwd=str(folder))
            with pytest.raises(acp.RequestError):
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("first")])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("second")])
        ids = {u.message_id for u in live.of("agent_message_chunk")}
        assert len(ids) == 1 and None not in ids, "live chunks of one reply share an id"
        loaded = RecordingClient()
        async with crank_acp(model, tmp_path, loaded) as conn:
            await conn.load_session(cwd=str(folder), session_id=session.session_id)
    users = loaded.of("user_message_chunk")
    assert [u.content.text for u in users] == ["first", "second"]
    assert users[0].message_id and users[1].message_id
    assert users[0].message_id != users[1].message_id
    agents = loaded.of("agent_message_chunk")
    assert agents and all(a.message_id not in {u.message_id for u in users} for a in agents)
