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

    from .errors import (  # noqa: F401  (re-exported: crank.lazy)
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
    from .housekeeping import Housekeeper  # noqa: F401  (re-exported: crank.lazy)
    from .index import (  # noqa: F401  (re-exported: crank.lazy)
        SessionInfo,
        list_sessions,
    )
    from .log import (  # noqa: F401  (re-exported: crank.lazy)
        SessionLog,
        read_tree,
    )
    from .policies import (  # noqa: F401  (re-exported: crank.lazy)
        POLICY_NAMES,
        PolicyName,
    )
    from .repair import RepairResult  # noqa: F401
    from .replay import (  # noqa: F401  (re-exported: crank.lazy)
        BRANCH_SUMMARY_PREFIX,
        COMPACTION_PREFIX,
        transcript,
    )
    from .store import (  # noqa: F401  (re-exported: crank.lazy)
        SessionStore,
        default_root,
        workspace_key,
    )
    from .tree import SessionTree  # noqa: F401
    from .window import ContextSettings  # noqa: F401  (re-exported: crank.lazy)


__getattr__, __dir__, __all__ = exports(__name__, __file__, "resume")


def resume(path: Path | str) -> list[Message]:
    """The transcript a Harness starts from: the active branch of the file, replayed.

    Reading needs no lock, so this works on a session another process is writing.
    Dangling tool calls left by a crash are kept as they are; the view repairs them.
    """
    from .log import read_tree
    from .replay import transcript_at_tip

    return transcript_at_tip(read_tree(path))
