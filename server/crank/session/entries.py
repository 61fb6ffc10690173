"""The session file format: one header line, then one entry per line.

This module is the only place that knows how a line is spelled. Writing: entries are
compact JSON with ``type`` first (``{"type":"message",...``), so a byte scan can count
message lines without parsing them (see ``index.py``). Reading: every line is checked,
and anything that breaks the format is refused by name (file, line, entry); nothing is
skipped or guessed. Timestamps of entries are milliseconds since the epoch, like
message timestamps; the header's ``created`` is an ISO 8601 string for people.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Container, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict, get_args, get_origin, get_type_hints

from . import jsonio

try:
    import msgspec
except ImportError:  # pragma: no cover - a dependency; see jsonio: slower, still checked
    msgspec = None  # type: ignore[assignment]
from .errors import SessionUnreadable, TornSession

VERSION = 1
EntryType = Literal[
    "message",
    "branch",
    "compaction",
    "branchSummary",
    "modelChange",
    "label",
    "sessionInfo",
    "fileChanges",
    "revert",
    "keep",
]
"""Every kind of entry this version writes (docs/session.md describes each)."""
ENTRY_TYPES: tuple[EntryType, ...] = get_args(EntryType)


# What each kind of entry holds besides ``type``, ``id``, ``parentId`` and ``timestamp``:
# the one statement of an entry's shape. Writing is strict (``check_fields``: the keys
# each names, the required ones present, nothing else, and each value of its type,
# checked by msgspec); reading is not, so a file a newer version wrote still opens.


class MessageFields(TypedDict):
    message: dict[str, Any]
    """A ``crank.agent.messages.Message``, ``role`` first, large images as blob refs."""


class BranchFields(TypedDict):
    """Nothing: the entry's ``parentId`` is where the branch goes back to."""


class CompactionFields(TypedDict):
    summary: str
    firstKeptId: str
    tokensBefore: int
    usage: NotRequired[dict[str, Any]]
    usageBefore: NotRequired[dict[str, Any]]
    """What every entry before this line had used (``UsageTotals.as_usage``): a reader
    can then open at the compaction without reading the history it summarised."""
    forkedBefore: NotRequired[bool]
    """Whether the entries before this line held a fork (an entry whose parent is not the
    entry before it: a branch was made), so a reader that left them unread still knows
    whether the session has more than one branch (``SessionTree.forked``)."""


class BranchSummaryFields(TypedDict):
    summary: str
    fromId: str | None
    usage: NotRequired[dict[str, Any]]


class ModelChangeFields(TypedDict):
    api: str
    modelId: str


class LabelFields(TypedDict):
    targetId: str
    label: str | None


class SessionInfoFields(TypedDict):
    name: str


class FileChangesFields(TypedDict):
    runId: str
    toolCallId: str | None
    files: list[dict[str, Any]]


class RevertFields(TypedDict):
    runId: str
    reverts: list[str]
    files: list[dict[str, Any]]
    reverted: list[str]
    conflicts: list[dict[str, str]]


class KeepFields(TypedDict):
    runId: str
    paths: list[str]


ENTRY_FIELDS: dict[EntryType, type] = {
    "message": MessageFields,
    "branch": BranchFields,
    "compaction": CompactionFields,
    "branchSummary": BranchSummaryFields,
    "modelChange": ModelChangeFields,
    "label": LabelFields,
    "sessionInfo": SessionInfoFields,
    "fileChanges": FileChangesFields,
    "revert": RevertFields,
    "keep": KeepFields,
}


def _keys(spec: type) -> tuple[frozenset[str], frozenset[str]]:
    """A fields type's (required, allowed) keys, from its resolved hints: under
    ``from __future__ import annotations`` ``__required_keys__`` counts NotRequired ones."""
    hints = get_type_hints(spec, include_extras=True)
    required = frozenset(k for k, v in hints.items() if get_origin(v) is not NotRequired)
    return required, frozenset(hints)


