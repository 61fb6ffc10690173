"""Listing a workspace's sessions without parsing the files.

For each file the listing needs the header (id, created), the first user message, the
newest ``sessionInfo`` name, a message count and the modification time. None of that
needs the messages parsed: the writer spells every entry line with ``type`` first, so
``\\n{"type":"message",`` starts exactly the message lines (a newline inside a JSON
string is always escaped), and ``bytes.count`` finds them at memory speed. Only the
header line, the first user message's line and the newest ``sessionInfo`` line are
parsed.

A small cache, ``.index.json`` in the folder, remembers what was learned per file with
its inode, size and mtime. An unchanged file costs one ``stat``; a file that grew (they
only ever grow) is scanned from where the last scan stopped. The cache is only a cache:
lose it, or let it go stale, and the next listing rebuilds it from the files.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

from . import jsonio
from .entries import MESSAGE_LINE_PREFIX, SESSION_INFO_LINE_PREFIX

INDEX_NAME = ".index.json"
INDEX_VERSION = 2
MAX_HEADER_BYTES = 64 * 1024
TITLE_CHARS = 80
FIRST_MESSAGE_CHARS = 200
_USER_MARK = b'"message":{"role":"user",'
_ASSISTANT_MARK = b'"message":{"role":"assistant",'
_MESSAGE_AT = b"\n" + MESSAGE_LINE_PREFIX

SessionEnd = Literal["error", "aborted"]
"""How a session's newest reply ended, when that is worth a mark in a listing."""
_UNHAPPY_ENDS: tuple[SessionEnd, ...] = ("error", "aborted")


class SessionInfo(TypedDict):
    """One line of the session list (``crank/sessions``, ``crank sessions list``): what
    a picker shows, read without parsing the whole file. Not a summary of the content."""

    sessionId: str
    title: str
    created: str
    modified: str
    messageCount: int
    firstMessage: str
    torn: NotRequired[bool]
    """The last line is incomplete; ``crank sessions repair`` the file before writing."""
    error: NotRequired[str]
    """The file cannot be listed (bad header); it is shown, never silently left out."""
    ended: NotRequired[SessionEnd]
    """The newest message is a reply that failed or was aborted."""


def list_sessions(directory: Path) -> list[SessionInfo]:
    """Every ``*.jsonl`` in ``directory``, newest first."""
    if not directory.is_dir():
        return []
    cache = _load_cache(directory)
    fresh: dict[str, dict[str, Any]] = {}
    summaries: list[tuple[int, SessionInfo]] = []
    for path in directory.glob("*.jsonl"):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        state = _scan(path, stat, cache.get(path.name))
        fresh[path.name] = state
        summaries.append((stat.st_mtime_ns, _summary(path, stat, state)))
    if fresh != cache:
        _save_cache(directory, fresh)
    summaries.sort(key=lambda pair: pair[0], reverse=True)
    return [summary for _, summary in summaries]


def _summary(path: Path, stat: os.stat_result, state: dict[str, Any]) -> SessionInfo:
    first = state.get("first") or ""
    name = state.get("name")
    title = name if name else first.strip().split("\n", 1)[0][:TITLE_CHARS]
    summary: SessionInfo = {
        "sessionId": state.get("id") or path.name[: -len(".jsonl")],
        "title": title,
        "created": state.get("created") or "",
        "modified": datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(timespec="seconds"),
        "messageCount": int(state.get("count", 0)),
        "firstMessage": first[:FIRST_MESSAGE_CHARS],
    }
    if state.get("scanned", 0) < stat.st_size:
        summary["torn"] = True
    if "error" in state:
        summary["error"] = state["error"]
    if state.get("ended") in _UNHAPPY_ENDS:
        summary["ended"] = state["ended"]
    return summary


def _scan(path: Path, stat: os.stat_result, old: dict[str, Any] | None) -> dict[str, Any]:
    same_file = old is not None and old.get("ino") == stat.st_ino and "error" not in old
    if same_file and old is not None:
        if old.get("size") == stat.st_size and old.get("mtimeNs") == stat.st_mtime_ns:
            return old
        if stat.st_size >= old.get("scanned", 0):
            state = dict(old)
            return _scan_from(path, stat, state, int(old["scanned"]))
    state = {"ino": stat.st_ino, "count": 0, "first": None, "name": None}
    return _scan_from(path, stat, state, 0)


