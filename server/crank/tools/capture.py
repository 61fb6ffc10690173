"""Command output held within a bound: all of it in memory while it is small, and
spilled to a file in ``output_dir`` (plus a bounded tail in memory) once it is not.
So ``yes | head -c 1G`` costs a file, not a gigabyte of RAM, and nothing is lost.

The folder is by default in the shared temp directory under a predictable name, and
output can hold anything a command printed: the folder is the user's own and 0o700
(an existing one is tightened; a link or another user's folder is refused, naming it),
and each file is created 0o600, never through a link."""

from __future__ import annotations

import os
import stat
import time
import uuid
from collections import deque
from pathlib import Path
from typing import IO

from crank.agent.tools import MAX_BYTES, MAX_LINES


def private_dir(directory: Path) -> None:
    """Make ``directory`` (if needed) and see that only this user can enter it."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(
            f"{directory} is a link or not this user's own folder; "
            "command output is not saved there"
        )
    if info.st_mode & 0o077:
        os.chmod(directory, 0o700)


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
        self.save_error: str | None = None
        """Why the full output could not be saved (the command goes on regardless)."""

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
        elif self.save_error is None and (
            self.total_chars > MAX_BYTES or self.total_lines > MAX_LINES
        ):
            self.try_spill()
        if self._file is not None or self.save_error is not None:
            while len(self._tail) > 1 and self._tail_chars - len(self._tail[0]) >= 2 * MAX_BYTES:
                self._tail_chars -= len(self._tail.popleft())

    def try_spill(self) -> Path | None:
        """``spill``, but a folder that cannot be used is noted, not raised: the command
        must keep being read (a reader that stops leaves it blocked on a full pipe)."""
        if self.save_error is not None:
            return None
        try:
            return self.spill()
        except OSError as error:
            self.save_error = str(error)
            return None

    def spill(self) -> Path:
        """Start (or keep) the full-output file; everything so far goes into it."""
        if self.path is None:
            private_dir(self.output_dir)
            stamp = time.strftime("%Y%m%d-%H%M%S")
            path = self.output_dir / f"{self.prefix}-{stamp}-{uuid.uuid4().hex[:8]}.log"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
            fd = os.open(path, flags, 0o600)
            self._file = open(fd, "w", encoding="utf-8", errors="surrogateescape")  # noqa: SIM115
            self.path = path
            self._file.write("".join(self._tail))
        return self.path

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def tail(self) -> str:
        return "".join(self._tail)
