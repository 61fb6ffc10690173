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
    labels: dict[str, str | None] = {}
    entries: list[dict[str, Any]] = []
    for entry in log.tree:
        record: Any = entry
        if record["type"] == "label":
            labels[record["targetId"]] = record.get("label")
    for entry in log.tree:
        record = entry
        out: dict[str, Any] = {
            "id": record["id"],
            "parentId": record["parentId"],
            "type": record["type"],
        }
        if record["type"] == "message":
            message = message_of(log.path, entry)
            out["role"] = message["role"]
            out["preview"] = preview_of(message)
        label = labels.get(record["id"])
        if label:
            out["label"] = label
        entries.append(out)
    return {"tip": log.tip, "entries": entries}
