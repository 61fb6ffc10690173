"""Whether the editor's text and the disk agree, and what the model is told when not.

A file open in the editor has two copies: the buffer (what ``read``, ``grep`` and
``edit`` see) and the file on disk (what every command ``bash`` runs sees). After an
agent's change the two are made equal (``change.apply_change`` checks it); the one
moment they differ is when the user has typed into a buffer and not saved. Then the
tools say which copy the model is looking at, so it never reasons about one and tests
the other without knowing.

Texts are compared as bodies (LF line endings, no BOM): an editor reports a CRLF file's
text with its own line endings and never shows the BOM, and neither changes what a
command reads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

import anyio

from crank.agent.tools import ToolError, ToolOutput

from .context import ToolContext
from .textfile import MAX_TEXT_BYTES, looks_binary, open_regular, split_text


def body_of(raw: str) -> str:
    return split_text(raw).body


def most_bytes(buffer: str) -> int:
    """The largest file whose body could equal ``buffer``'s: a file holds at most a CR
    before every LF and a BOM more than the body, so a bigger one differs unread (and
    memory stays bounded by the buffer's own size)."""
    return 2 * len(body_of(buffer).encode("utf-8")) + 3


def disk_body(path: Path, most: int | None = None) -> str | None:
    """The file's text as a body, or None when there is no readable text file there
    (or it is bigger than ``most`` bytes, MAX_TEXT_BYTES by default, so it is not read).
    Only a regular file is opened: a FIFO there would block the thread for ever."""
    limit = MAX_TEXT_BYTES if most is None else most
    try:
        with open_regular(path, str(path)) as (handle, info):
            if info.st_size > limit:
                return None
            data = handle.read(limit + 1)
    except (OSError, ToolError):
        return None
    if len(data) > limit:
        return None
    if looks_binary(data):
        return None
    try:
        return body_of(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def agrees(buffer: str, path: Path) -> bool:
    """Does the file on disk hold the same text as ``buffer``?"""
    return disk_body(path, most_bytes(buffer)) == body_of(buffer)


async def differing(ctx: ToolContext, paths: Iterable[Path]) -> list[Path]:
    """Those of ``paths`` that are open in the editor with text the disk does not hold."""
    found: list[Path] = []
    for path in sorted(set(paths)):
        buffer = await ctx.files.read(path)
        if buffer is not None and not await anyio.to_thread.run_sync(agrees, buffer, path):
            found.append(path)
    return found


def read_note(display: str) -> str:
    return (
        f"[{display} is open in the editor and this is the editor's text, which differs "
        "from the file on disk (unsaved changes, or the file changed on disk since). "
        "Commands (bash) see the disk.]"
    )


def searched_note(ctx: ToolContext, paths: list[Path]) -> str:
    names = ", ".join(ctx.display(path) for path in paths)
    return (
        f"[Searched the editor's text of {names}, which differs from the file on disk "
        "(unsaved changes, or the file changed on disk since). Commands (bash) see the disk.]"
    )


async def command_note(ctx: ToolContext) -> str | None:
    """For a command's result: the open files whose unsaved text the command did not see."""
    inside = [p for p in ctx.files.paths() if p.is_relative_to(ctx.root)]
    unsaved = await differing(ctx, inside)
    if not unsaved:
        return None
    names = ", ".join(ctx.display(path) for path in unsaved)
    return (
        f"[Note: the editor's text of {names} differs from the disk (unsaved changes); "
        "this command saw the file on disk, not the editor's text.]"
    )


def with_note(output: ToolOutput, note: str | None) -> ToolOutput:
    """``output`` with ``note`` as its last paragraph (where a cut output keeps it)."""
    if note is None:
        return output
    return dataclasses.replace(output, content=f"{output.content}\n\n{note}")
