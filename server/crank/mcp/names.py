"""Names the model sees: ``mcp__<server>__<tool>`` (Claude Code's convention).

Providers accept tool names matching ``^[a-zA-Z0-9_-]{1,64}$`` (OpenAI's rule, the
stricter one). Any other character becomes ``_``; a name that would be too long is cut
and ends with 8 hex of a hash of the full name, so two long names stay apart. The
mapping back to the server's own name is kept by whoever asked (``manager``), never
recomputed from the sanitised name.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
MAX_NAME = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def clean(part: str) -> str:
    """``part`` with every character a provider refuses replaced by ``_``."""
    return _BAD.sub("_", part) or "_"


def qualified(server: str, name: str) -> str:
    """The name the model calls: ``mcp__<server>__<name>``, sanitised and bounded."""
    full = f"{PREFIX}{clean(server)}__{clean(name)}"
    if len(full) <= MAX_NAME:
        return full
    digest = hashlib.sha256(f"{server}\0{name}".encode()).hexdigest()[:8]
    return f"{full[: MAX_NAME - 9]}_{digest}"


def unique(names: list[str]) -> list[str]:
    """``names`` with a repeat (two tools that sanitise alike) numbered ``_2``, ``_3``."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for name in names:
        count = seen.get(name, 0) + 1
        seen[name] = count
        if count == 1:
            out.append(name)
        else:
            suffix = f"_{count}"
            out.append(name[: MAX_NAME - len(suffix)] + suffix)
    return out
