"""Message entries read now whose message is decoded when somebody first asks for it.

Resuming a long session decoded every message of its file, although a session that
outgrew its window many times only shows its model what came after its newest
compaction: decoding the tens of thousands of messages before it was most of the time
of the open and most of its memory (a decoded message is about twice its bytes). So
``SessionTree.read`` reads the lines before the newest compaction's kept entry with
``deferred_entries``, all of them in one decode: each entry is checked strictly, as our
writer spells it (its envelope, exactly the fields its kind names, the message's JSON
syntax and its role), and a message is kept as the line that holds it (a ``Deferred``:
where its line is in the bytes read, its role and, for a reply, its usage, which the
same decode read). Everything else is read as before.

An open from the offset index (``offsets.py``) leaves every message in the file as a
``Stored``: where its line is, with no byte of it held; it is read from the file when
first asked for, the same way.

Who reads an entry's message goes through ``message_of`` (or ``messages_of``), which
decodes a deferred one once (its line, with ``jsonio.loads``, so the result is exactly
what an eager read gives) and puts it in the entry in place of the ``Deferred``. The
first to do so finds where each line is in the bytes read (``_Lines``), once: an open
that asks for none of those messages never pays for it. Only the message is deferred, never
a check that could refuse the file: if one of those lines is not as our writer spells
it (another writer's spacing, a key it does not know, a timestamp that is not an
integer), every line is read eagerly instead, as before. Entries read from a file are
never written again (the log only appends new ones), so a ``Deferred`` never reaches
an encoder.
"""

from __future__ import annotations

