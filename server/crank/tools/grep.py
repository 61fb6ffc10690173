"""grep: search file contents by regular expression.

Lines come back as ``path:line: text`` (context lines as ``path-line- text``), paths
relative to the workspace root, files in path order, at most ``limit`` matches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from crank.agent.tools import Tool, ToolCall, ToolError, ToolOutput

from .agreement import differing, searched_note
from .context import ToolContext
from .search import (
    Hit,
    Query,
    open_documents_under,
    python_search,
    rg_search,
    ripgrep,
    search_text,
)

GREP_LIMIT = 100
LINE_CHARS = 500

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
    for hit in sorted(hits):
        if hit.match:
            if matches == limit:
                break
            matches += 1
        if (
            last is not None
            and (last[0] != hit.path or hit.line > last[1] + 1)
            and any(not h.match for h in hits)
        ):
            lines.append("--")
        text = hit.text if len(hit.text) <= LINE_CHARS else hit.text[:LINE_CHARS] + "…"
        mark = ":" if hit.match else "-"
        lines.append(f"{ctx.display(hit.path)}{mark}{hit.line}{mark} {text}")
        last = (hit.path, hit.line)
    return "\n".join(lines), matches


async def run_search(ctx: ToolContext, query: Query, base: Path, engine: str | None) -> list[Hit]:
    regex = query.regex()
    rg = None if engine == "python" else ripgrep()
    if rg is None:
        stop = [False]
        try:
            return await anyio.to_thread.run_sync(
                lambda: python_search(query, base, ctx.root, ctx.documents, lambda: stop[0]),
                abandon_on_cancel=True,
            )
        finally:
            stop[0] = True
    opened = open_documents_under(ctx.documents, base, query)
    hits = await rg_search(rg, query, base, set(opened))
    for path in opened:
        text = ctx.documents.text_of(path)
        if text is not None:
            hits.extend(search_text(path, text, regex, query.context))
    return hits


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
        hits = await run_search(ctx, query, base, engine)
        text, shown = render(ctx, hits, query.limit)
        unsaved = await differing(ctx, open_documents_under(ctx.documents, base, query))
        if not shown:
            none = f"No matches for {query.pattern!r} in {ctx.display(base)}."
            return ToolOutput(f"{none}\n\n{searched_note(ctx, unsaved)}" if unsaved else none)
        total = sum(1 for hit in hits if hit.match)
        if total > shown:
            text += f"\n\n[Showing the first {shown} matches. Narrow the pattern, path or glob.]"
        if unsaved:
            text += "\n\n" + searched_note(ctx, unsaved)
        return ToolOutput(text)

    return Tool(
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