_KEYS = {kind: _keys(spec) for kind, spec in ENTRY_FIELDS.items()}


def check_fields(kind: str, fields: Mapping[str, Any]) -> None:
    """Refuse (``ValueError``) an entry about to be written whose kind is unknown, or
    whose fields are not those its type names: a misspelt key would be written for
    good, and read back as a missing one."""
    keys = _KEYS.get(kind)  # type: ignore[call-overload]
    if keys is None:
        raise ValueError(f"{kind!r} is not a kind of session entry ({', '.join(ENTRY_TYPES)})")
    required, allowed = keys
    missing = sorted(required - fields.keys())
    unknown = sorted(fields.keys() - allowed)
    if missing or unknown:
        said = [f"missing {', '.join(missing)}"] if missing else []
        said += [f"unknown {', '.join(unknown)}"] if unknown else []
        raise ValueError(f"a {kind} entry's fields are wrong: {'; '.join(said)}")
    if msgspec is not None:  # the values too, strictly (no "3" for 3): about 2 us an entry
        try:
            msgspec.convert(fields, ENTRY_FIELDS[kind], strict=True)  # type: ignore[index]
        except msgspec.ValidationError as error:
            raise ValueError(f"a {kind} entry's fields are wrong: {error}") from None


MessageRole = Literal["user", "assistant", "toolResult"]
MESSAGE_ROLES: tuple[MessageRole, ...] = get_args(MessageRole)
MESSAGE_LINE_PREFIX = b'{"type":"message",'
SESSION_INFO_LINE_PREFIX = b'{"type":"sessionInfo",'
COMPACTION_LINE_PREFIX = b'{"type":"compaction",'

Entry = dict[str, Any]
Header = dict[str, Any]


def iso_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_entry_id(taken: Container[str], token: Callable[[int], str] = secrets.token_hex) -> str:
    """Eight random hex characters not already used in this file."""
    while True:
        candidate = token(4)
        if candidate not in taken:
            return candidate


def make_header(session_id: str, cwd: str, created: str | None = None) -> Header:
    return {
        "type": "session",
        "version": VERSION,
        "id": session_id,
        "cwd": cwd,
        "created": created or iso_now(),
    }


def encode(record: dict[str, Any]) -> bytes:
    """One line, ending in a newline. Raises ValueError for data JSON cannot hold."""
    try:
        text = jsonio.dumps_line(record)
    except (TypeError, ValueError) as error:
        kind = record.get("type", "?")
        raise ValueError(f"a {kind} entry cannot be written as JSON: {error}") from error
    return text + b"\n"


def split_lines(path: Path, data: bytes) -> list[bytes]:
    """The complete lines of a file. A last line with no newline is a torn write."""
    if not data:
        raise SessionUnreadable(path, "line 1", "the file is empty (no session header)")
    lines = data.split(b"\n")
    tail = lines.pop()
    if tail:
        raise TornSession(path, len(lines) + 1, len(tail))
    return lines


def parse_header(path: Path, line: bytes | memoryview) -> Header:
    record = _parse_object(path, 1, line)
    if record.get("type") != "session":
        raise SessionUnreadable(
            path, "line 1", 'the first line is not a session header ("type": "session")'
        )
    version = record.get("version")
    if version != VERSION:
        raise SessionUnreadable(
            path,
            "line 1",
            f"session format version {version!r} is not supported (this is version {VERSION})",
        )
    for key in ("id", "cwd", "created"):
        if not isinstance(record.get(key), str):
            raise SessionUnreadable(path, "line 1", f"the header has no string {key!r}")
    return record


class Shared:
    """What one read of one file shares between its entries (``_share_names``): each
    short name it repeats, and the ids of the tool calls whose results are still to
    come (a result's ``toolCallId`` is the same text as its call's ``id``)."""

    __slots__ = ("calls", "names")

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.calls: dict[str, str] = {}


