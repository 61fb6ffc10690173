"""crank.session: the append-only session log, its replay, branching and listing.

One JSONL file per session (format: docs/protocol.md "Session files"). ``SessionLog``
is the one locked writer and a Harness listener; ``replay`` is the only way a
transcript is made; ``SessionStore`` finds a workspace's sessions; ``repair`` fixes the
one damage a crash can leave, a torn last line.
"""

from __future__ import annotations

from pathlib import Path

from crank.agent.messages import Message

from .errors import (
    AmbiguousSession,
    NoSuchSession,
    SessionBusy,
    SessionClosed,
    SessionError,
    SessionLocked,
    SessionUnreadable,
    SummaryFailed,
    TornSession,
    UnknownEntry,
)
from .housekeeping import ContextSettings, Housekeeper
from .index import SessionInfo, list_sessions
from .log import SessionLog, read_tree
from .policies import POLICY_NAMES, PolicyName
from .repair import RepairResult, repair
from .replay import BRANCH_SUMMARY_PREFIX, COMPACTION_PREFIX, transcript
from .store import SessionStore, default_root, workspace_key
from .tree import SessionTree


def resume(path: Path | str) -> list[Message]:
    """The transcript a Harness starts from: the active branch of the file, replayed.

    Reading needs no lock, so this works on a session another process is writing.
    Dangling tool calls left by a crash are kept as they are; the view repairs them.
    """
    tree = read_tree(path)
    return transcript(tree.path, tree.path_to(tree.tip))


__all__ = [
    "BRANCH_SUMMARY_PREFIX",
    "COMPACTION_PREFIX",
    "POLICY_NAMES",
    "AmbiguousSession",
    "ContextSettings",
    "Housekeeper",
    "NoSuchSession",
    "PolicyName",
    "RepairResult",
    "SessionBusy",
    "SessionClosed",
    "SessionError",
    "SessionInfo",
    "SessionLocked",
    "SessionLog",
    "SessionStore",
    "SessionTree",
    "SessionUnreadable",
    "SummaryFailed",
    "TornSession",
    "UnknownEntry",
    "default_root",
    "list_sessions",
    "read_tree",
    "repair",
    "resume",
    "transcript",
    "workspace_key",
]
