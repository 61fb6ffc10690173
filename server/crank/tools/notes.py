"""``note_save`` and ``note_read``: notes the agent keeps for the rest of the session.

The workspace hands them a ``NoteSource`` (crank.session.notes.Notes over the active
session's notes file). A note is never touched by a context policy or a compaction,
so what the agent writes down stays reachable after the turns that found it were
cleared, trimmed or summarised. Every request lists the keys (never the texts).

Notes are a harmless write: they change nothing in the project and run nothing, so
they are never asked about, and they are offered in every permission mode, read-only
included. What ``note_read`` returns is data the agent wrote earlier, not instructions.
"""

from __future__ import annotations

from typing import Protocol

import anyio.to_thread

from crank.agent.tools import Tool, ToolCall, ToolError, ToolInfo, ToolOutput

SAVE_INFO = ToolInfo("note_save", label="Save note")
READ_INFO = ToolInfo("note_read", label="Read note")
"""What the note tools say about themselves (``ToolInfo``)."""


class NoteSource(Protocol):
    def keys(self) -> list[str]: ...
    def read(self, key: str) -> str | None: ...
    def all(self) -> list[tuple[str, str]]: ...
    def save(self, key: str, text: str) -> bool: ...


KEY_SCHEMA = {
    "type": "string",
    "description": "1-64 letters, digits, '.', '_' or '-', e.g. 'test-command'.",
}
SAVE_PARAMETERS = {
    "type": "object",
    "properties": {
        "key": KEY_SCHEMA,
        "text": {"type": "string", "description": "The note (at most 8,000 characters)."},
    },
    "required": ["key", "text"],
    "additionalProperties": False,
}
READ_PARAMETERS = {
    "type": "object",
    "properties": {"key": {**KEY_SCHEMA, "description": "The note to read; omit for all."}},
    "additionalProperties": False,
}


def _refusal(exc: Exception) -> ToolError:
    return ToolError(str(exc))


def make_note_tools(source: NoteSource) -> list[Tool]:
    # The store raises its own error type (crank.session.notes.NoteError); this layer
    # does not import it, so any ValueError-like refusal is reported as it is said.
    async def save(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        key, text = call.arguments["key"], call.arguments["text"]
        try:  # a durable save waits for the disk: off the event loop
            new = await anyio.to_thread.run_sync(source.save, key, text)
            keys = source.keys()
        except Exception as exc:
            raise _refusal(exc) from exc
        verb = "Saved" if new else "Replaced"
        return ToolOutput(f"{verb} note {key!r} ({len(text)} characters). Notes: {', '.join(keys)}")

    async def read(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        key = call.arguments.get("key")
        try:
            if key is not None:
                text = source.read(key)
                if text is None:
                    known = ", ".join(source.keys()) or "(none yet)"
                    raise ToolError(f"no note {key!r}; the notes are: {known}")
                return ToolOutput(f"[note {key}]\n{text}")
            notes = source.all()
        except ToolError:
            raise
        except Exception as exc:
            raise _refusal(exc) from exc
        if not notes:
            return ToolOutput("No notes saved yet (note_save keeps one).")
        return ToolOutput("\n\n".join(f"[note {name}]\n{text}" for name, text in notes))

    return [
        Tool(
            info=SAVE_INFO,
            name="note_save",
            description=(
                "Save a short note under a key for the rest of this session (saving the "
                "same key again replaces it). Notes are kept word for word whatever happens "
                "to the conversation (old results cleared, turns trimmed, a summary): write "
                "down what you will need again, such as where something is, the exact "
                "command that works, a decision and why."
            ),
            parameters=SAVE_PARAMETERS,
            execute=save,
            snippet="note_save: keep a note (key, text) for the rest of the session",
            guidelines=(
                "The keys of your saved notes are listed at the end of each request. "
                "Before reading a file or running a command again for something you "
                "already found, check whether a note has it (note_read).",
            ),
        ),
        Tool(
            info=READ_INFO,
            name="note_read",
            description=(
                "Read one saved note by key, or every note when no key is given. Reads "
                "only this session's notes."
            ),
            parameters=READ_PARAMETERS,
            execute=read,
            snippet="note_read: read your saved notes",
        ),
    ]
