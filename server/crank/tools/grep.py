"""grep: search file contents by regular expression.

Lines come back as ``path:line: text`` (context lines as ``path-line- text``), paths
relative to the workspace root, files in path order, at most ``limit`` matches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from crank.agent.tools import Tool, ToolCall, ToolError, ToolInfo, ToolOutput

from .agreement import differing, searched_note
from .context import ToolContext
from .pattern import Pattern
from .search import (
    BLOCK_BYTES,
    LINE_CHARS,
    MOST_HITS,
    Hit,
    Query,
    Report,
    RipgrepFailed,
    open_documents_under,
    python_search,
    rg_search,
    ripgrep,
    search_text,
)
from .textfile import SNIFF_BYTES, looks_binary, open_regular
from .walk import crowded_note

INFO = ToolInfo("grep", kind="search", label="Search", shows="pattern", result="joined")
"""What grep says about itself to frontends and clients (``ToolInfo``)."""

GREP_LIMIT = 100

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "minLength": 1, "description": "Regular expression."},
        "path": {"type": "string", "description": "File or directory to search (default '.')."},
        "glob": {"type": "string", "description": "Only files matching this glob, e.g. '*.py'."},
        "ignoreCase": {"type": "boolean"},
        "literal": {"type": "boolean", "description": "Treat pattern as plain text."},
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 20,
            "description": "Lines of context around each match.",
        },
        "limit": {"type": "integer", "minimum": 1, "description": f"Default {GREP_LIMIT}."},
    },
    "required": ["pattern"],
    "additionalProperties": False,
}


def render(ctx: ToolContext, hits: list[Hit], limit: int) -> tuple[str, int]:
    lines: list[str] = []
    matches = 0
    last: tuple[Path, int] | None = None
    with_context = any(not h.match for h in hits)
    for hit in sorted(hits):
        if len(lines) >= MOST_HITS:
            break
        if hit.match:
            if matches == limit:
                break
            matches += 1
        if last is not None and (last[0] != hit.path or hit.line > last[1] + 1) and with_context:
            lines.append("--")
        text = hit.text if len(hit.text) <= LINE_CHARS else hit.text[:LINE_CHARS] + "…"
        mark = ":" if hit.match else "-"
        lines.append(f"{ctx.display(hit.path)}{mark}{hit.line}{mark} {text}")
        last = (hit.path, hit.line)
    return "\n".join(lines), matches


async def run_search(
    ctx: ToolContext, query: Query, base: Path, engine: str | None, report: Report
) -> list[Hit]:
    regex = query.regex()
    rg = None if engine == "python" else ripgrep()
    if rg is None and engine == "rg":
        raise ToolError("ripgrep (rg) was asked for and is not installed")
    if rg is not None:
        opened = open_documents_under(ctx.documents, base, query)
        try:
            hits = await rg_search(rg, query, base, set(opened), ctx.root)
        except RipgrepFailed as exc:
            report.fallback = str(exc)
        else:
            buffers = [(path, ctx.documents.text_of(path)) for path in opened]
            found = await anyio.to_thread.run_sync(_search_buffers, buffers, regex, query.context)
            return hits + found
    stop = [False]
    try:
        return await anyio.to_thread.run_sync(
            lambda: python_search(query, base, ctx.root, ctx.documents, lambda: stop[0], report),
            abandon_on_cancel=True,
        )
    finally:
        stop[0] = True


def _search_buffers(
    buffers: list[tuple[Path, str | None]], regex: Pattern, context: int
) -> list[Hit]:
    """The open buffers' hits (in a worker thread: a buffer may be large)."""
    hits: list[Hit] = []
    for path, text in buffers:
        if text is not None:
            hits.extend(search_text(path, text, regex, context))
    return hits


def report_note(ctx: ToolContext, report: Report) -> str:
    """The closing notes for what was searched only in part (empty if nothing was)."""
    note = crowded_note(report.crowded, ctx.display, "searched")
    if report.long_lines:
        names = ", ".join(ctx.display(path) for path in report.long_lines[:5])
        more = f" and {len(report.long_lines) - 5} more" if len(report.long_lines) > 5 else ""
        note += (
            f"\n\n[{names}{more}: a line longer than {BLOCK_BYTES // (1024 * 1024)} MB was "
            "searched in its first MB only; use bash (grep -c, or a script) to search it whole.]"
        )
    if report.fallback is not None:
        note += (
            f"\n\n[ripgrep failed ({report.fallback[:200]}); searched with the built-in "
            "engine instead, which skips what is not a regular file.]"
        )
    return note


def _binary_file(path: Path, display: str) -> bool:
    """Is a file base binary? ToolError if it is not a regular file (ripgrep, handed a
    FIFO, would wait on it for ever); False for a directory."""
    if path.is_dir():
        return False
    with open_regular(path, display) as (handle, _):
        return looks_binary(handle.read(SNIFF_BYTES))


def make_grep(ctx: ToolContext, engine: str | None = None) -> Tool:
    """``engine`` forces "rg" or "python" (tests, benchmarks); None picks rg if present."""

    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        base = await ctx.resolve(args.get("path", "."), call)
        if not base.exists() and ctx.documents.text_of(base) is None:
            raise ToolError(f"Path not found: {ctx.display(base)}")
        query = Query(
            pattern=args["pattern"],
            ignore_case=bool(args.get("ignoreCase", False)),
            literal=bool(args.get("literal", False)),
            context=int(args.get("context", 0)),
            glob=args.get("glob"),
            limit=int(args.get("limit", GREP_LIMIT)),
        )
        display = ctx.display(base)
        if ctx.documents.text_of(base) is None:
            binary = await anyio.to_thread.run_sync(_binary_file, base, display)
            if binary:
                return ToolOutput(
                    f"{display} looks like a binary file (a NUL byte in its first "
                    f"{SNIFF_BYTES // 1024} KB); grep skips binary files, as ripgrep does."
                )
        report = Report()
        hits = await run_search(ctx, query, base, engine, report)
        text, shown = render(ctx, hits, query.limit)
        note = report_note(ctx, report)
        unsaved = await differing(ctx, open_documents_under(ctx.documents, base, query))
        if unsaved:
            note += "\n\n" + searched_note(ctx, unsaved)
        if not shown:
            return ToolOutput(f"No matches for {query.pattern!r} in {display}.{note}")
        total = sum(1 for hit in hits if hit.match)
        if total > shown or len(hits) > MOST_HITS:
            text += f"\n\n[Showing the first {shown} matches. Narrow the pattern, path or glob.]"
        return ToolOutput(text + note)

    return Tool(
        info=INFO,
        name="grep",
        description=(
            "Search file contents with a regular expression. Returns 'path:line: text' lines "
            "(context lines use '-'), in path order, relative to the workspace root. Respects "
            ".gitignore and skips .git and node_modules; binary files are skipped. Options: "
            f"glob (file filter), ignoreCase, literal, context, limit (default {GREP_LIMIT})."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="Search file contents for a regular expression",
        guidelines=("Use ls, find and grep to explore the project before reading whole files.",),
    )
