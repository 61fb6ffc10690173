"""What compaction took out of the conversation, read back word for word from the log.

Compaction changes how the log is read, never what it holds (principle 8): every
message before the newest compaction's ``firstKeptId`` is still on disk. ``Recall``
serves the ``recall`` tool (crank.tools.recall) from exactly those entries of the
session's *active branch*, never another session's or an abandoned branch's, and
works after a restart because it reads the log.

Contract:
- ``compacted_entries`` is the message entries of the active branch before the newest
  compaction's first kept entry, oldest first; empty when nothing has been compacted
  on that branch. Their messages are decoded only as they are read.
- ``search`` finds a text (case-insensitive) or a regular expression in them and
  returns each match as a passage: the entry id, who said it, and the matching lines
  with two lines of context, newest entries first, at most ``limit`` passages.
- ``entry`` gives one entry's whole text (lines ``offset``.. of it, 1-based), or None
  for an id that is not among the entries it searches.
- With ``trimmed`` (the ``trim`` policy has left turns out of the request), it
  searches every message of the active branch instead: turns the policy dropped are
  not summarised anywhere, and which of them the next request leaves out moves with
  the boundary, so the whole branch is the honest region (a match the model can still
  see costs a passage, never a wrong answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from crank.agent.messages import Message

from .deferred import message_of
from .entries import Entry
from .log import SessionLog
from .replay import kept_before, newest_compaction, summarised_path

CONTEXT_LINES = 2
SEARCH_LIMIT = 20


@dataclass(frozen=True)
class Passage:
    entry_id: str
    role: str
    first_line: int
    text: str


def message_text(message: Message) -> str:
    """A message as the model saw it, in plain text: a result's content, a reply's
    text, thinking and calls (``name {arguments}``)."""
    if message["role"] == "user":
        content = message["content"]
        return content if isinstance(content, str) else json.dumps(content)
    if message["role"] == "toolResult":
        return f"[{message['toolName']} result]\n{message['content']}"
    parts: list[str] = []
    for block in message["content"]:
        if block["type"] == "text":
            parts.append(block["text"])
        elif block["type"] == "thinking":
            parts.append(block["thinking"])
        elif block["type"] == "toolCall":
            parts.append(f"[call {block['name']} {json.dumps(block['arguments'])}]")
    return "\n".join(parts)


def compacted_entries(log: SessionLog) -> list[Entry]:
    """The message entries of the active branch before the newest compaction's first
    kept entry, oldest first. Their messages may still be deferred (``deferred.py``):
    what only counts them decodes none, and a reader decodes what it reads."""
    if not log.tree.has("compaction"):  # known without a look at 50,000 entries
        return []
    branch = log.tree.path_to(log.tip)
    position = newest_compaction(branch)
    if position is None:
        return []
    end = kept_before(branch, position)
    return [e for e in branch[: position if end is None else end] if e["type"] == "message"]


def branch_entries(log: SessionLog) -> list[Entry]:
    """Every message entry of the active branch, oldest first."""
    return [e for e in log.tree.path_to(log.tip) if e["type"] == "message"]


class Recall:
    """The ``recall`` tool's source for one open session (the workspace builds it).
    ``trimmed`` says, when asked, whether the ``trim`` policy now leaves turns out."""

    def __init__(self, log: SessionLog, trimmed: Callable[[], bool] | None = None) -> None:
        self._log = log
        self._trimmed = trimmed

    def _region(self) -> list[Entry]:
        """The entries searched; each message is decoded only when it is read (the tool
        set asks whether there is any at every open, and a search stops at its limit)."""
        if self._trimmed is not None and self._trimmed():
            return branch_entries(self._log)
        return compacted_entries(self._log)

    def available(self) -> bool:
        """Whether there is anything to search. Asked at every open: while the history
        before the newest compaction is unread (``SessionTree.read``), that compaction
        summarised messages there (Crank writes none that summarises nothing), so it is
        not read to find out."""
        if self._trimmed is not None and self._trimmed():
            return bool(branch_entries(self._log))
        if summarised_path(self._log.tree) is not None:
            return True
        return bool(compacted_entries(self._log))

    def search(self, query: str, *, regex: bool, limit: int = SEARCH_LIMIT) -> list[Passage]:
        pattern = re.compile(query if regex else re.escape(query), re.IGNORECASE)
        found: list[Passage] = []
        for held in reversed(self._region()):
            entry_id, message = held["id"], message_of(self._log.path, held)
            lines = message_text(message).split("\n")
            hits = [index for index, line in enumerate(lines) if pattern.search(line)]
            taken: set[int] = set()
            for hit in hits:
                if hit in taken:
                    continue
                start, end = max(0, hit - CONTEXT_LINES), min(len(lines), hit + CONTEXT_LINES + 1)
                taken.update(range(start, end))
                text = "\n".join(lines[start:end])
                found.append(Passage(entry_id, message["role"], start + 1, text))
                if len(found) >= limit:
                    return found
        return found

    def entry(self, entry_id: str, offset: int = 1) -> str | None:
        for held in self._region():
            if held["id"] == entry_id:
                lines = message_text(message_of(self._log.path, held)).split("\n")
                return "\n".join(lines[max(0, offset - 1) :])
        return None
