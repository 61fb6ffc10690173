"""ls and find: what is in a directory, and which files match a glob."""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from crank.agent.tools import Tool, ToolCall, ToolError, ToolOutput

from .context import ToolContext
from .globs import matches_path
from .walk import walk_files

LS_LIMIT = 500
FIND_LIMIT = 1000


def capped(items: list[str], limit: int, note: str) -> str:
    """One item a line, at most ``limit`` of them, and ``note`` if some were left out."""
    text = "\n".join(items[:limit])
    return f"{text}\n\n[{note}]" if len(items) > limit else text


def _entries(directory: Path, display: str) -> list[str]:
    try:
        with os.scandir(directory) as scan:
            found = list(scan)
    except FileNotFoundError:
        raise ToolError(f"Directory not found: {display}") from None
    except NotADirectoryError:
        raise ToolError(f"{display} is a file, not a directory; use read to see it.") from None
    except PermissionError:
        raise ToolError(f"Permission denied listing {display}") from None
    names = []
    for entry in found:
        if entry.is_symlink():
            suffix = "@"
        elif entry.is_dir():
            suffix = "/"
        else:
            suffix = ""
        names.append(entry.name + suffix)
    return sorted(names, key=lambda name: (name.lower(), name))


def make_ls(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        path = await ctx.resolve(args.get("path", "."), call)
        display = ctx.display(path)
        limit = args.get("limit", LS_LIMIT)
        names = await anyio.to_thread.run_sync(_entries, path, display)
        if not names:
            return ToolOutput(f"({display} is empty)")
        note = f"Showing {limit} of {len(names)} entries. Raise limit to see more."
        return ToolOutput(capped(names, limit, note))

    return Tool(
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


def _find(ctx: ToolContext, base: Path, pattern: str, limit: int, stop: list[bool]) -> list[str]:
    found: list[str] = []
    for file in walk_files(base, ctx.root, stop=lambda: stop[0] or len(found) > limit):
        relative = file.relative_to(base).as_posix() if file != base else file.name
        if matches_path(pattern, relative):
            found.append(ctx.display(file))
    return found


def make_find(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        base = await ctx.resolve(args.get("path", "."), call)
        if not base.exists():
            raise ToolError(f"Path not found: {ctx.display(base)}")
        pattern: str = args["pattern"]
        limit = args.get("limit", FIND_LIMIT)
        stop = [False]
        try:
            found = await anyio.to_thread.run_sync(
                _find, ctx, base, pattern, limit, stop, abandon_on_cancel=True
            )
        finally:
            stop[0] = True
        if not found:
            return ToolOutput(f"No files match {pattern!r} under {ctx.display(base)}.")
        note = f"Showing the first {limit} matches. Narrow the pattern or the path."
        return ToolOutput(capped(found, limit, note))

    return Tool(
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
