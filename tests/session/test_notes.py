"""The notes file beside the session: durable, atomic, validated, refused by name when
damaged (never overwritten), listed by key at the end of every request after the cache
marks, and untouched by clearing, trimming and compaction."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from crank.agent.messages import user_message
from crank.agent.model import ModelRequest
from crank.agent.scripted import Reply
from crank.session.housekeeping import ContextSettings
from crank.session.notes import (
    INDEX,
    MAX_NOTES,
    MAX_TEXT,
    NoteError,
    Notes,
    notes_path,
    with_notes_index,
)
from crank.session.policies import PolicyName

from .context_helpers import reader, rig, write_files


def test_the_file_sits_beside_the_session(tmp_path: Path) -> None:
    assert notes_path(tmp_path / "20260101-abc.jsonl") == tmp_path / "20260101-abc.notes.json"


def test_save_read_replace_and_survive_a_new_reader(tmp_path: Path) -> None:
    path = tmp_path / "s" / "x.notes.json"
    notes = Notes(path)
    assert notes.keys() == [] and notes.all() == [] and notes.read("a") is None
    assert notes.save("build", "make -j4") is True
    assert notes.save("api.base-url", "http://127.0.0.1:9") is True
    assert notes.save("build", "make -j8") is False  # replaced
    again = Notes(path)  # another process, after a restart
    assert again.keys() == ["api.base-url", "build"]
    assert again.read("build") == "make -j8"
    assert again.all() == [("api.base-url", "http://127.0.0.1:9"), ("build", "make -j8")]
    assert [p.name for p in path.parent.iterdir()] == [path.name], "no temp file is left"
    notes.save("third", "3")
    assert again.keys() == ["api.base-url", "build", "third"], "a change on disk is seen"


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("", "non-empty"),
        ("has space", "not allowed"),
        ("../etc", "not allowed"),
        ("-leading", "not allowed"),
        ("k" * 65, "at most 64"),
    ],
)
def test_bad_keys_are_refused_saying_why(tmp_path: Path, key: str, said: str) -> None:
    with pytest.raises(NoteError, match=said):
        Notes(tmp_path / "n.notes.json").save(key, "text")
    assert not (tmp_path / "n.notes.json").exists()


def test_bad_texts_and_too_many_notes_are_refused(tmp_path: Path) -> None:
    notes = Notes(tmp_path / "n.notes.json")
    with pytest.raises(NoteError, match="non-empty"):
        notes.save("a", "  ")
    with pytest.raises(NoteError, match=f"at most {MAX_TEXT}"):
        notes.save("a", "x" * (MAX_TEXT + 1))
    for index in range(MAX_NOTES):
        notes.save(f"k{index}", "v")
    with pytest.raises(NoteError, match="replace one"):
        notes.save("one-more", "v")
    notes.save("k0", "replacing is still fine")


def test_a_damaged_file_is_refused_by_name_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "n.notes.json"
    path.write_text("{not json")
    notes = Notes(path)
    with pytest.raises(NoteError, match=r"cannot be read.*left as it is"):
        notes.keys()
    with pytest.raises(NoteError, match="cannot be read"):
        notes.save("a", "b")
    assert path.read_text() == "{not json"


def test_a_crash_mid_save_leaves_the_old_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "n.notes.json"
    notes = Notes(path)
    notes.save("a", "old")

    def crash(src: object, dst: object) -> None:
        raise OSError("power cut")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        notes.save("a", "new")
    monkeypatch.undo()
    assert Notes(path).read("a") == "old"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_the_index_goes_last_and_outside_the_cache_marks() -> None:
    messages = [user_message("go", timestamp=5)]
    request = ModelRequest(system="S", messages=list(messages), tools=[], cache_marks=(0,))
    listed = with_notes_index(request, ["build", "paths"])
    assert listed.system == "S" and listed.tools == [] and listed.cache_marks == (0,)
    assert listed.messages[:-1] == messages
    note = listed.messages[-1]
    assert note["role"] == "user" and "build, paths" in note["content"]
    assert note["timestamp"] == 5, "same request, same keys: same bytes"
    assert with_notes_index(request, []) is request
    unmarked = ModelRequest(system="S", messages=list(messages))
    assert with_notes_index(unmarked, ["a"]).cache_marks == (0,), "never the vendor's default"


def past_the_index(request: ModelRequest) -> Reply:
    """``reader``, on the request without its trailing key list."""
    listed = request.messages[-1]
    assert listed["role"] == "user" and listed["content"].startswith(INDEX.split("{")[0])
    return reader(dataclasses.replace(request, messages=request.messages[:-1]))


@pytest.mark.parametrize("policy", ["compact", "trim", "default"])
async def test_the_keeper_lists_keys_and_no_policy_touches_the_notes(
    tmp_path: Path, policy: PolicyName
) -> None:
    """A session that compacts, trims, or clears and compacts: the notes file is byte for byte what
    was saved, every request ends with the key list, none has the text."""
    settings = ContextSettings(policy=policy, keep_recent_tokens=300, clear_at_tokens=600)
    made = rig(tmp_path, window=2_500, settings=settings, replies=[past_the_index] * 500)
    names = write_files(tmp_path / "project", 24, size=600)
    notes = Notes(notes_path(made.log.path))
    notes.save("ports", "the service listens on 8080; the admin port is 9090")
    saved = notes.path.read_bytes()
    for index, name in enumerate(names):
        goal = "GOAL: port the service to 8080. " if index == 0 else ""
        assert await made.harness.prompt(f"{goal}read {name}").wait() == "stop"
    sent = json.dumps([r.messages for r in made.agent.requests])
    if policy == "compact":
        assert len(made.compactions()) >= 2
    elif policy == "trim":
        assert "earlier turns of this conversation" in sent
    else:
        assert "[Result cleared" in sent
    assert notes.path.read_bytes() == saved
    for request in made.agent.requests:
        assert "ports" in request.messages[-1]["content"]
        # The note's own words: a bare "9090" also turns up in millisecond timestamps
        # (1796198509090), which failed this test about one run in forty.
        assert "the admin port is 9090" not in json.dumps(request.messages)
        assert len(request.messages) - 1 not in request.cache_marks
    made.log.close()
