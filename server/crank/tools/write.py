"""write: create a file or replace all of it.

Parent directories are created. An existing file keeps its line endings and BOM (the
content is converted to them); a file open in the editor is changed through the
editor, so the user can undo it there. The old file is loaded (for the diff and the
approval preview) only when it is UTF-8 text within ``MAX_TEXT_BYTES``; a larger or
binary one is replaced without being read past its first bytes, and the result says
there is no diff or undo for it.
"""

from __future__ import annotations

from typing import Any

import anyio

from crank.agent.tools import Tool, ToolCall, ToolError, ToolInfo, ToolOutput

from .change import apply_change, declined, unified_diff
from .context import ToolContext
from .details import FileChangeDetails
from .textfile import MAX_TEXT_BYTES, human_size, load_previous, sized

INFO = ToolInfo(
    "write", kind="edit", label="Write", shows="path", edits_files=True, details=FileChangeDetails
)
"""What write says about itself to frontends and clients (``ToolInfo``)."""


def omitted_note(size: int) -> str:
    """Why a replaced file has no diff: it was never loaded."""
    why = (
        f"over the {human_size(MAX_TEXT_BYTES)} limit for files loaded whole"
        if size > MAX_TEXT_BYTES
        else "not UTF-8 text"
    )
    return (
        f"The old file was {sized(size)}, {why}, so it was not loaded: there is no diff "
        "of this change and its old content cannot be restored by undoing it."
    )


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to write, relative to the workspace."},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


def make_write(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        path = await ctx.resolve(args["path"], call)
        display = ctx.display(path)
        if path.is_dir():
            raise ToolError(f"{display} is a directory; give a file path.")
        before = await load_previous(path, ctx.files, display)
        content = args["content"]
        if before is not None:
            content = content.removeprefix("\ufeff").replace("\r\n", "\n")
        applied = await apply_change(ctx, call=call, path=path, before=before, new_body=content)
        if not applied.decision.allowed:
            return declined(f"writing {display}", applied.decision)
        size = len(content.encode("utf-8"))
        verb = "Overwrote" if before else "Created"
        note = f" {applied.note}" if applied.note else ""
        if before is not None and before.omitted:
            return ToolOutput(
                f"{verb} {display} ({size} bytes, {applied.where}).{note} "
                f"{omitted_note(before.omitted)}",
                details={
                    "path": str(path),
                    "oldText": "",
                    "newText": content,
                    "diff": "",
                    "oldTextOmitted": before.omitted,
                },
            )
        old = before.body if before else ""
        diff = await anyio.to_thread.run_sync(
            unified_diff, display, old, content
        )  # large: off the loop
        details = {"path": str(path), "oldText": old, "newText": content, "diff": diff}
        if before is None:
            details["created"] = True  # no old file: oldText is empty because there is none
        return ToolOutput(
            f"{verb} {display} ({size} bytes, {applied.where}).{note}", details=details
        )

    return Tool(
        info=INFO,
        name="write",
        description=(
            "Write a file with the given content, creating parent directories. Replaces the "
            "whole file if it exists (its line endings and BOM are kept)."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="Create or overwrite a file",
        guidelines=(
            "Use write only for new files or complete rewrites.",
            "Show file paths clearly when working with files.",
        ),
        keep="head",
        mutates=True,
    )
