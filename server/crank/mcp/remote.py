"""What Crank keeps of a server: its tools and prompts as plain data, and its stderr.

Plain dataclasses, so the rest of Crank (the manager, the workspace, the wire) never
needs the SDK's pydantic models, and the SDK is only loaded where it talks.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

TAIL_LINES = 20
TAIL_LINE_CHARS = 400


@dataclass(frozen=True)
class RemoteTool:
    name: str
    """The server's own name for the tool (what ``tools/call`` takes)."""
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False
    """The server's ``readOnlyHint`` annotation: a claim, trusted only by setting."""


@dataclass(frozen=True)
class RemotePrompt:
    name: str
    description: str
    arguments: tuple[str, ...] = ()
    required: tuple[str, ...] = ()


class StderrTail:
    """The last lines a server wrote to stderr (bounded however much it writes), and
    what it wrote to stdout that was not JSON-RPC: the error report quotes both."""

    def __init__(self) -> None:
        self._lines: deque[str] = deque(maxlen=TAIL_LINES)
        self._partial = ""
        self._lock = threading.Lock()
        self.total_bytes = 0
        self.garbage: str | None = None
        """The first stdout line that was not a JSON-RPC message."""
        self.garbage_lines = 0

    def feed(self, chunk: bytes) -> None:
        text = chunk.decode("utf-8", "replace")
        with self._lock:
            self.total_bytes += len(chunk)
            parts = (self._partial + text).split("\n")
            self._partial = parts.pop()[-TAIL_LINE_CHARS:]
            for line in parts[-TAIL_LINES:]:
                if line.strip():
                    self._lines.append(line.rstrip()[:TAIL_LINE_CHARS])

    def note_garbage(self, line: str) -> None:
        with self._lock:
            self.garbage_lines += 1
            if self.garbage is None:
                self.garbage = line[:TAIL_LINE_CHARS]

    def text(self) -> str:
        """The tail as a few lines, or "" when the server said nothing."""
        with self._lock:
            lines = list(self._lines)
            if self._partial.strip():
                lines.append(self._partial.rstrip())
        return "\n".join(lines[-TAIL_LINES:])

    def report(self) -> str:
        """A sentence or two to add to an error: the stderr tail, the garbage seen."""
        parts: list[str] = []
        if self.garbage is not None:
            parts.append(
                f"it wrote {self.garbage_lines} line(s) on stdout that are not JSON-RPC, "
                f"the first: {self.garbage!r}"
            )
        tail = self.text()
        if tail:
            parts.append(f"its stderr ends with:\n{tail}")
        return "; ".join(parts)
