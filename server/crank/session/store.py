"""Where sessions live: one folder per workspace under the per-user data directory.

The default root is ``platformdirs.user_data_dir("crank")/sessions``; a configured
``sessionDir`` replaces it. Inside it each workspace gets a folder whose name is the
workspace path made readable (``home-ana-src-shop``) plus a short hash of the full path,
so two paths that read alike never share a folder. Nothing is written into the user's
project. Session files are ``<sessionId>.jsonl``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import platformdirs

from .errors import AmbiguousSession, NoSuchSession
from .index import SessionInfo, list_sessions
from .log import SessionLog

SUFFIX = ".jsonl"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def default_root() -> Path:
    return Path(platformdirs.user_data_dir("crank", appauthor=False)) / "sessions"


def workspace_key(workspace: Path | str) -> str:
    full = str(Path(workspace).resolve())
    readable = _UNSAFE.sub("-", full).strip("-.")[-60:] or "root"
    digest = hashlib.sha256(full.encode("utf-8", "surrogateescape")).hexdigest()[:10]
    return f"{readable}-{digest}"


class SessionStore:
    """The sessions of one workspace folder."""

    def __init__(self, workspace: Path | str, session_dir: Path | str | None = None) -> None:
        self.workspace = Path(workspace).resolve()
        root = Path(session_dir).expanduser() if session_dir else default_root()
        self.directory = root / workspace_key(self.workspace)

    def create(self) -> SessionLog:
        return SessionLog.create(self.directory, str(self.workspace))

    def path_of(self, session_id: str) -> Path:
        """The file of ``session_id``; a unique prefix or suffix of an id is accepted.

        A fragment that fits more than one session is refused with the candidates named
        (``AmbiguousSession``), never resolved to the first of them."""
        if "/" in session_id or "\\" in session_id or not session_id:
            raise NoSuchSession(session_id, self.directory)
        exact = self.directory / f"{session_id}{SUFFIX}"
        if exact.is_file():
            return exact
        pattern = glob_escape(session_id)
        matches = sorted(
            set(self.directory.glob(f"{pattern}*{SUFFIX}"))
            | set(self.directory.glob(f"*{pattern}{SUFFIX}"))
        )
        if len(matches) == 1:
            return matches[0]
        if matches:
            ids = [match.name[: -len(SUFFIX)] for match in matches]
            raise AmbiguousSession(session_id, ids, self.directory)
        raise NoSuchSession(session_id, self.directory)

    def open(self, session_id: str) -> SessionLog:
        return SessionLog.open(self.path_of(session_id))

    def list(self) -> list[SessionInfo]:
        """Newest first; cheap even for hundreds of large files (see ``index.py``)."""
        return list_sessions(self.directory)

    def newest(self) -> Path | None:
        """The most recently modified readable session, for ``crank run --continue``."""
        for summary in self.list():
            if "error" not in summary:
                return self.directory / f"{summary['sessionId']}{SUFFIX}"
        return None


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)
