"""Where sessions live and how they are listed without parsing whole files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crank.session import NoSuchSession, SessionStore, workspace_key
from crank.session.index import INDEX_NAME

from .conftest import ask, say


def test_workspace_keys_are_readable_and_unique(tmp_path: Path) -> None:
    a, b = tmp_path / "my project", tmp_path / "my-project"
    key_a, key_b = workspace_key(a), workspace_key(b)
    assert key_a != key_b
    assert "my-project" in key_a and "/" not in key_a
    assert workspace_key(a) == key_a


def test_default_root_is_the_user_data_dir_never_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    project = tmp_path / "project"
    project.mkdir()
    store = SessionStore(project)
    with store.create() as log:
        log.append_message_sync(ask("hi"))
    assert store.directory.parent == tmp_path / "data" / "crank" / "sessions"
    assert list(project.iterdir()) == []


async def test_listing_titles_counts_and_order(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "ws", tmp_path / "sessions")
    with store.create() as older:
        await older.append_message(ask("Fix the parser\nplease, it crashes"))
        await older.append_message(say("On it."))
        older_id = older.session_id
    with store.create() as newer:
        await newer.append_message(ask("Second"))
        await newer.set_name("Renamed work")
        newer_id = newer.session_id
    os.utime(store.path_of(older_id), (1, 1))

    first, second = store.list()
    assert (first["sessionId"], second["sessionId"]) == (newer_id, older_id)
    assert first["title"] == "Renamed work" and first["messageCount"] == 1
    assert second["title"] == "Fix the parser" and second["messageCount"] == 2
    assert second["firstMessage"] == "Fix the parser\nplease, it crashes"
    assert second["created"] and second["modified"].startswith("1970")
    assert store.newest() == store.path_of(newer_id)


async def test_the_cache_follows_growth_and_can_be_lost(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "ws", tmp_path / "sessions")
    log = store.create()
    await log.append_message(say("no user message yet"))
    assert store.list()[0]["messageCount"] == 1 and store.list()[0]["title"] == ""
    for n in range(5):
        await log.append_message(ask(f"q{n}"))
    await log.set_name("named late")
    log.close()
    (listed,) = store.list()
    assert (listed["messageCount"], listed["firstMessage"], listed["title"]) == (
        6,
        "q0",
        "named late",
    )
    (store.directory / INDEX_NAME).unlink()
    assert store.list() == [listed]


def test_torn_and_unreadable_files_are_listed_not_dropped(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "ws", tmp_path / "sessions")
    with store.create() as log:
        log.append_message_sync(ask("kept"))
        torn_id = log.session_id
    with store.path_of(torn_id).open("ab") as file:
        file.write(b'{"type":"mess')
    (store.directory / "junk.jsonl").write_text("not a header\n")
    listing = {s["sessionId"]: s for s in store.list()}
    assert listing[torn_id].get("torn") is True and listing[torn_id]["messageCount"] == 1
    assert "header" in listing["junk"].get("error", "")
    assert store.newest() == store.path_of(torn_id)


def test_ids_resolve_by_unique_prefix_and_unknown_ones_are_named(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "ws", tmp_path / "sessions")
    with store.create() as log:
        session_id = log.session_id
    assert store.path_of(session_id[:-3]) == log.path
    with pytest.raises(NoSuchSession, match="nope") as error:
        store.open("nope")
    assert error.value.kind == "no_such_session"
    with pytest.raises(NoSuchSession):
        store.path_of("../escape")


async def test_the_listing_cache_is_as_private_as_the_sessions(tmp_path: Path) -> None:
    # The cache holds each session's first prompt; session files are 0o600, so it is too.
    store = SessionStore(tmp_path / "ws", tmp_path / "sessions")
    with store.create() as log:
        await log.append_message(ask("my token is s3cret, fix the login"))
        session_file = log.path
    store.list()
    cache = store.directory / INDEX_NAME
    assert b"s3cret" in cache.read_bytes()
    assert session_file.stat().st_mode & 0o777 == 0o600
    assert cache.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in store.directory.iterdir() if p.name.endswith(".tmp")] == []
