"""Message entries read now whose message is decoded when somebody first asks for it.

Resuming a long session decoded every message of its file, although a session that
outgrew its window many times only shows its model what came after its newest
compaction: decoding the tens of thousands of messages before it was most of the time
of the open and most of its memory (a decoded message is about twice its bytes). So
``SessionTree.read`` reads the lines before the newest compaction's kept entry with
``deferred_entries``, all of them in one decode: each entry is checked strictly, as our
writer spells it (its envelope, exactly the fields its kind names, the message's JSON
syntax and its role), and a message is kept as its bytes (a ``Deferred``). Everything
else is read as before.

Who reads an entry's message goes through ``message_of`` (or ``messages_of``), which
decodes a deferred one once (with ``jsonio.loads``, so the result is exactly what an
eager read gives) and puts it in the entry in place of its bytes. Only the message is
deferred, never a check that could refuse the file: if one of those lines is not as our
writer spells it (another writer's spacing, a key it does not know, a timestamp that is
not an integer), every line is read eagerly instead, as before. Entries read from a
file are never written again (the log only appends new ones), so a ``Deferred`` never
reaches an encoder.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import (
    Annotated,
    Any,
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

    def _line_type(kind: EntryType, fields: type) -> type:
        """A line of one kind of entry, exactly as our writer spells it (the envelope,
        then the fields ``ENTRY_FIELDS`` names, nothing else), a message as its bytes."""
        spelled: list[tuple[str, Any] | tuple[str, Any, Any]] = [
            ("id", _ID),
            ("parentId", str | None),
            ("timestamp", int),
        ]
        optional = []
        for name, hint in get_type_hints(fields, include_extras=True).items():
            if kind == "message" and name == "message":
                hint = msgspec.Raw
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

    class _Head(msgspec.Struct):
        """A message's role, checked, and what it says as its ``usage`` (any JSON, or
        UNSET): every other key is skipped unread."""

        role: MessageRole
        usage: Any = msgspec.UNSET

    def _head_type(kind: EntryType) -> type:
        """A line of one kind read again for its message's head, the rest skipped."""
        fields = [("message", _Head)] if kind == _KIND else []
        return msgspec.defstruct(f"{kind}Head", fields, tag_field="type", tag=kind)

    _decode_heads = msgspec.json.Decoder(
        Union[tuple(_head_type(kind) for kind in ENTRY_FIELDS)]  # noqa: UP007
    ).decode_lines


class Deferred:
    """A message entry's message as the file spelled it: its JSON (``raw``, a
    ``msgspec.Raw`` of the line, checked for syntax), its ``role`` and, for a reply,
    its ``usage`` (None: it has none that is an object), read with the others."""

    __slots__ = ("raw", "role", "usage")

    def __init__(self, raw: Any, role: str, usage: dict[str, Any] | None) -> None:
        self.raw = raw
        self.role = role
        self.usage = usage

    def __repr__(self) -> str:
        return f"Deferred({self.role}, {len(self.raw)} bytes)"

    def __eq__(self, other: object) -> bool:
        """The same bytes (two reads of one file hold equal entries)."""
        if not isinstance(other, Deferred):
            return NotImplemented
        return bool(self.role == other.role and self.raw == other.raw)

    __hash__ = None  # type: ignore[assignment]  # equal by content, and never a key


_decoding = threading.Lock()
"""One decode per deferred message, whichever thread asks first: the entry then holds
one message object, the one every reader is given."""


def deferred_entries(zone: bytes) -> list[Entry] | None:
    """The entries of the whole lines ``zone`` holds, their messages deferred, or None
    when one of them is not as our writer spells it: then every line is read eagerly
    (``entries.parse_entry``), which refuses a broken one by name. Decoded in two calls,
    both at C speed: the lines with each message as its bytes, then the same lines for
    each message's role and usage only (line by line, or a role read from the bytes in
    Python, the Python around each cost more than the decodes)."""
    if msgspec is None:
        return None
    try:
        lines: list[Any] = _decode_zone(zone)
        heads: list[Any] = _decode_heads(zone)
    except msgspec.DecodeError:  # a ValidationError too
        return None
    entries: list[Entry] = []
    append = entries.append
    previous = None
    for line, head in zip(lines, heads, strict=True):
        parent = line.parentId
        if parent == previous:  # the same text as the id before: one string for both
            parent = previous
        previous = line.id
        if type(line) is _MESSAGE_LINE:
            read = head.message
            usage = read.usage if read.role == "assistant" and type(read.usage) is dict else None
            message = Deferred(line.message, read.role, usage)
            append(
                {
                    "type": _KIND,
                    "id": previous,
                    "parentId": parent,
                    "timestamp": line.timestamp,
                    "message": message,
                }
            )
        else:  # the few others: as an eager read gives them, key for key
            fields = msgspec.structs.asdict(line)
            kind = line.__struct_config__.tag
            fields["parentId"] = parent
            append({"type": kind, **{k: v for k, v in fields.items() if v is not msgspec.UNSET}})
    return entries


def is_deferred(message: object) -> bool:
    """Whether an entry's ``message`` is still its bytes."""
    return type(message) is Deferred


def message_of(path: Path, entry: Entry) -> Message:
    """The message of a message entry of the file at ``path``, decoded now if it was
    deferred (and kept decoded in the entry)."""
    message = entry["message"]
    if type(message) is not Deferred:
        return cast(Message, message)
    with _decoding:
        message = entry["message"]
        if type(message) is Deferred:
            try:
                decoded = jsonio.loads(memoryview(message.raw))
            except (ValueError, UnicodeDecodeError) as error:  # its syntax was checked
                where = f"entry {entry['id']}"
                raise SessionUnreadable(path, where, f"not JSON ({error})") from None
            if not isinstance(decoded, dict) or decoded.get("role") not in MESSAGE_ROLES:
                where, problem = f"entry {entry['id']}", "its message has no known role"
                raise SessionUnreadable(path, where, problem)
            entry["message"] = message = decoded
    return cast(Message, message)


def messages_of(path: Path, entries: Sequence[Entry]) -> list[Message]:
    """The messages of ``entries`` (message entries all), deferred ones decoded. Looked
    through at C speed first: a resumed transcript can be 50,000 messages, none deferred."""
    messages = list(map(_MESSAGE, entries))
    if Deferred in set(map(type, messages)):
        messages = [message_of(path, entry) for entry in entries]
    return messages


__all__ = [
    "Deferred",
    "deferred_entries",
    "is_deferred",
    "message_of",
    "messages_of",
]
