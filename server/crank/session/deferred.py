"""Message entries read now whose message is decoded when somebody first asks for it.

Resuming a long session decoded every message of its file, although a session that
outgrew its window many times only shows its model what came after its newest
compaction: decoding the tens of thousands of messages before it was most of the time
of the open and most of its memory (a decoded message is about twice its bytes). So
``SessionTree.read`` reads the lines before the newest compaction's kept entry with
``deferred_entries``, all of them in one decode: each entry is checked strictly, as our
writer spells it (its envelope, exactly the fields its kind names, the message's JSON
syntax and its role, which our writer spells first), and a message is kept as its bytes
(a ``Deferred``). Everything else is read as before.

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
from typing import Any, NotRequired, Union, cast, get_args, get_origin, get_type_hints

from crank.agent.messages import Message, Usage

from . import jsonio
from .entries import ENTRY_FIELDS, MESSAGE_ROLES, Entry, EntryType
from .errors import SessionUnreadable

try:
    import msgspec
except ImportError:  # pragma: no cover - without msgspec every message is read at once
    msgspec = None  # type: ignore[assignment]

_KIND = "message"
_MESSAGE = operator.itemgetter("message")
_ROLE_HEADS = tuple((f'{{"role":"{role}",'.encode(), role) for role in MESSAGE_ROLES)
"""How our writer begins each kind of message (``role`` first, then more keys)."""
_HEAD = max(len(head) for head, _ in _ROLE_HEADS)

if msgspec is not None:

    def _line_type(kind: EntryType, fields: type) -> type:
        """A line of one kind of entry, exactly as our writer spells it (the envelope,
        then the fields ``ENTRY_FIELDS`` names, nothing else), a message as its bytes."""
        spelled: list[tuple[str, Any] | tuple[str, Any, Any]] = [
            ("id", str),
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

    class _Usage(msgspec.Struct):
        """An assistant message's ``usage``, the rest of it skipped."""

        usage: dict[str, Any]

    _decode_usage = msgspec.json.Decoder(_Usage).decode
    _decode_usages = msgspec.json.Decoder(_Usage).decode_lines


class Deferred:
    """A message entry's message as the file spelled it: its JSON (``raw``, a
    ``msgspec.Raw`` of the line, checked for syntax), its ``role`` and, for a reply,
    its ``usage`` when that was read with the others (None: not read)."""

    __slots__ = ("raw", "role", "usage")

    def __init__(self, raw: Any, role: str) -> None:
        self.raw = raw
        self.role = role
        self.usage: dict[str, Any] | None = None

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
    (``entries.parse_entry``), which refuses a broken one by name. Decoded in one call:
    line by line, the Python around each decode cost more than the decode."""
    if msgspec is None:
        return None
    try:
        lines: list[Any] = _decode_zone(zone)
    except msgspec.DecodeError:  # a ValidationError too
        return None
    entries: list[Entry] = []
    replies: list[Deferred] = []
    append = entries.append
    for line in lines:
        if type(line) is _MESSAGE_LINE:
            raw = line.message
            role = _role(raw)
            if role is None or not line.id:
                return None
            message = Deferred(raw, role)
            append(
                {
                    "type": _KIND,
                    "id": line.id,
                    "parentId": line.parentId,
                    "timestamp": line.timestamp,
                    "message": message,
                }
            )
            if role == "assistant":
                replies.append(message)
        else:  # the few others: as an eager read gives them, key for key
            fields = msgspec.structs.asdict(line)
            if not line.id:
                return None
            kind = line.__struct_config__.tag
            append({"type": kind, **{k: v for k, v in fields.items() if v is not msgspec.UNSET}})
    _read_usages(replies)
    return entries


def _read_usages(replies: list[Deferred]) -> None:
    """Every reply's ``usage``, the rest of each skipped, in one decode: the session's
    totals are summed at every open. A reply with no usage object is left to
    ``reply_usage``, which decodes it whole as an eager read would."""
    if not replies:
        return
    try:
        usages = _decode_usages(b"\n".join([reply.raw for reply in replies]))
    except msgspec.DecodeError:
        return
    for reply, usage in zip(replies, usages, strict=True):
        reply.usage = usage.usage


def _role(raw: Any) -> str | None:
    """The role our writer spells first, if it is one: a slice of the bytes, no decode."""
    head = memoryview(raw)[:_HEAD].tobytes()
    for prefix, role in _ROLE_HEADS:
        if head.startswith(prefix):
            return role
    return None


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


def reply_usage(path: Path, entry: Entry) -> Usage | dict[str, Any] | None:
    """The ``usage`` of a message entry that holds an assistant reply, None for any
    other message. A deferred reply stays deferred: only its usage is decoded (unless
    it has none that is an object: then the whole message, as an eager read would)."""
    held = entry["message"]
    if type(held) is Deferred:
        if held.role != "assistant":
            return None
        if held.usage is not None:
            return held.usage
        try:
            usage: dict[str, Any] = _decode_usage(held.raw).usage
            return usage
        except msgspec.DecodeError:
            pass
    message = message_of(path, entry)
    if message["role"] != "assistant":
        return None
    return message["usage"]


__all__ = [
    "Deferred",
    "deferred_entries",
    "is_deferred",
    "message_of",
    "messages_of",
    "reply_usage",
]
