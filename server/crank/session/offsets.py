"""The offset index: a session file's entries without their messages, beside the file.

Opening a session read and checked every line of its file, and decoding 50,000
messages into dicts cost over 300 ms whatever else was done, although an editor
shows a page of them. So the writer of a session (``SessionLog``, under its lock)
keeps ``.<name>.index`` beside it: one row per entry, in file order, with the
entry's envelope (type, id, parent, timestamp) and, for a message, a ``Stored`` in
place of the message: where its line is, its role, a reply's usage, and the facts a
repair of the view looks at (``crank.agent.view.Shaped``). An open reads the rows and
leaves every message in the file until somebody asks for it (``deferred.py``).

The index is only a cache of what the file says, so it is trusted only while it
describes the file's bytes: each row records the CRC-32 of the file up to the end of
its entry's line, and ``read`` checks the last row's against the file (the file is
read once, in blocks, at memory speed: about 14 ms for 46 MB, a twentieth of the decode
it saves). A file changed, cut or replaced anywhere in what the index covers gives
another CRC, and is read whole as if there were no index; lines the file has past
the index (another writer's, or appends whose rows a crash lost) are read as usual.
Rows are appended with the entries, unsynced (a lost or torn row only costs one
slower open); a missing or stale index is made again by the next writer to open the
file, from the lines that open parses (``build``), and the open reads the rows it made.
Only the writer writes it: a reader's rows would race the writer's appends. Entries written other than as our writer spells
them (a key more, a timestamp that is not an integer) have rows that only say where
their line is: the open parses those lines.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple, NotRequired, TypedDict, cast

import msgspec

from crank.agent.messages import Message
from crank.agent.view import AsIs, shape_of

from .deferred import Stored
from .durable import write_all
from .entries import Entry
from .usage_totals import COUNTED, UsageTotals, usage_of

VERSION = 1
READ_BLOCK = 1024 * 1024
_WRITE_ROWS = 4096
"""Rows encoded at a time when a whole index is written (its bytes never all held)."""
_ENVELOPE = frozenset(("type", "id", "parentId", "timestamp", "message"))


Spent = tuple[int, int, int, int, float]
"""What the file's entries have used up to and including one entry: the four counts of
``usage_totals.COUNTED`` and the cost, as ``UsageTotals`` sums them."""


class _Head(msgspec.Struct):
    """The index's first line: its version, and what it covers while it has no rows
    (the file's header line: its end and CRC)."""

    crankOffsets: int
    end: int
    crc: int


class _At(msgspec.Struct, array_like=True, gc=False):
    """Where an entry's line is (``offset``, ``length``), the CRC through its end and,
    when the entry used something, what the file had used through it (``spent``): for
    an entry the open reads from its line."""

    offset: int
    length: int
    crc: int
    spent: Spent | None = None


class _Row(TypedDict):
    """One entry: a message entry as its envelope and a ``Stored``, any other as its
    envelope and where its line is (``at``)."""

    type: str
    id: str
    parentId: str | None
    timestamp: NotRequired[Any]
    message: NotRequired[Stored]
    at: NotRequired[_At]


_decode_head = msgspec.json.Decoder(_Head).decode
_decode_rows = msgspec.json.Decoder(_Row).decode_lines
_encode = msgspec.json.Encoder()
_HAS_AT = itertools.repeat("at")


def index_path(path: Path) -> Path:
    """Where the index of the session file ``path`` is kept."""
    return path.with_name(f".{path.name}.index")


class Covered(NamedTuple):
    """How much of a session file its index describes: its first ``entries``, up to byte
    ``end`` (after the last one's newline), whose CRC-32 is ``crc``; the index file's
    first ``length`` bytes hold them (a torn last row is not counted)."""

    entries: int
    end: int
    crc: int
    length: int
    spent: UsageTotals
    """What those entries used (``SessionLog.usage_totals`` adds the rest)."""


class Indexed(NamedTuple):
    """What ``read`` found: the entries the index describes, in file order (messages
    ``Stored``, any other still to be read from its line: ``rows_to_parse``), and how
    much of the file that is."""

    rows: list[dict[str, Any]]
    covered: Covered


def read(path: Path, size: int) -> Indexed | None:
    """The index of the session file ``path`` (``size`` bytes long), if it has one that
    describes it (see the module docstring); None otherwise."""
    try:
        data = index_path(path).read_bytes()
    except OSError:
        return None
    first = data.find(b"\n")
    whole = data.rfind(b"\n") + 1  # a torn last row (a crash mid-append) is left out
    if first < 0:
        return None
    try:
        head = _decode_head(data[:first])
        rows: list[Any] = _decode_rows(memoryview(data)[first + 1 : whole])
    except (msgspec.DecodeError, ValueError):
        return None
    del data
    if head.crankOffsets != VERSION:
        return None
    end, crc = head.end, head.crc
    if rows:
        end, crc = _end_of(rows[-1])
    if end > size or _crc_of(path, end) != crc:
        return None
    return Indexed(rows, Covered(len(rows), end, crc, whole, _spent_by(rows)))


def _spent_by(rows: list[dict[str, Any]]) -> UsageTotals:
    """What the entries of ``rows`` used: the newest row that records it."""
    totals = UsageTotals()
    for row in reversed(rows):
        spent = (row["message"] if "message" in row else row["at"]).spent
        if spent is not None:
            totals.counts = dict(zip(COUNTED, spent[:4], strict=True))
            totals.cost = spent[4]
            break
    return totals


def _end_of(row: dict[str, Any]) -> tuple[int, int]:
    """Where the line of ``row``'s entry ends (after its newline), and the CRC there."""
    span = row["message"] if "message" in row else row["at"]
    return span.offset + span.length + 1, span.crc


def _crc_of(path: Path, end: int) -> int | None:
    """The CRC-32 of the first ``end`` bytes of ``path`` (None: unreadable)."""
    crc = 0
    try:
        with open(path, "rb", buffering=0) as file:
            left = end
            while left > 0:
                block = file.read(min(READ_BLOCK, left))
                if not block:
                    return None
                crc = zlib.crc32(block, crc)
                left -= len(block)
    except OSError:
        return None
    return crc


def rows_to_parse(rows: list[dict[str, Any]]) -> list[int]:
    """Where, among ``rows``, the entries are whose lines are still to be read (``at``):
    looked for at C speed, as there are none in most files."""
    marked = list(map(operator.contains, rows, _HAS_AT))
    if True not in marked:
        return []
    return [number for number, at in enumerate(marked) if at]


def line_of(row: dict[str, Any]) -> tuple[int, int]:
    """Where the line of an ``at`` row is: its offset and length."""
    at: _At = row["at"]
    return at.offset, at.length


def _row(
    entry: Entry, offset: int, length: int, crc: int, spent: Spent | None, verdict: AsIs
) -> dict[str, Any]:
    """The row of ``entry``, whose line is ``length`` bytes at ``offset``; ``verdict``
    (the file's messages before it) learns its message."""
    message = entry.get("message")
    shape = None
    if (
        entry["type"] == "message"
        and entry.keys() == _ENVELOPE
        and type(entry["timestamp"]) is int
        and type(message) is dict
    ):
        with contextlib.suppress(KeyError, TypeError, AttributeError):  # another writer's
            shape = shape_of(cast(Message, message))  # reply with no stopReason, say
    clean = verdict.add(shape) if entry["type"] == "message" else False
    if shape is not None:
        stored = Stored(
            offset, length, crc, shape.role, shape.calls, shape.answers, shape.empty, clean, spent
        )
        return {**entry, "message": stored}
    return {
        "type": entry["type"],
        "id": entry["id"],
        "parentId": entry["parentId"],
        "at": _At(offset, length, crc, spent),
    }


def _verdict_after(entries: Sequence[Entry]) -> AsIs:
    """What the writer of a file whose first entries are ``entries`` (as the offset
    index gave them) knows of its messages: sent as is when the newest message's row
    says so (then the calls before are gathered if a new call needs them), otherwise
    not known (and never known for that file again: its rows say so from then on)."""
    for entry in reversed(entries):
        if entry["type"] != "message":
            continue
        message = entry["message"]
        if type(message) is not Stored or not message.clean:
            return AsIs.broken()
        break
    prefix = len(entries)
    return AsIs(seen=lambda: _calls_in(entries[:prefix]))


def _calls_in(entries: Sequence[Entry]) -> Iterator[str]:
    """The ids of the tool calls the message entries of ``entries`` hold, in order."""
    for entry in entries:
        if entry["type"] == "message":
            message = entry["message"]
            shape = message if type(message) is Stored else shape_of(message)
            yield from shape.calls


class _Running:
    """What the file has used through the last entry given a row (``spent``)."""

    def __init__(self, totals: UsageTotals) -> None:
        self.totals = UsageTotals()
        self.totals.add_totals(totals)

    def after(self, entry: Entry) -> Spent | None:
        """Add what ``entry`` used; the new totals if it used something, else None."""
        usage = usage_of(entry)
        if usage is None:
            return None
        totals = self.totals
        totals.add(usage)
        counts = totals.counts
        return (
            counts["input"],
            counts["output"],
            counts["cacheRead"],
            counts["cacheWrite"],
            totals.cost,
        )


def _rows_of(
    lines: Iterable[tuple[Entry, int, bytes]], crc: int, running: _Running, verdict: AsIs
) -> list[dict[str, Any]]:
    """The rows of entries read from the file, each with where its line is and the line
    (newline not included), in file order from where ``crc`` was taken; ``running`` and
    ``verdict`` learn each."""
    rows: list[dict[str, Any]] = []
    append = rows.append
    for entry, offset, line in lines:
        crc = zlib.crc32(b"\n", zlib.crc32(line, crc))
        append(_row(entry, offset, len(line), crc, running.after(entry), verdict))
    return rows


def build(path: Path, file: IO[bytes], parse: Callable[[int, bytes], Entry]) -> Indexed:
    """The rows of every line of the session file ``path``, open as ``file`` at its
    start, each line parsed by ``parse`` (given its line number: the open's own checks,
    which refuse a broken line by name) and let go once its row is made; written as the
    file's index, in place of any (its writer's open, which holds the lock). The rows
    are returned whether or not the index could be written."""
    header = file.readline()
    head_end = len(header)
    head_crc = zlib.crc32(header)
    running = _Running(UsageTotals())
    parsed = (
        (parse(number, line), offset, line)
        for number, (offset, line) in enumerate(_lines(file, head_end), start=2)
    )
    rows = _rows_of(parsed, head_crc, running, AsIs())
    end, crc = _end_of(rows[-1]) if rows else (head_end, head_crc)
    length = OffsetIndex.write(path, rows, head_end, head_crc)
    return Indexed(rows, Covered(len(rows), end, crc, length, running.totals))


class OffsetIndex:
    """The index of one session file, kept by the file's one writer: a row appended for
    each entry appended (``add``). Failing to write it is never an error: the file is
    the session; the index only makes opening it cheap."""

    def __init__(
        self, path: Path, fd: int, end: int, crc: int, spent: _Running, verdict: AsIs
    ) -> None:
        self.path = path
        self._fd: int | None = fd
        self._end = end
        self._crc = crc
        self._spent = spent
        self._verdict = verdict

    @classmethod
    def new(cls, path: Path, header_line: bytes) -> OffsetIndex | None:
        """The index of a file just created with ``header_line`` (newline included)."""
        crc = zlib.crc32(header_line)
        if not cls.write(path, [], len(header_line), crc):
            return None
        try:
            fd = os.open(index_path(path), os.O_WRONLY | os.O_APPEND)
        except OSError:
            return None
        return cls(path, fd, len(header_line), crc, _Running(UsageTotals()), AsIs())

    @classmethod
    def attach(cls, path: Path, entries: Sequence[Entry], covered: Covered) -> OffsetIndex | None:
        """The index of ``path``, which its writer just opened and read into ``entries``
        from an index that describes its first ``covered.entries`` (``read``, or
        ``build``): rows added for the lines past them, a torn row cut. None when it
        cannot be kept (a folder that is not writable)."""
        if not covered.length:  # ``build`` could not write it
            return None
        count, start = covered.entries, covered.end
        running = _Running(covered.spent)
        verdict = _verdict_after(entries[:count])
        rows: list[dict[str, Any]] = []
        try:
            fd = os.open(index_path(path), os.O_WRONLY | os.O_APPEND)
        except OSError:
            return None
        index = cls(path, fd, covered.end, covered.crc, running, verdict)
        try:
            os.ftruncate(fd, covered.length)  # a torn row, if any, is cut
            if count < len(entries):
                with open(path, "rb", buffering=0) as file:
                    file.seek(start)
                    tail = zip(entries[count:], _lines(file, start), strict=False)
                    lines = ((entry, offset, line) for entry, (offset, line) in tail)
                    rows = _rows_of(lines, covered.crc, running, verdict)
        except OSError:
            index.close()
            return None
        if rows:
            index._end, index._crc = _end_of(rows[-1])
            index._write(rows)
        return index

    @staticmethod
    def write(path: Path, rows: list[dict[str, Any]], head_end: int, head_crc: int) -> int:
        """Write ``rows`` as the index of ``path``, put in place whole (a reader sees
        the old one or this one); its length, or 0 when it could not be written."""
        target = index_path(path)
        partial = target.with_name(target.name + ".partial")
        head = _encode.encode(_Head(VERSION, head_end, head_crc)) + b"\n"
        try:
            # private as the session is: it names the session's calls and what it cost
            with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
                file.write(head)
                for start in range(0, len(rows), _WRITE_ROWS):
                    file.write(_encode.encode_lines(rows[start : start + _WRITE_ROWS]))
                length = file.tell()
            os.replace(partial, target)
        except OSError:
            with contextlib.suppress(OSError):
                partial.unlink()
            return 0
        return length

    def add(self, lines: Sequence[bytes], entries: Sequence[Entry]) -> None:
        """Rows for ``entries``, just written to the file as ``lines`` (newlines included)."""
        if self._fd is None:
            return
        rows = []
        offset, crc = self._end, self._crc
        for entry, line in zip(entries, lines, strict=True):
            crc = zlib.crc32(line, crc)
            spent = self._spent.after(entry)
            rows.append(_row(entry, offset, len(line) - 1, crc, spent, self._verdict))
            offset += len(line)
        self._end, self._crc = offset, crc
        self._write(rows)

    def _write(self, rows: list[dict[str, Any]]) -> None:
        if self._fd is None:
            return
        try:
            write_all(self._fd, _encode.encode_lines(rows))
        except OSError:
            self.close()  # rows missing from here on: the next open reads those lines

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _lines(file: Any, start: int) -> Iterator[tuple[int, bytes]]:
    """Each whole line of ``file`` from ``start`` (its offset there), without its newline."""
    offset = start
    pending = b""
    while block := file.read(READ_BLOCK):
        data = pending + block if pending else block
        at = 0
        while (end := data.find(b"\n", at)) >= 0:
            yield offset, data[at:end]
            offset += end - at + 1
            at = end + 1
        pending = data[at:]


__all__ = [
    "Covered",
    "Indexed",
    "OffsetIndex",
    "build",
    "index_path",
    "line_of",
    "read",
    "rows_to_parse",
]
