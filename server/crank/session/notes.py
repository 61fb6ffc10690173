"""Notes the agent keeps: a small key -> text store beside the session file.

Why a file beside the session and not entries in it: the session file is a tree read
along the active branch, and every reader of it (replay, the compaction cut, the view,
recall) would have to step over note entries that land between a call and its result;
and a note must stay when the user branches back past the turn that saved it. A note
is the agent's scratch pad for the whole session, not part of the conversation. What
the agent *said* when it saved one (the ``note_save`` call, with its text) is still in
the log, so an overwritten note is never lost.

Contract:
- ``notes_path(session_file)`` is ``<sessionId>.notes.json`` next to
  ``<sessionId>.jsonl`` (the store lists only ``*.jsonl``; the file tools' protected
  locations cover the folder).
- The file is JSON ``{"version": 1, "notes": {key: {"text", "savedAt"}}}``, replaced
  atomically (a temp file in the same folder, fsynced, renamed, the folder fsynced):
  a reader sees the old notes or the new ones, and a saved note survives a crash.
- Keys: 1-64 characters, letters, digits and ``._-``, starting with a letter or digit.
  Text: 1-8,000 characters. At most 100 notes. Each refusal says what was wrong.
- A file that cannot be read is refused by name (``NoteError``) and never overwritten.
- No context policy and no compaction reads or changes the file; the request lists
  the keys only (``notes_index``), at the end of the request (docs/context.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crank.agent.messages import Message, now_ms
from crank.agent.model import ModelRequest

from .durable import fsync_dir
from .policies import cache_marks

SUFFIX = ".notes.json"
VERSION = 1
MAX_KEY = 64
MAX_TEXT = 8_000
MAX_NOTES = 100
KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
INDEX = (
    "[Notes you saved with note_save, by key (read them with note_read; they are kept "
    "whatever happens to the conversation): {keys}]"
)


class NoteError(Exception):
    """A refused note operation, said so the model (or the user) can act on it."""


def notes_path(session_file: Path) -> Path:
    name = session_file.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return session_file.with_name(stem + SUFFIX)


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise NoteError("a note key must be a non-empty string")
    if len(key) > MAX_KEY:
        raise NoteError(
            f"note key {key[:MAX_KEY]!r}... is {len(key)} characters; at most {MAX_KEY}"
        )
    if not KEY.fullmatch(key):
        raise NoteError(
            f"note key {key!r} is not allowed: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (e.g. 'build-command')"
        )
    return key


def check_text(text: object) -> str:
    if not isinstance(text, str) or not text.strip():
        raise NoteError("a note's text must be a non-empty string")
    if len(text) > MAX_TEXT:
        raise NoteError(
            f"the note is {len(text)} characters; at most {MAX_TEXT}: keep the essentials "
            "(where to look, the exact value), not a copy of the file"
        )
    return text


class Notes:
    """The notes of one session. ``where`` is the notes file, or a function giving it
    (the workspace's active session changes; its tools do not). The file is read again
    only when it changed on disk, so asking for the keys before every request is cheap."""

    def __init__(self, where: Path | Callable[[], Path]) -> None:
        self._where = where
        self._seen: tuple[Path, tuple[int, int, int]] | None = None
        self._notes: dict[str, dict[str, Any]] = {}

    @property
    def path(self) -> Path:
        return self._where() if callable(self._where) else self._where

    def _load(self) -> dict[str, dict[str, Any]]:
        path = self.path
        try:
            stat = path.stat()
        except FileNotFoundError:
            self._seen, self._notes = None, {}
            return self._notes
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._seen == (path, stamp):
            return self._notes
        try:
            data = json.loads(path.read_text("utf-8"))
            notes = data["notes"]
            if data.get("version") != VERSION or not isinstance(notes, dict):
                raise ValueError(f"not a version {VERSION} notes file")
            for key, note in notes.items():
                check_key(key)
                if not isinstance(note, dict) or not isinstance(note.get("text"), str):
                    raise ValueError(f"note {key!r} has no text")
        except (OSError, ValueError, KeyError, TypeError, NoteError) as exc:
            raise NoteError(
                f"the notes file {path} cannot be read ({exc}); it was left as it is"
            ) from exc
        self._seen, self._notes = (path, stamp), notes
        return notes

    def keys(self) -> list[str]:
        """Every key, sorted (the order is the same whenever the notes are)."""
        return sorted(self._load())

    def read(self, key: str) -> str | None:
        note = self._load().get(check_key(key))
        return None if note is None else str(note["text"])

    def all(self) -> list[tuple[str, str]]:
        notes = self._load()
        return [(key, str(notes[key]["text"])) for key in sorted(notes)]

    def save(self, key: str, text: str) -> bool:
        """Save (or replace) a note; True if the key is new."""
        check_key(key)
        check_text(text)
        notes = dict(self._load())
        new = key not in notes
        if new and len(notes) >= MAX_NOTES:
            raise NoteError(f"there are already {MAX_NOTES} notes; replace one (same key) instead")
        notes[key] = {"text": text, "savedAt": now_ms()}
        body = json.dumps({"version": VERSION, "notes": notes}, ensure_ascii=False, indent=1)
        _replace(self.path, body)
        self._seen = None
        return new


def _replace(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    fsync_dir(path.parent)


def notes_index(keys: list[str]) -> str | None:
    """The line that lists the keys (never a note's text), or None with no notes."""
    return INDEX.format(keys=", ".join(keys)) if keys else None


def with_notes_index(request: ModelRequest, keys: list[str]) -> ModelRequest:
    """``request`` with the key list as a user-side note after its last message.

    It goes last, after the cache marks (which index the messages before it), so a
    save changes only the uncached end of the next request, never the system prompt or
    the tool definitions at the front that providers cache. Its timestamp is the last
    message's, so the same request and keys give the same bytes."""
    text = notes_index(keys)
    if text is None:
        return request
    last = request.messages[-1]["timestamp"] if request.messages else 0
    note: Message = {"role": "user", "content": text, "timestamp": last}
    # With no marks a vendor marks the last messages, which would be the note.
    marks = request.cache_marks or cache_marks(request.messages)
    return dataclasses.replace(request, messages=[*request.messages, note], cache_marks=marks)


def listed_keys(notes: Notes | None) -> list[str]:
    """The keys to list in a request: none when there is no notes file, or when it
    cannot be read (then the note tools say why, the request still goes out)."""
    if notes is None:
        return []
    try:
        return notes.keys()
    except NoteError:
        return []
