"""A file's lines in bounded memory, whatever the file: huge, sparse, one giant line.

``LineReader`` reads a binary handle a chunk at a time and never holds more than one
chunk plus one capped line: a line longer than the cap comes back cut (its first
``cap`` bytes, ``cut=True``) and the rest of it is skipped unread into memory. Skipping
to a line and counting lines go a chunk at a time without building line objects, so
they cost a pass over the bytes and nothing more, less the holes of a sparse file:
those read as NUL bytes, so they hold no newline, and a skip or a count steps over
them (``SEEK_DATA``) instead of reading them. The answers are the ones a reading of
every byte gives; only the reading is saved (a 2 GB hole cost a read pass of seconds,
and minutes on a loaded machine).

A line is what ``str.split("\\n")`` would give minus the empty piece after a final
newline: ``b"a\\nb"`` and ``b"a\\nb\\n"`` both have two lines. Lines come without their
``\\n``; a ``\\r`` before it is left for the caller (``text_of_line`` drops it).
"""

from __future__ import annotations

import errno
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

CHUNK = 1 << 20
"""Bytes read from the file at a time."""


@dataclass(frozen=True)
class Line:
    data: bytes
    """The line without its newline, at most the cap asked for."""
    cut: bool
    """The line was longer than the cap; ``data`` is its start."""
    start: int
    """File offset of the line's first byte (for error messages)."""


@dataclass(frozen=True)
class Block:
    data: bytes
    """Whole lines (each ends with a newline, except a last line at end of file), or
    the start of one line longer than the block size when ``cut``."""
    cut: bool
    start: int

    def line_count(self) -> int:
        if self.cut:
            return 1
        return self.data.count(b"\n") + (0 if self.data.endswith(b"\n") else 1)


class LineReader:
    """Lines, blocks of lines, skips and counts over one open binary file."""

    def __init__(
        self, handle: BinaryIO, chunk: int = CHUNK, stop: Callable[[], bool] = lambda: False
    ) -> None:
        self._handle = handle
        self._stop = stop
        self._chunk = chunk
        self._buf = b""
        self._pos = 0
        self._eof = False
        self._base = 0
        """File offset of ``_buf[0]``."""
        self._partial = False
        """Bytes of a line were consumed and its newline has not been seen yet."""

    @property
    def offset(self) -> int:
        """File offset of the next unconsumed byte."""
        return self._base + self._pos

    def _more(self) -> bool:
        """Append a chunk to the buffer (dropping what was consumed); False at EOF, or
        once ``stop`` says the reader's caller has gone (what it gets then is unused)."""
        if self._eof or self._stop():
            return False
        data = self._handle.read(self._chunk)
        if not data:
            self._eof = True
            return False
        self._base += self._pos
        self._buf = self._buf[self._pos :] + data
        self._pos = 0
        return True

    def _over_hole(self) -> int:
        """With the buffer all consumed, step over the hole (a sparse file's unwritten
        bytes, NULs when read) that starts at the next byte, if there is one: its
        length, 0 when there is none or the handle cannot tell (no ``SEEK_DATA``, not
        seekable). Only for the callers that look at newlines alone."""
        if self._pos != len(self._buf) or self._eof or self._stop():
            return 0
        try:
            here = self._handle.tell()
            data = self._handle.seek(here, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no data past here, the rest is a hole
                return 0
            data = self._handle.seek(0, os.SEEK_END)
        except (AttributeError, ValueError, io.UnsupportedOperation):
            return 0
        if data <= here:
            return 0
        self._base, self._buf, self._pos = self._base + len(self._buf) + data - here, b"", 0
        self._partial = True  # a hole is part of a line: it holds no newline
        return data - here

    def _consume(self, end: int) -> None:
        if end > self._pos:
            self._partial = self._buf[end - 1] != 0x0A
        self._pos = end

    def head(self, size: int) -> bytes:
        """Up to ``size`` bytes from the current position, without consuming them."""
        while len(self._buf) - self._pos < size and self._more():
            pass
        return self._buf[self._pos : self._pos + size]

    def _skip_rest_of_line(self) -> None:
        while True:
            newline = self._buf.find(b"\n", self._pos)
            if newline != -1:
                self._consume(newline + 1)
                return
            self._consume(len(self._buf))
            self._over_hole()
            if not self._more():
                self._partial = False  # the line ended with the file; it was returned
                return

    def read_line(self, cap: int, *, skip_rest: bool = True) -> Line | None:
        """The next line, cut to ``cap`` bytes; None at end of file. The rest of a cut
        line is skipped, unless ``skip_rest`` is False: then the reader stays inside
        that line (``count_lines`` still counts it, once)."""
        while True:
            start = self.offset
            newline = self._buf.find(b"\n", self._pos, self._pos + cap + 1)
            if newline != -1:
                line = Line(self._buf[self._pos : newline], False, start)
                self._consume(newline + 1)
                return line
            if len(self._buf) - self._pos > cap:
                line = Line(self._buf[self._pos : self._pos + cap], True, start)
                self._consume(self._pos + cap)
                if skip_rest:
                    self._skip_rest_of_line()
                return line
            if not self._more():
                if self._pos == len(self._buf):
                    return None
                line = Line(self._buf[self._pos :], False, start)
                self._consume(len(self._buf))
                self._partial = False
                return line

    def read_block(self, size: int) -> Block | None:
        """About ``size`` bytes of whole lines; a line longer than ``size`` comes alone,
        cut to ``size`` bytes (its rest skipped). None at end of file."""
        while len(self._buf) - self._pos < size and self._more():
            pass
        start = self.offset
        if self._pos == len(self._buf):
            return None
        if self._eof:
            block = Block(self._buf[self._pos :], False, start)
            self._consume(len(self._buf))
            self._partial = False
            return block
        newline = self._buf.rfind(b"\n", self._pos, self._pos + size)
        if newline == -1:
            block = Block(self._buf[self._pos : self._pos + size], True, start)
            self._consume(self._pos + size)
            self._skip_rest_of_line()
            return block
        block = Block(self._buf[self._pos : newline + 1], False, start)
        self._consume(newline + 1)
        return block

    def skip_lines(self, count: int) -> int:
        """Skip up to ``count`` lines; returns how many there were."""
        skipped = 0
        while skipped < count:
            self._over_hole()
            if self._pos == len(self._buf) and not self._more():
                return skipped + (1 if self._partial else 0)
            found = self._buf.count(b"\n", self._pos)
            if skipped + found < count:
                skipped += found
                self._consume(len(self._buf))
                continue
            at = self._pos
            while skipped < count:
                at = self._buf.index(b"\n", at) + 1
                skipped += 1
            self._consume(at)
            self._partial = False
        return skipped

    def count_lines(self, most_bytes: int) -> int | None:
        """The lines left, or None if more than ``most_bytes`` bytes remain to scan."""
        counted = 0
        scanned = 0
        while True:
            scanned += self._over_hole()  # counted as read, so the answer is a reading's
            if scanned > most_bytes:
                return None
            if self._pos == len(self._buf) and not self._more():
                return counted + (1 if self._partial else 0)
            scanned += len(self._buf) - self._pos
            if scanned > most_bytes:
                return None
            counted += self._buf.count(b"\n", self._pos)
            self._consume(len(self._buf))


def text_of_line(data: bytes, cut: bool) -> str:
    """A line's UTF-8 text without a trailing ``\\r``; a cut line loses the incomplete
    character at its end. Raises UnicodeDecodeError for bytes that are not UTF-8."""
    if not cut:
        return data.removesuffix(b"\r").decode("utf-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return data[: exc.start].decode("utf-8")
        raise
