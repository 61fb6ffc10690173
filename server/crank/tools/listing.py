"""ls and find: what is in a directory, and which files match a glob.

Both hold only what they can show: ls streams a directory's entries and keeps the
first ``limit`` by name (a heap), however many there are; find stops at ``limit``
matches and walks a huge directory in part (see ``walk``). A ``limit`` above the output
budget's MAX_LINES is taken as MAX_LINES less room for the note: no more could be shown.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterator
from pathlib import Path

import anyio

from crank.agent.tools import (
    MAX_LINES,
    NOTE_ROOM_LINES,
    Tool,
    ToolCall,
    ToolError,
    ToolInfo,
    ToolOutput,
)

from .context import ToolContext
from .globs import compile_glob, matches_path
from .names import shown
from .walk import crowded_note, open_folder, walk_batches

LS_INFO = ToolInfo("ls", kind="read", label="List", shows="path", result="joined")
FIND_INFO = ToolInfo("find", kind="search", label="Find", shows="pattern", result="joined")
"""What ls and find say about themselves (``ToolInfo``)."""

MOST_SHOWN = MAX_LINES - NOTE_ROOM_LINES
LS_LIMIT = 500
FIND_LIMIT = 1000


def capped(items: list[str], total: int, limit: int, note: str) -> str:
    """One item a line, at most ``limit`` of them, and ``note`` if some were left out."""
    text = "\n".join(items[:limit])
    return f"{text}\n\n[{note}]" if total > limit else text


def _name_of(entry: os.DirEntry[str]) -> str:
    name = shown(entry.name)
    try:
        if entry.is_symlink():
            return name + "@"
        if entry.is_dir():
            return name + "/"
    except OSError:
        pass
    return name


def _entries(directory: Path, display: str, limit: int, stop: list[bool]) -> tuple[list[str], int]:
    """The first ``limit`` entries by name, and how many there are in all. The folder
    is opened once, without following a link, and must be the checked one
    (``walk.open_folder``); its entries are read from that descriptor."""
    total = 0

    def names(scan: Iterator[os.DirEntry[str]]) -> Iterator[tuple[str, str]]:
        nonlocal total
        for entry in scan:
            if stop[0]:
                return
            total += 1
            name = _name_of(entry)
            yield (name.lower(), name)

    folder = open_folder(directory, display)
    try:
        with os.scandir(folder) as scan:
            first = heapq.nsmallest(limit, names(scan))
    except PermissionError:
        raise ToolError(f"Permission denied listing {display}") from None
    finally:
        os.close(folder)
    return [name for _, name in first], total


def make_ls(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        path = await ctx.resolve(args.get("path", "."), call)
        display = ctx.display(path)
        limit = min(args.get("limit", LS_LIMIT), MOST_SHOWN)
        stop = [False]
        try:
            names, total = await anyio.to_thread.run_sync(
                _entries, path, display, limit, stop, abandon_on_cancel=True
            )
        finally:
            stop[0] = True
        if not names:
            return ToolOutput(f"({display} is empty)")
        more = "Raise limit to see more." if limit < MOST_SHOWN else "Use find or bash to see more."
        note = f"Showing {limit} of {total} entries. {more}"
        return ToolOutput(capped(names, total, limit, note))

    return Tool(
        info=LS_INFO,
        name="ls",
        description=(
            "List a directory's entries (including dotfiles), sorted by name; directories end "
            f"with '/', symlinks with '@'. Default path is the workspace root; default limit "
            f"{LS_LIMIT} entries."
        ),
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory to list (default '.')."},
                "limit": {"type": "integer", "minimum": 1},
            },
            "additionalProperties": False,
        },
        execute=execute,
        snippet="List the entries of a directory",
        guidelines=("Use ls, find and grep to explore the project before reading whole files.",),
    )


def _find(
    ctx: ToolContext, base: Path, pattern: str, limit: int, stop: list[bool], crowded: list[Path]
) -> list[str]:
    """The matches, shown; string paths all the way (a Path per file cost 20 times the
    walk), and the display prefix computed once."""
    found: list[str] = []
    enough = lambda: stop[0] or len(found) > limit  # noqa: E731
    where = ctx.display(base)
    lead = "" if where == "." else where + "/"
    if base.is_file():
        lead = ctx.display(base.parent) + "/" if base.parent != ctx.root else ""
    by_name = "/" not in pattern
    glob = compile_glob(pattern)
    for prefix, _, names in walk_batches(base, ctx.root, stop=enough, crowded=crowded):
        if by_name:
            found.extend(lead + shown(prefix + name) for name in names if glob.fullmatch(name))
        else:
            found.extend(
                lead + shown(prefix + name)
                for name in names
                if matches_path(pattern, prefix + name)
            )
    return found


def make_find(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        base = await ctx.resolve(args.get("path", "."), call)
        if not base.exists():
            raise ToolError(f"Path not found: {ctx.display(base)}")
        pattern: str = args["pattern"]
        limit = min(args.get("limit", FIND_LIMIT), MOST_SHOWN)
        stop = [False]
        crowded: list[Path] = []
        try:
            found = await anyio.to_thread.run_sync(
                _find, ctx, base, pattern, limit, stop, crowded, abandon_on_cancel=True
            )
        finally:
            stop[0] = True
        note = crowded_note(crowded, ctx.display, "searched")
        if not found:
            return ToolOutput(f"No files match {pattern!r} under {ctx.display(base)}.{note}")
        cut = f"Showing the first {limit} matches. Narrow the pattern or the path."
        return ToolOutput(capped(found, len(found), limit, cut) + note)

    return Tool(
        info=FIND_INFO,
        name="find",
        description=(
            "Find files by glob pattern under a directory (default the workspace root). A "
            "pattern without '/' matches file names at any depth ('*.py'); one with '/' matches "
            "the path relative to the directory ('src/**/test_*.py'). Supports *, ?, **, [..] "
            "and {a,b}. Respects .gitignore and skips .git and node_modules. Paths are shown "
            "relative to the workspace root."
        ),
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern."},
                "path": {"type": "string", "description": "Directory to search (default '.')."},
                "limit": {"type": "integer", "minimum": 1},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        execute=execute,
        snippet="Find files by name or glob pattern",
        guidelines=("Use ls, find and grep to explore the project before reading whole files.",),
    )