def _scan_from(
    path: Path, stat: os.stat_result, state: dict[str, Any], start: int
) -> dict[str, Any]:
    state.update(size=stat.st_size, mtimeNs=stat.st_mtime_ns)
    if stat.st_size == 0:
        state.update(scanned=0, error="the file is empty (no session header)")
        return state
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        end = data.rfind(b"\n") + 1
        if start == 0:
            header_end = data.find(b"\n", 0, MAX_HEADER_BYTES)
            if header_end < 0:
                state.update(scanned=0, error="no complete header line")
                return state
            header = _parse(data[:header_end])
            if header is None or header.get("type") != "session":
                state.update(scanned=0, error="line 1 is not a session header")
                return state
            state.update(id=str(header.get("id", "")), created=str(header.get("created", "")))
            start = header_end + 1
        state["scanned"] = end
        if end <= start:
            return state
        count, info_at, last_at = _walk_lines(data, start, end)
        state["count"] += count
        if last_at >= 0:
            state["ended"] = _ending_of(data, last_at, end)
        if state.get("first") is None:
            state["first"] = _first_user_text(data, start - 1, end)
        if info_at >= 0:
            info = _parse(_line_at(data, info_at))
            if info is not None and isinstance(info.get("name"), str):
                state["name"] = info["name"]
    return state


def _walk_lines(data: mmap.mmap, start: int, end: int) -> tuple[int, int, int]:
    """Message lines in ``data[start:end]``, where the last ``sessionInfo`` line starts
    and where the last message line starts (-1 if none), in one pass that hops from
    newline to newline. Looking at the
    first bytes of each line is several times faster than searching the whole region
    for each needle (memchr for the newline, a short compare per entry), and no bytes
    are copied out of the mapping but those compares."""
    count, info_at, last_at, at = 0, -1, -1, start
    message_len, info_len = len(MESSAGE_LINE_PREFIX), len(SESSION_INFO_LINE_PREFIX)
    find = data.find
    while at < end:
        if data[at : at + message_len] == MESSAGE_LINE_PREFIX:
            count += 1
            last_at = at
        elif data[at : at + info_len] == SESSION_INFO_LINE_PREFIX:
            info_at = at
        newline = find(b"\n", at, end)
        if newline < 0:
            break
        at = newline + 1
    return count, info_at, last_at


def _ending_of(data: mmap.mmap, at: int, end: int) -> str | None:
    """The stop reason of the message line at ``at`` when it is a failed or aborted
    reply; only such a line is parsed (one per listing of a changed file)."""
    if data.find(_ASSISTANT_MARK, at, min(at + 256, end)) < 0:
        return None
    entry = _parse(_line_at(data, at))
    message = entry.get("message") if entry else None
    stop = message.get("stopReason") if isinstance(message, dict) else None
    return stop if stop in _UNHAPPY_ENDS else None


def _first_user_text(data: mmap.mmap, start: int, end: int) -> str | None:
    at = data.find(_MESSAGE_AT, start, end)
    while at >= 0:
        if data.find(_USER_MARK, at, min(at + 256, end)) >= 0:
            entry = _parse(_line_at(data, at + 1))
            message = entry.get("message") if entry else None
            if isinstance(message, dict) and isinstance(message.get("typed"), str):
                return str(message["typed"])  # a /command: what the user typed
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                return str(message["content"])
        at = data.find(_MESSAGE_AT, at + 1, end)
    return None


def _line_at(data: mmap.mmap, start: int) -> bytes:
    return data[start : data.find(b"\n", start)]


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = jsonio.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _load_cache(directory: Path) -> dict[str, dict[str, Any]]:
    try:
        cache = jsonio.loads((directory / INDEX_NAME).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(cache, dict) or cache.get("version") != INDEX_VERSION:
        return {}
    files = cache.get("files")
    return files if isinstance(files, dict) else {}


def _save_cache(directory: Path, files: dict[str, dict[str, Any]]) -> None:
    """Best effort, atomic: a failed save only means the next listing scans again.

    The cache holds each session's first prompt, so it is 0o600 like the sessions; the
    temporary name is unique, so two listings at once (threads of one process) never
    write into the same file."""
    target = directory / INDEX_NAME
    temporary = directory / f"{INDEX_NAME}.{secrets.token_hex(6)}.tmp"
    data = jsonio.dumps({"version": INDEX_VERSION, "files": files})
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
