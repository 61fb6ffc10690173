"""``session/list``: a folder's Crank sessions as ACP ``SessionInfo``s, a page at a time.

Contract:
- The sessions of the ``cwd`` asked about (without one: of every folder Crank has
  sessions for), newest first (by last change), the same index as
  ``crank/sessions``; each with ``sessionId``, ``cwd`` (the resolved folder),
  ``title`` (the session's name or its first prompt's first line; an unreadable file is
  listed with the reason as its title, never left out) and ``updatedAt`` (ISO 8601).
- At most ``PAGE_SIZE`` per answer; ``nextCursor`` is set while more remain, and the
  client passes it back as ``cursor``. A cursor Crank did not give is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

PAGE_SIZE = 50
_PREFIX = "after:"
T = TypeVar("T")


def page(entries: Sequence[T], cursor: object) -> tuple[list[T], str | None]:
    """The page of ``entries`` that ``cursor`` (None: the first) points at, and the
    cursor of the next page (None at the end). Raises ValueError for a bad cursor."""
    start = 0
    if cursor is not None:
        text = cursor if isinstance(cursor, str) else ""
        offset = text.removeprefix(_PREFIX)
        if not text.startswith(_PREFIX) or not offset.isdigit():
            raise ValueError(f"cursor {cursor!r} is not one Crank gave (pass nextCursor back)")
        start = int(offset)
    end = start + PAGE_SIZE
    following = f"{_PREFIX}{end}" if end < len(entries) else None
    return list(entries[start:end]), following


def session_info(entry: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """One listed session as ACP's ``SessionInfo``."""
    if entry.get("error"):
        title = f"(cannot be loaded: {entry['error']})"
    else:
        title = str(entry.get("title") or entry.get("firstMessage") or "(no prompt yet)")
    info: dict[str, Any] = {"sessionId": str(entry["sessionId"]), "cwd": str(cwd), "title": title}
    if entry.get("modified"):
        info["updatedAt"] = str(entry["modified"])
    return info
