"""Message entries read now whose message is decoded when somebody first asks for it.

Resuming a long session decoded every message of its file, although a session that
outgrew its window many times only shows its model what came after its newest
compaction: decoding the tens of thousands of messages before it was most of the time
of the open and most of its memory (a decoded message is about twice its bytes). So
``SessionTree.read`` reads the lines before the newest compaction's kept entry with
``parse_deferred``: the entry's envelope is decoded and checked (its type, id, parent and
timestamp; the message's JSON syntax and its role, which our writer spells first), and
its message is kept as its bytes (a ``Deferred``). Everything else is read as before.

Who reads an entry's message goes through ``message_of``, which decodes a deferred one
once (with ``jsonio.loads``, so the result is exactly what an eager read gives) and puts
it in the entry in place of its bytes. Only the message is deferred, never a check that
could refuse the file: a line this reader cannot vouch for (another writer's spelling,
a key it does not know, a timestamp that is not an integer) is read eagerly, as before.
Entries read from a file are never written again (the log only appends new ones), so a
``Deferred`` never reaches an encoder.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from crank.agent.messages import Message, Usage

from . import jsonio
from .entries import MESSAGE_LINE_PREFIX, MESSAGE_ROLES, Entry
from .errors import SessionUnreadable

try:
    import msgspec
except ImportError:  # pragma: no cover - without msgspec every message is read at once
    msgspec = None  # type: ignore[assignment]

_KIND = "message"
_MESSAGE = operator.itemgetter("message")
_ROLE_HEADS = tuple((f'{{"role":"{role}",'.encode(), role) for role in MESSAGE_ROLES)
"""How our writer begins each kind of message (``role`` first, then more keys)."""

if msgspec is not None:

    class _MessageLine(msgspec.Struct, forbid_unknown_fields=True):
        """A message line with exactly the keys our writer gives it, its message left
        as its bytes (their JSON syntax checked all the same)."""

        type: str
        id: str
        parentId: str | None
        timestamp: int
        message: msgspec.Raw

    class _Usage(msgspec.Struct):
        """An assistant message's ``usage``, the rest of it skipped."""

        usage: dict[str, Any]

    _decode_line = msgspec.json.Decoder(_MessageLine).decode
    _decode_usage = msgspec.json.Decoder(_Usage).decode


class Deferred:
    """A message entry's message as the file spelled it: its JSON (``raw``, a
    ``msgspec.Raw`` of the line, checked for syntax) and its ``role``."""

    __slots__ = ("raw", "role")

    def __init__(self, raw: Any, role: str) -> None:
        self.raw = raw
        self.role = role

    def __repr__(self) -> str:
        return f"Deferred({self.role}, {len(memoryview(self.raw))} bytes)"


_decoding = threading.Lock()
"""One decode per deferred message, whichever thread asks first: the entry then holds
one message object, the one every reader is given."""


def parse_deferred(line: bytes | memoryview) -> Entry | None:
    """A message line as an entry whose message is deferred, or None when this line
    must be read eagerly (``entries.parse_entry``): not a message line as our writer
    spells it, or one whose envelope or role this reader cannot vouch for."""
    if msgspec is None or line[: len(MESSAGE_LINE_PREFIX)] != MESSAGE_LINE_PREFIX:
        return None
    if type(line) is memoryview:  # its own bytes: the message keeps this line, not a block
        line = line.tobytes()
    try:
        parsed = _decode_line(line)
    except msgspec.DecodeError:  # a ValidationError too: the eager read names the fault
        return None
    raw = parsed.message
    # Our writer puts the message last: it begins this far into the line (elsewhere,
    # no role is found there and the line is read eagerly).
    role = _role_at(line, len(line) - len(raw) - 1)
    if not parsed.id or role is None:
        return None
    return {
        "type": _KIND,
        "id": parsed.id,
        "parentId": parsed.parentId,
        "timestamp": parsed.timestamp,
        "message": Deferred(raw, role),
    }


def _role_at(line: bytes, start: int) -> str | None:
    for prefix, role in _ROLE_HEADS:
        if line.startswith(prefix, start):
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
        try:
            usage: dict[str, Any] = _decode_usage(held.raw).usage
            return usage
        except msgspec.DecodeError:
            pass
    message = message_of(path, entry)
    if message["role"] != "assistant":
        return None
    return message["usage"]


__all__ = ["Deferred", "is_deferred", "message_of", "messages_of", "parse_deferred", "reply_usage"]
