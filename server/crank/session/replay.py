"""Replay: the only way a transcript is made, from the path root -> tip.

Message entries become messages. The newest ``compaction`` on the path replaces every
message before its ``firstKeptId`` with one user message that begins "Previous
conversation summary:". A ``branchSummary`` on the path becomes a user message that
begins "Summary of an abandoned branch:", so a new attempt knows what the last one did.
Other entry types carry no message and are stepped over. The result is the record,
holes included: repairing dangling tool calls is the view's job (crank.agent).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from crank.agent.messages import Message, UserMessage

from .entries import Entry
from .errors import SessionUnreadable

COMPACTION_PREFIX = "Previous conversation summary:"
BRANCH_SUMMARY_PREFIX = "Summary of an abandoned branch:"


def transcript(path: Path, branch: list[Entry]) -> list[Message]:
    """The messages a model is shown for ``branch`` (a root-to-entry path)."""
    rows, _ = replay_rows(path, branch)
    return [message for _, message in rows]


def replay_rows(
    path: Path, branch: list[Entry]
) -> tuple[list[tuple[str | None, Message]], str | None]:
    """What ``transcript`` makes of ``branch``, each message with the id of the entry
    that holds it (``None`` for the newest compaction's summary, which no entry holds
    as a message), and that summary's text when there is one."""
    start = 0
    previous: str | None = None
    rows: list[tuple[str | None, Message]] = []
    for position in range(len(branch) - 1, -1, -1):
        entry = branch[position]
        if entry["type"] != "compaction":
            continue
        kept = entry["firstKeptId"]
        start = next((i for i in range(position) if branch[i]["id"] == kept), -1)
        if start < 0:
            raise SessionUnreadable(
                path,
                f"entry {entry['id']}",
                f"compaction's firstKeptId {kept} is not an earlier entry on its branch",
            )
        previous = str(entry["summary"])
        rows.append((None, _as_user(f"{COMPACTION_PREFIX}\n\n{previous}", entry)))
        break
    for entry in branch[start:]:
        kind = entry["type"]
        if kind == "message":
            rows.append((entry["id"], cast(Message, entry["message"])))
        elif kind == "branchSummary":
            summary = _as_user(f"{BRANCH_SUMMARY_PREFIX}\n\n{entry['summary']}", entry)
            rows.append((entry["id"], summary))
    return rows, previous


def _as_user(text: str, entry: Entry) -> UserMessage:
    timestamp = entry.get("timestamp")
    return {
        "role": "user",
        "content": text,
        "timestamp": timestamp if isinstance(timestamp, int) else 0,
    }
