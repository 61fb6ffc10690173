"""The stored sessions of a folder, or of every folder, without a host open on them.

A frontend that lists sessions before it opens one (ACP's ``session/list``: a client
offers "resume" for a folder it has no session in yet, or a history of everything)
reads the same index as ``crank/sessions`` does, from the settings' ``sessionDir``.
Listing takes no lock and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio.to_thread

from crank.session import SessionInfo, SessionStore, default_root, list_sessions

from .settings import Settings

HEADER_BYTES = 64 * 1024
"""How much of a session file's first line is read to learn its folder."""


async def folder_sessions(root: Path, settings: Settings) -> list[SessionInfo]:
    """The sessions of ``root``, newest first (``SessionStore.list``)."""
    store = SessionStore(root, settings.session_dir)
    return await anyio.to_thread.run_sync(store.list)


async def every_session(settings: Settings) -> list[tuple[Path, SessionInfo]]:
    """Every folder's sessions with the folder they belong to, newest first. A folder
    is named by the header of one of its session files; a session folder whose files
    name none (all unreadable) is left out, as it cannot be loaded by folder either."""
    return await anyio.to_thread.run_sync(_every_session, settings)


def _every_session(settings: Settings) -> list[tuple[Path, SessionInfo]]:
    base = Path(settings.session_dir).expanduser() if settings.session_dir else default_root()
    found: list[tuple[int, Path, SessionInfo]] = []
    for directory in sorted(base.iterdir()) if base.is_dir() else []:
        listed = list_sessions(directory) if directory.is_dir() else []
        cwd = next((c for c in map(_cwd_of, directory.glob("*.jsonl")) if c is not None), None)
        if cwd is not None:
            found.extend((_changed(directory, info), cwd, info) for info in listed)
    found.sort(key=lambda entry: entry[0], reverse=True)
    return [(cwd, info) for _, cwd, info in found]


def _changed(directory: Path, info: SessionInfo) -> int:
    """When the session's file last changed, in nanoseconds (``modified`` is to the
    second, too coarse to order sessions of one minute)."""
    try:
        return (directory / f"{info['sessionId']}.jsonl").stat().st_mtime_ns
    except OSError:
        return 0


def _cwd_of(path: Path) -> Path | None:
    try:
        with path.open("rb") as file:
            header = json.loads(file.readline(HEADER_BYTES))
    except (OSError, ValueError):
        return None
    cwd = header.get("cwd") if isinstance(header, dict) else None
    return Path(cwd) if isinstance(cwd, str) and cwd else None
