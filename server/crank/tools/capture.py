"""Command output held within a bound: all of it in memory while it is small, and
spilled to a file in ``output_dir`` (plus a bounded tail in memory) once it is not.
So ``yes | head -c 1G`` costs a file, not a gigabyte of RAM, and nothing is lost."""

from __future__ import annotations

import time
import uuid
from collections import deque
from pathlib import Path
from typing import IO

from crank.agent.tools import MAX_BYTES, MAX_LINES


class Capture:
    def __init__(self, output_dir: Path, prefix: str = "bash") -> None:
        self.output_dir = output_dir
        self.prefix = prefix
        self.total_lines = 0
        self.total_chars = 0
        self.path: Path | None = None
        self._file: IO[str] | None = None
        self._tail: deque[str] = deque()
        self._tail_chars = 0
        self._ends_open = False

    @property
    def lines(self) -> int:
        """Lines seen so far, counting an unterminated last line."""
        return self.total_lines + (1 if self._ends_open else 0)

    def add(self, text: str) -> None:
        self.total_chars += len(text)
        self.total_lines += text.count("\n")
        self._ends_open = not text.endswith("\n")
        self._tail.append(text)
        self._tail_chars += len(text)
        if self._file is not None:
            self._file.write(text)
        elif self.total_chars > MAX_BYTES or self.total_lines > MAX_LINES:
            self.spill()
        if self._file is not None:
            while len(self._tail) > 1 and self._tail_chars - len(self._tail[0]) >= 2 * MAX_BYTES:
                self._tail_chars -= len(self._tail.popleft())

    def spill(self) -> Path:
        """Start (or keep) the full-output file; everything so far goes into it."""
        if self.path is None:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.path = self.output_dir / f"{self.prefix}-{stamp}-{uuid.uuid4().hex[:8]}.log"
            self._file = self.path.open("w", encoding="utf-8", errors="surrogateescape")
            self._file.write("".join(self._tail))
        return self.path

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def tail(self) -> str:
        return "".join(self._tail)
