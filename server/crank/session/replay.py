"""Replay: the only way a transcript is made, from the path root -> tip.

Message entries become messages. The newest ``compaction`` on the path replaces every
message before its ``firstKeptId`` with one user message that begins "Previous
conversation summary:". A ``branchSummary`` on the path becomes a user message that
begins "Summary of an abandoned branch:", so a new attempt knows what the last one did.
Other entry types carry no message and are stepped over. The result is the record,
holes included: repairing dangling tool calls is the view's job (crank.agent).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from pathlib import Path

from crank.agent.messages import Message, UserMessage

from .deferred import is_deferred, message_of, messages_of
from .entries import Entry
from .errors import SessionUnreadable
from .stored_record import StoredRecord
from .tree import SessionTree

_KIND = operator.itemgetter("type")
_ID = operator.itemgetter("id")
_SECOND = operator.itemgetter(1)

COMPACTION_PREFIX = "Previous conversation summary:"
BRANCH_SUMMARY_PREFIX = "Summary of an abandoned branch:"


def transcript(path: Path, branch: list[Entry], *, only_messages: bool = False) -> list[Message]:
    """The messages a model is shown for ``branch`` (a root-to-entry path).
    ``only_messages``: the caller knows every entry of ``branch`` is a message (its
    file holds no other kind), which spares a pass over the entries."""
    if only_messages or set(map(_KIND, branch)) == {"message"}:  # as it is
        # Resuming 50,000 messages, the rows ``replay_rows`` pairs with their ids cost
        # more than the messages: two passes over the entries instead.
        return messages_of(path, branch)
    rows, _ = replay_rows(path, branch)
    return list(map(_SECOND, rows))


def transcript_at_tip(tree: SessionTree) -> list[Message]:
    """The transcript at ``tree``'s tip (what resuming starts from). A history the open
    left unread (``SessionTree.read``) stays unread when the newest compaction on the
    path and its kept entry follow it, as they do in a file a long run compacted."""
    tip = tree.tip
    if tip is None:
        return []
    recent = summarised_path(tree)
    if recent is not None:
        return transcript(tree.path, recent)
    branch = tree.path_to(tip)
    return transcript(tree.path, branch, only_messages=tree.count("message") == len(tree))


def resumed_at_tip(tree: SessionTree) -> Sequence[Message]:
    """``transcript_at_tip`` as an open hands it to the Harness: when the messages are
    still in the file (an open from the offset index) and the path to the tip has no
    compaction or branch summary (its messages are the transcript as they are), a
    ``StoredRecord`` that decodes each when it is read; the transcript otherwise."""
    tip = tree.tip
    first = next((entry for entry in tree.held if entry["type"] == "message"), None)
    if (
        tip is None
        or tree.unread
        or first is None
        or not is_deferred(first["message"])
        or tree.has("compaction")
        or tree.has("branchSummary")
    ):
        return transcript_at_tip(tree)
    branch = tree.path_to(tip)
    if tree.count("message") != len(tree):
        branch = [entry for entry in branch if entry["type"] == "message"]
    return StoredRecord(tree.path, branch, whole=tree.forked() is False)


def summarised_path(tree: SessionTree) -> list[Entry] | None:
    """While the history is unread: the path to the tip through the entries read, when
    the newest compaction on it and its kept entry are both there (``summarised_within``),
    so nothing shown comes from the history; None otherwise."""
    tip = tree.tip
    recent = tree.recent_path(tip) if tip is not None else None
    return recent if recent is not None and summarised_within(recent) else None


def newest_compaction(entries: list[Entry]) -> int | None:
    """Where the newest ``compaction`` entry is among ``entries``, or None."""
    return _newest(entries, "type", "compaction", len(entries))


def replay_rows(
    path: Path, branch: list[Entry]
) -> tuple[list[tuple[str | None, Message]], str | None]:
    """What ``transcript`` makes of ``branch``, each message with the id of the entry
    that holds it (``None`` for the newest compaction's summary, which no entry holds
    as a message), and that summary's text when there is one."""
    start = 0
    previous: str | None = None
    rows: list[tuple[str | None, Message]] = []
    # Looked for from the tip back: a resumed session can hold 50,000 entries, and what
    # follows its newest compaction is a few hundred; passes over them all (even at C
    # speed) were most of the time of replaying a compacted session.
    position = _newest(branch, "type", "compaction", len(branch))
    if position is not None:
        entry = branch[position]
        kept = entry["firstKeptId"]
        found = _newest(branch, "id", kept, position)  # ids are unique: the only one
        if found is None:
            raise SessionUnreadable(
                path,
                f"entry {entry['id']}",
                f"compaction's firstKeptId {kept} is not an earlier entry on its branch",
            )
        start, previous = found, str(entry["summary"])
        rows.append((None, _as_user(f"{COMPACTION_PREFIX}\n\n{previous}", entry)))
    kinds = list(map(_KIND, branch[start:]))
    if kinds.count("message") == len(kinds):  # only messages
        messages = messages_of(path, branch[start:])
        rows.extend(zip(map(_ID, branch[start:]), messages, strict=True))
        return rows, previous
    for entry in branch[start:]:
        kind = entry["type"]
        if kind == "message":
            rows.append((entry["id"], message_of(path, entry)))
        elif kind == "branchSummary":
            summary = _as_user(f"{BRANCH_SUMMARY_PREFIX}\n\n{entry['summary']}", entry)
            rows.append((entry["id"], summary))
    return rows, previous


def summarised_within(branch: list[Entry]) -> bool:
    """Whether the newest compaction on ``branch`` and its kept entry are both in it:
    ``transcript`` of ``branch`` is then that of any longer path that ends with it, as
    nothing before the kept entry is shown."""
    position = newest_compaction(branch)
    return position is not None and kept_before(branch, position) is not None


def kept_before(branch: list[Entry], position: int) -> int | None:
    """Where the kept entry (``firstKeptId``) of the compaction at ``position`` is on
    ``branch``, before it; None when it is not there."""
    kept = branch[position].get("firstKeptId")
    return _newest(branch, "id", kept, position) if isinstance(kept, str) else None


def _newest(branch: list[Entry], key: str, value: str, before: int) -> int | None:
    """Where the newest entry whose ``key`` is ``value`` is among ``branch[:before]``,
    or None."""
    for position in range(before - 1, -1, -1):
        if branch[position].get(key) == value:
            return position
    return None


def _as_user(text: str, entry: Entry) -> UserMessage:
    timestamp = entry.get("timestamp")
    return {
        "role": "user",
        "content": text,
        "timestamp": timestamp if isinstance(timestamp, int) else 0,
    }
