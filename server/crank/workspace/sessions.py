"""The session tree as ``crank/tree`` sends it: every entry in file order, with a
role and a one-line preview for messages and the newest label of each entry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crank.session import SessionLog
from crank.session.deferred import message_of

PREVIEW_CHARS = 80


def preview_of(message: Mapping[str, Any]) -> str:
    content = message.get("typed") or message.get("content")  # a /command as typed
    if isinstance(content, str):
        text = content
    else:
        parts: list[str] = []
        for block in content or []:
            if block.get("type") == "text":
                parts.append(block.get("text", ""))
            elif block.get("type") == "toolCall":
                parts.append(f"[{block.get('name')}]")
        text = " ".join(parts)
    return _one_line(text)


def _one_line(text: str) -> str:
    """``text`` with its whitespace collapsed, cut to ``PREVIEW_CHARS`` with "…". Only
    a head long enough is collapsed (``crank/tree`` makes one for every message, and a
    tool result can be 20,000 characters): the collapsed head is the whole's collapsed
    text up to its last, perhaps cut, word, so once it is longer than the preview the
    preview is the same."""
    size = PREVIEW_CHARS * 4
    while True:
        line = " ".join(text[:size].split())
        if size >= len(text) or len(line) > PREVIEW_CHARS:
            break
        size *= 4
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


def tree_json(log: SessionLog) -> dict[str, Any]:
    """``crank/tree`` for ``log``, every row made now (``TreeRows`` keeps them)."""
    return TreeRows().json(log)


class TreeRows:
    """``crank/tree``'s rows for one session, kept between calls. The file only grows
    (a branch, a label, a compaction is an entry appended), so a call makes rows for the
    entries appended since the last one, and a label entry relabels the row it names.
    VS Code asks for the tree at the end of every run to list the branches: a session
    of 50,000 entries made 50,000 previews each time, 0.2-0.5 s on the event loop."""

    def __init__(self) -> None:
        self._of: object = None
        """The tree the rows are of (another session's, or a tree read again, starts over)."""
        self._rows: list[dict[str, Any]] = []
        self._by_id: dict[str, dict[str, Any]] = {}
        self._labels: dict[str, str | None] = {}

    def json(self, log: SessionLog) -> dict[str, Any]:
        entries = log.tree.entries  # any history left unread is read first
        rows = self._rows
        if (
            log.tree is not self._of
            or len(entries) < len(rows)
            or (rows and entries[0]["id"] != rows[0]["id"])
        ):
            self._of, self._rows, self._by_id, self._labels = log.tree, [], {}, {}
            rows = self._rows
        for entry in entries[len(rows) :]:
            record: Any = entry
            row: dict[str, Any] = {
                "id": record["id"],
                "parentId": record["parentId"],
                "type": record["type"],
            }
            if record["type"] == "message":
                message = message_of(log.path, entry)
                row["role"] = message["role"]
                row["preview"] = preview_of(message)
            rows.append(row)
            self._by_id[row["id"]] = row
            if record["type"] == "label":
                self._labels[record["targetId"]] = record.get("label")
                target = self._by_id.get(record["targetId"])
                if target is not None:
                    _labelled(target, record.get("label"))
            if row["id"] in self._labels:  # a label written before its entry
                _labelled(row, self._labels[row["id"]])
        return {"tip": log.tip, "entries": list(rows)}


def _labelled(row: dict[str, Any], label: str | None) -> None:
    if label:
        row["label"] = label
    else:
        row.pop("label", None)
