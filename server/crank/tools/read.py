"""read: a file's text, a window at a time.

Lines come back as they are, without line numbers: what the model sees is exactly
what ``edit`` will match, and a copied line never carries a number prefix into an
``oldText``. Positions are given in the closing note instead ("lines 1-2000 of 5120,
offset=2001 to continue"). Open documents are read from the editor's buffer.
"""

from __future__ import annotations

from typing import Any

from crank.agent.tools import MAX_BYTES, MAX_LINES, Tool, ToolCall, ToolError, ToolOutput, truncate

from .agreement import differing, read_note
from .context import ToolContext
from .textfile import load_text

NOTE_ROOM_LINES = 3
NOTE_ROOM_BYTES = 512

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to read, relative to the workspace."},
        "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines to show."},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def window(body: str, offset: int, limit: int | None, display: str) -> str:
    """Lines ``offset``.. of ``body`` within the budget, plus a note on how to go on."""
    lines = body.split("\n")
    if body.endswith("\n"):
        lines.pop()
    total = len(lines)
    if total == 0:
        return f"({display} is empty)"
    if offset > total:
        raise ToolError(f"offset {offset} is past the end of {display}, which has {total} lines.")
    start = offset - 1
    wanted = lines[start : start + limit] if limit else lines[start:]
    cut = truncate(
        "\n".join(wanted),
        "head",
        max_lines=MAX_LINES - NOTE_ROOM_LINES,
        max_bytes=MAX_BYTES - NOTE_ROOM_BYTES,
    )
    shown_end = start + cut.kept_lines
    text = cut.text
    if cut.truncated and cut.kept_lines == 1 and len(wanted[0]) > len(text):
        return (
            f"{text}\n\n[Line {offset} of {display} is longer than {MAX_BYTES // 1024} KB and "
            f"was cut. Use offset={offset + 1} to read on from the next line.]"
        )
    if shown_end < total:
        return (
            f"{text}\n\n[Showing lines {offset}-{shown_end} of {total}. "
            f"Use offset={shown_end + 1} to continue.]"
        )
    return text


def make_read(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        path = await ctx.resolve(args["path"], call)
        display = ctx.display(path)
        text = await load_text(path, ctx.documents, display)
        content = window(text.body, args.get("offset", 1), args.get("limit"), display)
        unsaved = text.open_in_editor and bool(await differing(ctx, [path]))
        if unsaved:
            content += "\n\n" + read_note(display)
        details = {"path": str(path), "openInEditor": text.open_in_editor, "unsaved": unsaved}
        return ToolOutput(content, details=details)

    return Tool(
        name="read",
        description=(
            "Read a UTF-8 text file. Returns its lines exactly as written (no line numbers), "
            f"at most {MAX_LINES} lines or {MAX_BYTES // 1024} KB at a time; the last line then "
            "says which offset to continue from. Use offset (1-based) and limit for large files. "
            "Files open in the editor are read with their unsaved changes."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="Read the contents of a file",
        guidelines=(
            "Read a file before changing it; read large files in windows with offset and limit.",
            "Show file paths clearly when working with files.",
        ),
        keep="head",
    )