def parse_entry(
    path: Path, number: int, line: bytes | memoryview, shared: Shared | None = None
) -> Entry:
    """Check one entry line's own shape (not yet how it relates to the others). With
    ``shared`` (one per file read), repeated short names share one string."""
    entry = _parse_object(path, number, line)
    entry_id = entry.get("id")
    if not isinstance(entry_id, str) or not entry_id:
        raise SessionUnreadable(path, f"line {number}", "the entry has no string 'id'")
    where = f"line {number} (entry {entry_id})"
    kind = entry.get("type")
    if not isinstance(kind, str):
        raise SessionUnreadable(path, where, "the entry has no string 'type'")
    if "parentId" not in entry:
        raise SessionUnreadable(path, where, "the entry has no 'parentId' key")
    parent = entry["parentId"]
    if parent is not None and not isinstance(parent, str):
        raise SessionUnreadable(path, where, f"'parentId' must be a string or null, not {parent!r}")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") not in MESSAGE_ROLES:
            raise SessionUnreadable(
                path, where, "a message entry needs a 'message' with a known role"
            )
        if shared is not None:
            _share_names(entry, message, shared)
    elif kind == "compaction":
        if not isinstance(entry.get("summary"), str) or not isinstance(
            entry.get("firstKeptId"), str
        ):
            raise SessionUnreadable(
                path, where, "a compaction entry needs 'summary' and 'firstKeptId'"
            )
    elif kind == "branchSummary":
        if not isinstance(entry.get("summary"), str):
            raise SessionUnreadable(path, where, "a branchSummary entry needs a 'summary'")
    elif kind not in ENTRY_TYPES and "message" in entry:
        raise SessionUnreadable(
            path, where, f"unknown entry type {kind!r} carries a message; refusing to skip it"
        )
    return entry


_SHORT = 64
_REPLY_KEYS = ("stopReason", "model")


def _share_names(entry: Entry, message: dict[str, Any], shared: Shared) -> None:
    """One string object for each short name the entries of a file repeat (types, roles,
    tool names, models) and for a tool call's id and its result's ``toolCallId``: a
    decoder makes a new one per line, and at tens of thousands of entries those copies
    are megabytes of a resumed session. Equal values; only the duplicates go. ``shared``
    belongs to one read of one file. Only the keys each role has are looked at: this
    runs once per entry of every session opened."""
    share = shared.names.setdefault
    kind = entry["type"]
    entry["type"] = share(kind, kind)
    role = message["role"]  # checked to be a known role, so a short string
    message["role"] = role = share(role, role)
    if role == "toolResult":
        name = message.get("toolName")
        if type(name) is str and len(name) < _SHORT:
            message["toolName"] = share(name, name)
        call = message.get("toolCallId")
        if type(call) is str:  # its call's id, while no other result took it
            message["toolCallId"] = shared.calls.pop(call, call)
        return
    if role != "assistant":
        return
    for key in _REPLY_KEYS:
        value = message.get(key)
        if type(value) is str and len(value) < _SHORT:
            message[key] = share(value, value)
    content = message.get("content")
    if type(content) is list:
        for block in content:
            if type(block) is dict:
                value = block.get("type")
                if type(value) is str:
                    block["type"] = share(value, value)
                name = block.get("name")
                if type(name) is str and len(name) < _SHORT:
                    block["name"] = share(name, name)
                call = block.get("id")
                if value == "toolCall" and type(call) is str:
                    shared.calls[call] = call


def _parse_object(path: Path, number: int, line: bytes | memoryview) -> dict[str, Any]:
    try:
        record = jsonio.loads(line)
    except (ValueError, UnicodeDecodeError) as error:
        raise SessionUnreadable(path, f"line {number}", f"not JSON ({error})") from None
    if not isinstance(record, dict):
        raise SessionUnreadable(path, f"line {number}", "not a JSON object")
    return record
