"""The one path every file change takes: preview, approval, then editor or disk.

A change is computed first (so the user approves exactly what will happen), then
``approve`` is asked, then it is applied through ``apply_edit`` when the file is open
in the editor (so the editor shows it and one undo reverts it; the editor saves it) or
written atomically when it is not. If the text moved on while the user was deciding,
nothing is written and the model is told to look again.

Whichever way it went, the change is on disk before this returns: the disk is read
back and compared with the editor's text, because every command the agent runs next
(tests, builds, grep) reads the disk. A change that is only in the buffer is an error
that says so, never a success.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio

from crank.agent.tools import ToolCall, ToolError, ToolOutput

from .agreement import agrees
from .context import (
    Decision,
    DiffPreview,
    EditNotSaved,
    EditRefused,
    ToolContext,
    approval_request,
)
from .textfile import Text, current_raw, write_atomic


@dataclass(frozen=True)
class Applied:
    """What ``apply_change`` did: the decision, and (when allowed) where the change is."""

    decision: Decision
    where: str = "on disk"
    note: str | None = None
    """What the editor said about how it landed (say, unsaved user changes saved too)."""


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
) -> Applied:
    """Ask, then apply ``new_body`` (LF, no BOM) in ``before``'s line ending and BOM.

    Returns the decision (a rejection changed nothing) and where the change went.
    Raises ToolError if the editor refused, the text changed while waiting, or the
    change did not reach the disk.
    """
    display = ctx.display(path)
    old_body = before.body if before else ""
    preview: DiffPreview = {
        "kind": "diff",
        "path": str(path),
        "oldText": old_body,
        "newText": new_body,
    }
    opened = before is not None and before.open_in_editor
    if opened and before and not await anyio.to_thread.run_sync(agrees, before.raw, path):
        preview["unsavedChanges"] = True
    if before is not None and before.omitted:
        preview["oldTextOmitted"] = before.omitted
    if before is None:
        preview["created"] = True
    decision = await ctx.approve(approval_request(call, preview))
    if not decision.allowed:
        return Applied(decision)
    new_raw = before.encode(new_body) if before else new_body
    buffer = await ctx.files.read(path)
    if buffer is not None:
        if before is None or buffer != before.raw:
            raise ToolError(f"{display} changed in the editor while waiting; read it again.")
        try:
            note = await ctx.apply_edit(path, before.raw, new_raw)
        except EditRefused as exc:
            raise ToolError(f"The editor refused the change to {display}: {exc}") from None
        except EditNotSaved as exc:
            raise ToolError(
                f"The change to {display} is in the editor's buffer but not on disk: {exc} "
                "Commands (bash) still see the old file."
            ) from None
        await _check_on_disk(ctx, path, display, new_raw)
        return Applied(decision, "in the editor and on disk", note)
    if before is not None and before.open_in_editor:
        raise ToolError(f"{display} was closed in the editor while waiting; read it again.")
    current = await anyio.to_thread.run_sync(current_raw, path)
    expected = (before.stamp if before.omitted else before.raw) if before else None
    if current != expected:
        raise ToolError(f"{display} changed on disk while waiting; read it again.")
    try:
        await anyio.to_thread.run_sync(partial(write_atomic, path, new_raw, exact=True))
    except OSError as exc:
        raise ToolError(f"Could not write {display}: {exc.strerror or exc}") from None
    return Applied(decision)


async def _check_on_disk(ctx: ToolContext, path: Path, display: str, new_raw: str) -> None:
    """The editor said the change landed: the disk must now hold the editor's text."""
    shown = await ctx.files.read(path)
    expected = new_raw if shown is None else shown
    if not await anyio.to_thread.run_sync(agrees, expected, path):
        raise ToolError(
            f"The change to {display} is in the editor, but the file on disk does not hold "
            "the editor's text, so commands (bash) would see something else; read it "
            "again and check that the editor saved it."
        )
