"""The one path every file change takes: preview, approval, then editor or disk.

A change is computed first (so the user approves exactly what will happen), then
``approve`` is asked, then it is applied through ``apply_edit`` when the file is open
in the editor (so undo and dirty state work there) or written atomically when it is
not. If the text moved on while the user was deciding, nothing is written and the
model is told to look again.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import anyio

from crank.agent.tools import ToolCall, ToolError, ToolOutput

from .context import Decision, DiffPreview, EditRefused, ToolContext, approval_request
from .textfile import Text, current_raw, write_atomic


def unified_diff(display: str, old: str, new: str, context: int = 3) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{display}",
        tofile=f"b/{display}",
        n=context,
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )


def declined(action: str, decision: Decision) -> ToolOutput:
    text = f"The user declined {action}."
    if decision.reason:
        text += f" Their reason: {decision.reason}"
    return ToolOutput(text, is_error=True, details={"declined": True, "reason": decision.reason})


async def apply_change(
    ctx: ToolContext,
    *,
    call: ToolCall,
    path: Path,
    before: Text | None,
    new_body: str,
) -> Decision:
    """Ask, then apply ``new_body`` (LF, no BOM) in ``before``'s line ending and BOM.

    Returns the decision; when it is a rejection nothing was changed. Raises ToolError
    if the editor refused or the text changed while waiting.
    """
    display = ctx.display(path)
    old_body = before.body if before else ""
    preview: DiffPreview = {
        "kind": "diff",
        "path": str(path),
        "oldText": old_body,
        "newText": new_body,
    }
    if before is not None and before.omitted:
        preview["oldTextOmitted"] = before.omitted
    decision = await ctx.approve(approval_request(call, preview))
    if not decision.allowed:
        return decision
    new_raw = before.encode(new_body) if before else new_body
    buffer = ctx.documents.text_of(path)
    if buffer is not None:
        if before is None or buffer != before.raw:
            raise ToolError(f"{display} changed in the editor while waiting; read it again.")
        try:
            await ctx.apply_edit(path, before.raw, new_raw)
        except EditRefused as exc:
            raise ToolError(f"The editor refused the change to {display}: {exc}") from None
        return decision
    if before is not None and before.open_in_editor:
        raise ToolError(f"{display} was closed in the editor while waiting; read it again.")
    current = await anyio.to_thread.run_sync(current_raw, path)
    expected = (before.stamp if before.omitted else before.raw) if before else None
    if current != expected:
        raise ToolError(f"{display} changed on disk while waiting; read it again.")
    try:
        await anyio.to_thread.run_sync(write_atomic, path, new_raw)
    except OSError as exc:
        raise ToolError(f"Could not write {display}: {exc.strerror or exc}") from None
    return decision