import operator
import os
import re
import threading
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import (
    Annotated,
    Any,
    NamedTuple,
    NotRequired,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from crank.agent.messages import Message

from . import jsonio
from .entries import ENTRY_FIELDS, MESSAGE_ROLES, Entry, EntryType, MessageRole
from .errors import SessionUnreadable

try:
    import msgspec
except ImportError:  # pragma: no cover - without msgspec every message is read at once
    msgspec = None  # type: ignore[assignment]

_KIND = "message"
_MESSAGE = operator.itemgetter("message")

if msgspec is not None:
    _ID = Annotated[str, msgspec.Meta(min_length=1)]

    class _Head(msgspec.Struct):
        """A message's role, checked, and what it says as its ``usage`` (any JSON, or
        UNSET): every other key is skipped, its syntax checked, nothing built."""

        role: MessageRole
        usage: Any = msgspec.UNSET

    def _line_type(kind: EntryType, fields: type) -> type:
        """A line of one kind of entry, exactly as our writer spells it (the envelope,
        then the fields ``ENTRY_FIELDS`` names, nothing else), a message as its head."""
        spelled: list[tuple[str, Any] | tuple[str, Any, Any]] = [
            ("id", _ID),
            ("parentId", str | None),
            ("timestamp", int),
        ]
        optional = []
        for name, hint in get_type_hints(fields, include_extras=True).items():
            if kind == _KIND and name == "message":
                hint = _Head
            if get_origin(hint) is NotRequired:
                optional.append((name, get_args(hint)[0] | msgspec.UnsetType, msgspec.UNSET))
            else:
                spelled.append((name, hint))
        return msgspec.defstruct(
            f"{kind}Line",
            [*spelled, *optional],
            tag_field="type",
            tag=kind,
            forbid_unknown_fields=True,
        )

    _LINE_TYPES = {kind: _line_type(kind, fields) for kind, fields in ENTRY_FIELDS.items()}
    _MESSAGE_LINE: Any = _LINE_TYPES["message"]
    _decode_zone = msgspec.json.Decoder(Union[tuple(_LINE_TYPES.values())]).decode_lines  # noqa: UP007

    class _MessageOf(msgspec.Struct):
        """A message line read again for its message alone, the envelope skipped
        (decoding it into a dict too cost a third more than the message)."""

        message: Any

    _decode_message = msgspec.json.Decoder(_MessageOf).decode


class Misaligned(ValueError):
    """The lines read at once do not hold one entry each: ``decode_lines`` reads every
    JSON value of a line, so a line of two (another writer's, a hand edit) decoded
    as two entries, and a message cannot be told from its place among the lines. The
    eager read refuses such a line as not JSON; here it is found when the lines are
    first split, and named (``where``, ``problem``) to whoever asked for a message."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where, self.problem = where, problem


class _Lines:
    """The bytes of the lines ``deferred_entries`` decoded (the file's, from line 2),
    and, once a message among them is first asked for, where each line is (found then,
    a single time: an open that decodes none of them never pays for it). ``decode_lines``
    skips a line of nothing but JSON whitespace, so such a line is left out here too,
    and the n-th line kept is the n-th decoded, once the search has checked that there
    are as many lines as entries (``Misaligned`` otherwise: counting them at the open
    would cost a fifth of the decode). The bytes are let go when the last of the
    messages has been decoded (``decoded``): they are then in the entries."""

    __slots__ = ("_count", "_data", "_fault", "_spans", "left")

    def __init__(self, data: bytes, count: int) -> None:
        self._data = data
        self._count = count
        self.left = 0
        """How many of the entries are messages still deferred (set by the reader)."""
        self._spans: array[int] | None = None
        self._fault: Misaligned | None = None

    def line(self, index: int) -> bytes:
        """A copy of the ``index``-th line (the bytes of one message, not all of them)."""
        spans = self._spans
        if spans is None:  # two threads may search at once: both find the same lines
            if self._fault is not None:
                raise self._fault
            spans = _line_spans(self._data)
            if len(spans) != 2 * self._count:
                self._fault = _misaligned(self._data.split(b"\n"))
                raise self._fault
            self._spans = spans
        return self._data[spans[2 * index] : spans[2 * index + 1]]

    def decoded(self) -> None:
        """One more of the messages is in its entry (called under ``_decoding``)."""
        self.left -= 1
        if self.left == 0:
            self._data, self._spans = b"", array("q")


_CONTENT = re.compile(rb"[^ \t\r\n]")


def _line_spans(data: bytes) -> array[int]:
    """Where each line of ``data`` that holds more than JSON whitespace starts and
    ends, two numbers a line: found at C speed (``find``, one ``search``), no line
    copied."""
    spans = array("q")
    add, find, content = spans.append, data.find, _CONTENT.search
    start, size = 0, len(data)
    while start < size:
        end = find(b"\n", start)
        if end < 0:
            end = size
        if content(data, start, end):
            add(start)
            add(end)
        start = end + 1
    return spans


def _misaligned(every: list[bytes]) -> Misaligned:
    """Which of ``every`` line (the file's, from line 2) holds more than one value."""
    for number, line in enumerate(every, start=2):
        if line.strip(b" \t\r"):
            try:
                jsonio.loads(line)
            except ValueError as error:
                return Misaligned(f"line {number}", f"not one JSON value ({error})")
    return Misaligned("the lines before the kept entry", "they do not hold one entry each")


_Record: Any = msgspec.Struct if msgspec is not None else object
_RECORD_OPTIONS = {"eq": False, "gc": False} if msgspec is not None else {}
"""A ``Deferred`` is made per deferred message, 50,000 times for a long session: a
struct is made by C (a third of the time of a Python ``__init__``), is not tracked by
the collector (it can hold no cycle) and has its own ``__eq__``, below."""


class Deferred(_Record, **_RECORD_OPTIONS):  # type: ignore[misc]
    """A message entry's message as the file spelled it: the ``index``-th of the lines
    held by ``lines``, its ``role`` and, for a reply, its ``usage`` (None: it has none
    that is an object), read with the others."""

    lines: _Lines
    index: int
    role: str
    usage: dict[str, Any] | None

    def line(self) -> bytes:
        """The whole line that holds the message."""
        return self.lines.line(self.index)

    def __repr__(self) -> str:
        return f"Deferred({self.role}, line {self.index} of those read at once)"

    def __eq__(self, other: object) -> bool:
        """The same line (two reads of one file hold equal entries)."""
        if not isinstance(other, Deferred):
            return NotImplemented
        return bool(self.role == other.role and self.line() == other.line())

    __hash__ = None  # type: ignore[assignment]  # equal by content, and never a key


_STORED_OPTIONS = {"array_like": True, "omit_defaults": True, **_RECORD_OPTIONS} if msgspec else {}


class Stored(_Record, **_STORED_OPTIONS):  # type: ignore[misc]
    """A message entry's message still in its file, as the offset index read it
    (``offsets.py``): where its line is (``offset``, ``length``: the file's bytes,
    newline not counted, and ``crc``), its role and what a repair of the view looks at
    (``crank.agent.view.Shaped``: ``calls``, ``answers``, ``empty``). Nothing of the
    file is held: the line is read when the message is first asked for. Equal when
    the same line of the same file is meant."""

    offset: int
    length: int
    crc: int
    """The CRC-32 of the file's bytes up to this line's end, its newline included: the
    index is valid for a file whose bytes give the same (``offsets.py``)."""
    role: str
    calls: tuple[str, ...] = ()
    answers: str | None = None
    empty: bool = False
    clean: bool = False
    """The file's messages through this one, in file order, are sent as is, no call
    waiting for its result (``crank.agent.view.AsIs``), as its writer found them."""
    spent: tuple[int, int, int, int, float] | None = None
    """For a reply that reported usage: what the file had used through it (``offsets.py``
    sums the session from the newest such row, and keeps no usage per message)."""

    def __repr__(self) -> str:
        return f"Stored({self.role}, bytes {self.offset}+{self.length})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Stored):
            return NotImplemented
        return bool((self.offset, self.length, self.crc) == (other.offset, other.length, other.crc))

    __hash__ = None  # type: ignore[assignment]  # equal by place, and never a key


_decoding = threading.Lock()
"""One decode per deferred message, whichever thread asks first: the entry then holds
one message object, the one every reader is given."""


class Zone(NamedTuple):
    """What ``deferred_entries`` read, and what its loop saw on the way, so the tree
    need not look through the entries again: whether each is the child of the one
    before it (the first a root), and how many entries of each kind other than
    ``message`` there are."""

    entries: list[Entry]
    linear: bool
    others: dict[str, int]


def deferred_entries(zone: bytes) -> Zone | None:
    """The entries of the whole lines ``zone`` holds, their messages deferred, or None
    when one of them is not as our writer spells it: then every line is read eagerly
    (``entries.parse_entry``), which refuses a broken one by name. One call decodes
    them all at C speed, each message to its role and usage; the Python loop after it
    only builds the entries (a second decode for the messages' bytes, and finding each
    line's bytes here, each cost about as much as that loop)."""
    if msgspec is None:
        return None
    try:
        lines: list[Any] = _decode_zone(zone)
    except msgspec.DecodeError:  # a ValidationError too
        return None
    if not lines:  # nothing but blank lines: the eager read names the first
        return None
    held = _Lines(zone, len(lines))
    entries: list[Entry] = []
    append = entries.append
    previous = None
    linear = True
    others: dict[str, int] = {}
    for index, line in enumerate(lines):
        parent = line.parentId
        if parent == previous:  # the same text as the id before: one string for both
            parent = previous
        else:
            linear = False
        previous = line.id
        if type(line) is _MESSAGE_LINE:
            head = line.message
            role = head.role
            usage = head.usage if role == "assistant" and type(head.usage) is dict else None
            append(
                {
                    "type": _KIND,
                    "id": previous,
                    "parentId": parent,
                    "timestamp": line.timestamp,
                    "message": Deferred(held, index, role, usage),
                }
            )
        else:  # the few others: as an eager read gives them, key for key
            fields = msgspec.structs.asdict(line)
            kind = line.__struct_config__.tag
            fields["parentId"] = parent
            append({"type": kind, **{k: v for k, v in fields.items() if v is not msgspec.UNSET}})
            others[kind] = others.get(kind, 0) + 1
    held.left = len(entries) - sum(others.values())
    return Zone(entries, linear, others)


_LATER = (Deferred, Stored)


def is_deferred(message: object) -> bool:
    """Whether an entry's ``message`` is still its bytes (held, or in the file)."""
    return type(message) in _LATER


def message_of(path: Path, entry: Entry) -> Message:
    """The message of a message entry of the file at ``path``, decoded now if it was
    deferred (and kept decoded in the entry)."""
    message = entry["message"]
    if type(message) not in _LATER:
        return cast(Message, message)
    if type(message) is Stored:
        return _stored_read(path, (entry,), [message])[0]
    with _decoding:
        message = entry["message"]
        if type(message) is Deferred:
            try:
                line = message.line()
            except Misaligned as fault:
                raise SessionUnreadable(path, fault.where, fault.problem) from None
            message.lines.decoded()
            return _decoded_into(path, entry, line)
    return cast(Message, message)


_SPAN = 8 * 1024 * 1024
"""How many bytes of a file ``messages_of`` reads at once for the stored messages in
them (one read and a slice per message, not a read each)."""


def _stored_read(path: Path, entries: Sequence[Entry], held: list[Any]) -> list[Message]:
    """``held`` (the messages of ``entries``) with each ``Stored`` one decoded and put
    in its entry, under one hold of the lock: their lines are read a span of the file
    at a time (a page of the transcript is one read, the whole of it a few dozen),
    never past the last of them (one message reads its line alone)."""
    out: list[Message] = []
    last = next((m for m in reversed(held) if type(m) is Stored), None)
    extent = last.offset + last.length if last is not None else 0
    with open(path, "rb") as file, _decoding:
        fd = file.fileno()
        start = end = 0
        data = b""
        for entry, seen in zip(entries, held, strict=True):
            message = entry["message"] if type(seen) is Stored else seen
            if type(message) is not Stored:  # never stored, or decoded meanwhile
                out.append(message)
                continue
            offset, length = message.offset, message.length
            if not start <= offset or offset + length > end:
                wanted = max(length, min(_SPAN, extent - offset))
                start, data = offset, os.pread(fd, wanted, offset)
                end = start + len(data)
                if offset + length > end:
                    where = f"entry {entry['id']}"
                    problem = "the file is shorter than when it was opened"
                    raise SessionUnreadable(path, where, problem)
            out.append(_decoded_into(path, entry, data[offset - start : offset - start + length]))
    return out


def _decoded_into(path: Path, entry: Entry, line: bytes) -> Message:
    """The message of ``line`` (an entry's whole line), checked and put in ``entry``."""
    try:
        decoded = _message_in(line)
    except (ValueError, UnicodeDecodeError) as error:  # its syntax was checked
        where = f"entry {entry['id']}"
        raise SessionUnreadable(path, where, f"not JSON ({error})") from None
    if not isinstance(decoded, dict) or decoded.get("role") not in MESSAGE_ROLES:
        where, problem = f"entry {entry['id']}", "its message has no known role"
        raise SessionUnreadable(path, where, problem)
    entry["message"] = decoded
    return cast(Message, decoded)


def _message_in(line: bytes) -> Any:
    """The message of a line the one decode accepted, read alone by msgspec, or, where
    msgspec refuses (a lone surrogate escape), by ``jsonio.loads`` (the standard
    library): what an eager read gives either way. ValueError if neither reads it."""
    try:
        return _decode_message(line).message
    except msgspec.DecodeError:
        record = jsonio.loads(line)
        return record.get("message") if isinstance(record, dict) else None


def messages_of(path: Path, entries: Sequence[Entry]) -> list[Message]:
    """The messages of ``entries`` (message entries all), deferred ones decoded. Looked
    through at C speed first: a resumed transcript can be 50,000 messages, none deferred."""
    messages = list(map(_MESSAGE, entries))
    kinds = set(map(type, messages))
    if Stored in kinds:
        messages = _stored_read(path, entries, messages)
        kinds.discard(Stored)
    if Deferred in kinds:
        messages = [message_of(path, entry) for entry in entries]
    return messages


__all__ = [
    "Deferred",
    "Misaligned",
    "Stored",
    "Zone",
    "deferred_entries",
    "is_deferred",
    "message_of",
    "messages_of",
]
