"""``recall``: the exact text of what compaction summarised away, from the session log.

The workspace offers it only while something on the active branch has been compacted,
and hands it a ``RecallSource`` (crank.session.recall.Recall) for the open session.
Two forms: ``query`` (text, or a regular expression with ``regex: true``) returns the
matching passages with their entry ids; ``entryId`` returns that entry whole (from
line ``offset``), bounded like every tool result.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from crank.agent.tools import Tool, ToolCall, ToolError, ToolInfo, ToolOutput

INFO = ToolInfo("recall", label="Recall")
"""What recall says about itself to frontends and clients (``ToolInfo``)."""


class RecalledPassage(Protocol):
    @property
    def entry_id(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def first_line(self) -> int: ...
    @property
    def text(self) -> str: ...


class RecallSource(Protocol):
    def search(self, query: str, *, regex: bool) -> Sequence[RecalledPassage]: ...
    def entry(self, entry_id: str, offset: int = 1) -> str | None: ...


PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Text to find (case-insensitive)."},
        "regex": {"type": "boolean", "description": "Treat query as a regular expression."},
        "entryId": {"type": "string", "description": "Fetch this entry whole instead."},
        "offset": {"type": "integer", "minimum": 1, "description": "First line of the entry."},
    },
    "additionalProperties": False,
}


def make_recall(source: RecallSource) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        if "entryId" in args:
            text = source.entry(args["entryId"], int(args.get("offset", 1)))
            if text is None:
                raise ToolError(
                    f"no compacted entry {args['entryId']} on this session's active branch"
                )
            return ToolOutput(text)
        query = args.get("query")
        if not isinstance(query, str) or not query:
            raise ToolError("give query (text to find) or entryId (an entry to fetch)")
        regex = bool(args.get("regex", False))
        try:
            passages = source.search(query, regex=regex)
        except re.error as exc:
            raise ToolError(f"not a regular expression: {exc}") from exc
        if not passages:
            return ToolOutput(f"nothing compacted away matches {query!r}")
        return ToolOutput(
            "\n\n".join(
                f"--- entry {p.entry_id} ({p.role}), from line {p.first_line}:\n{p.text}"
                for p in passages
            )
        )

    return Tool(
        info=INFO,
        name="recall",
        description=(
            "Read back, word for word, parts of this conversation that were compacted "
            "into a summary or trimmed out of view. Searches only this session's current branch (never other "
            "sessions or abandoned branches). Give query (and regex: true for a regular "
            "expression) to find passages with their entry ids, or entryId (and offset) "
            "to fetch one entry whole."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="recall: exact text from the conversation before the summary",
        guidelines=(
            "When you need an exact detail from before the conversation summary or from "
            "turns removed from view (an error "
            "message, a command's output, a value), use recall instead of guessing or "
            "running things again.",
        ),
    )
