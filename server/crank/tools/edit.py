"""edit: replace exact pieces of a file, all of them or none.

Each ``oldText`` must occur exactly once in the file as it was before this call
(exactly, or else tolerantly: see ``matching``); the pieces may not overlap; if any
piece fails, nothing is written and the error names which one. The result carries a
unified diff for the model and ``details`` {path, oldText, newText, diff} for an edit
card in the client.
"""

from __future__ import annotations

import itertools
from typing import Any

import anyio

from crank.agent.tools import Tool, ToolCall, ToolError, ToolInfo, ToolOutput

from .change import apply_change, declined, unified_diff
from .context import ToolContext
from .details import FileChangeDetails
from .matching import MatchError, Span, find_once
from .textfile import load_text

INFO = ToolInfo(
    "edit", kind="edit", label="Edit", shows="path", edits_files=True, details=FileChangeDetails
)
"""What edit says about itself to frontends and clients (``ToolInfo``)."""

TOO_LARGE = (
    "edit loads the whole file, so it refuses one this large. Change it with bash instead "
    "(for example sed -i, or a short script that streams it), or read it in windows with "
    "read's offset and limit."
)

_PAIR: dict[str, Any] = {
    "type": "object",
    "properties": {
        "oldText": {"type": "string", "description": "Exact text to replace; must occur once."},
        "newText": {"type": "string", "description": "Text to put in its place."},
    },
    "required": ["oldText", "newText"],
    "additionalProperties": False,
}

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to edit, relative to the workspace."},
        "edits": {
            "type": "array",
            "items": _PAIR,
            "minItems": 1,
            "description": "Replacements, each matched against the file as it was before "
            "this call; all are applied or none.",
        },
        "oldText": {"type": "string", "description": "Shorthand for a single edit."},
        "newText": {"type": "string", "description": "Shorthand for a single edit."},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def requested_edits(args: dict[str, Any]) -> list[tuple[str, str]]:
    pairs = [(e["oldText"], e["newText"]) for e in args.get("edits", [])]
    single = ("oldText" in args, "newText" in args)
    if single == (True, True):
        pairs.insert(0, (args["oldText"], args["newText"]))
    elif any(single):
        missing = "newText" if single[0] else "oldText"
        raise ToolError(f"oldText and newText go together; {missing} is missing.")
    if not pairs:
        raise ToolError("No edits given: pass edits=[{oldText, newText}, ...].")
    return [(old.replace("\r\n", "\n"), new.replace("\r\n", "\n")) for old, new in pairs]


def place_all(body: str, pairs: list[tuple[str, str]]) -> list[tuple[Span, str]]:
    placed: list[tuple[Span, str, int]] = []
    problems: list[str] = []
    for number, (old, new) in enumerate(pairs, 1):
        try:
            placed.append((find_once(body, old), new, number))
        except MatchError as exc:
            label = f"Edit {number}: " if len(pairs) > 1 else ""
            problems.append(f"{label}{exc}")
    if problems:
        raise ToolError("\n".join(problems) + "\nNo changes were made.")
    placed.sort(key=lambda item: item[0].start)
    for (a, _, i), (b, _, j) in itertools.pairwise(placed):
        if b.start < a.end:
            raise ToolError(f"Edits {i} and {j} overlap; merge them. No changes were made.")
    return [(span, new) for span, new, _ in placed]


def splice(body: str, placed: list[tuple[Span, str]]) -> str:
    pieces: list[str] = []
    at = 0
    for span, new in placed:
        pieces.append(body[at : span.start])
        pieces.append(new)
        at = span.end
    pieces.append(body[at:])
    return "".join(pieces)


def make_edit(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: object) -> ToolOutput:
        args = call.arguments
        pairs = requested_edits(args)
        path = await ctx.resolve(args["path"], call)
        display = ctx.display(path)
        before = await load_text(path, ctx.files, display, instead=TOO_LARGE)
        after = await anyio.to_thread.run_sync(  # up to 4 MB matched tolerantly: off the loop
            lambda: splice(before.body, place_all(before.body, pairs))
        )
        if after == before.body:
            raise ToolError(f"No change: the edits leave {display} exactly as it is.")
        applied = await apply_change(ctx, call=call, path=path, before=before, new_body=after)
        if not applied.decision.allowed:
            return declined(f"the edit to {display}", applied.decision)
        diff = await anyio.to_thread.run_sync(unified_diff, display, before.body, after)
        count = f"{len(pairs)} replacement{'s' if len(pairs) > 1 else ''}"
        note = f" {applied.note}" if applied.note else ""
        return ToolOutput(
            f"Edited {display} ({count}, {applied.where}).{note}\n\n{diff}",
            details={"path": str(path), "oldText": before.body, "newText": after, "diff": diff},
        )

    return Tool(
        info=INFO,
        name="edit",
        description=(
            "Replace exact text in a file. Each edits[i].oldText must match the current file "
            "exactly once (a trailing-whitespace and quote-style tolerant match is tried if the "
            "exact one fails); all edits apply or none. Returns a unified diff. For a single "
            "replacement you may pass oldText and newText directly."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="Make precise replacements in a file",
        guidelines=(
            "Use edit for changes to existing files; copy oldText exactly from what read showed, "
            "with enough context to be unique.",
            "Show file paths clearly when working with files.",
        ),
        keep="head",
        mutates=True,
    )
