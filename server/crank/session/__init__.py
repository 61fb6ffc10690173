"""crank.session: the append-only session log, its replay, branching and listing.

One JSONL file per session (format: docs/protocol.md "Session files"). ``SessionLog``
is the one locked writer and a Harness listener; ``replay`` is the only way a
transcript is made; ``SessionStore`` finds a workspace's sessions;
``repair.repair`` fixes the one damage a crash can leave, a torn last line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
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
    from .repair import RepairResult
    from .replay import BRANCH_SUMMARY_PREFIX, COMPACTION_PREFIX, transcript
    from .store import SessionStore, default_root, workspace_key
    from .tree import SessionTree

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
    "resume",
    "transcript",
    "workspace_key",
]

__getattr__, __dir__ = exports(
    __name__,
    {
        ".errors": [
            "AmbiguousSession",
            "NoSuchSession",
            "SessionBusy",
            "SessionClosed",
            "SessionError",
            "SessionLocked",
            "SessionUnreadable",
            "SummaryFailed",
            "TornSession",
            "UnknownEntry",
        ],
        ".housekeeping": ["ContextSettings", "Housekeeper"],
        ".index": ["SessionInfo", "list_sessions"],
        ".log": ["SessionLog", "read_tree"],
        ".policies": ["POLICY_NAMES", "PolicyName"],
        ".repair": ["RepairResult"],
        ".replay": ["BRANCH_SUMMARY_PREFIX", "COMPACTION_PREFIX", "transcript"],
        ".store": ["SessionStore", "default_root", "workspace_key"],
        ".tree": ["SessionTree"],
    },
)


def resume(path: Path | str) -> list[Message]:
    """The transcript a Harness starts from: the active branch of the file, replayed.

    Reading needs no lock, so this works on a session another process is writing.
    Dangling tool calls left by a crash are kept as they are; the view repairs them.
    """
    from .log import read_tree
    from .replay import transcript

    tree = read_tree(path)
    return transcript(tree.path, tree.path_to(tree.tip))
