"""Tools and the tool boundary.

A tool is data plus one async function. Only ``name``, ``description`` and
``parameters`` ever reach a model (``spec_of``); ``snippet`` and ``guidelines`` feed the
system prompt; everything else stays in this process.

``run_tool`` is the boundary: one call in, exactly one ``toolResult`` out, on every
path (unknown tool, arguments that fail the schema, a tool that raises, a tool that is
cancelled). The loop never dies of a tool, and the model always learns what happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .messages import ImageBlock, ToolCallBlock, ToolResultMessage, tool_result
from .model import AbortSignal, ToolSpec

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
NOTE_ROOM_LINES = 3
"""Lines a tool leaves free under MAX_LINES for its own closing note ("[Showing ...]"),
so the budget's cut never takes the note away."""

OnUpdate = Callable[[str], None]
"""Receives new partial output (only what is new since the last call)."""


@dataclass(frozen=True)
class ToolCall:
    """The call a tool is running: the model's id for it, the tool's name and the
    arguments (a copy: a tool may change them without touching the record). Every
    question a tool asks on the call's behalf (approval, a path outside the workspace)
    names this id, so two identical calls in one batch are never confused."""

    id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns. ``details`` is for clients (a diff, a saved-output path)
    and never goes to the model."""

    content: str
    is_error: bool = False
    details: dict[str, Any] | None = None
    images: tuple[ImageBlock, ...] = ()
    """Images for the model (``read`` of an image file), sent after ``content``."""


class ToolError(Exception):
    """Raised by a tool for a failure the model should read as-is (no traceback)."""


Execute = Callable[[ToolCall, AbortSignal, OnUpdate], Awaitable["ToolOutput | str"]]

ToolKind = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]
"""What a tool does, in ACP's vocabulary (its ``ToolKind``), which every frontend uses."""

ResultShown = Literal["first_line", "last_lines", "line_count", "joined"]
"""How a result is summed up in a line or two: its first line, its last two lines (a
command's output ends with what matters), how many lines it has (a file read), or its
lines joined by commas (a listing)."""


@dataclass(frozen=True)
class ToolInfo:
    """What a tool says about itself to the frontends and clients, so none of them
    matches tool names: its kind, a label, which argument says what a call does, how a
    result is summed up, whether it changes files through the edit path (``autoEdit``
    allows it without asking), and the TypedDict of its ``details``, if any."""

    name: str
    kind: ToolKind = "other"
    label: str = ""
    shows: str | None = None
    """The argument that says what a call does (``path``, ``command``, ``pattern``)."""
    result: ResultShown = "first_line"
    edits_files: bool = False
    details: type | None = None

    @property
    def acp_kind(self) -> ToolKind:
        """ACP's ``ToolKind`` for the call (the same vocabulary)."""
        return self.kind

    @property
    def runs_commands(self) -> bool:
        return self.kind == "execute"

    def to_json(self) -> dict[str, Any]:
        """The tool's entry in ``crank/state`` ``tools`` (``ToolInfoJson``)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "label": self.label}
        if self.shows is not None:
            out["shows"] = self.shows
        out["result"] = self.result
        out["editsFiles"] = self.edits_files
        if self.details is not None:
            out["details"] = self.details.__name__
        return out


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    execute: Execute
    snippet: str | None = None
    """One line for the system prompt's tool list; no snippet, no line."""
    guidelines: tuple[str, ...] = ()
    """Advice for the system prompt; de-duplicated across tools, first seen first."""
    keep: Literal["head", "tail"] = "head"
    """Which end of an over-budget output survives: the start of a file, the end of a log."""
    mutates: bool = False
    """Writes files or runs commands: left out entirely in read-only mode."""
    info: ToolInfo | None = None
    """What the tool says about itself (``ToolInfo``); None for a tool with nothing to say
    (a test's or a script's), which frontends treat as kind ``other``."""
    _validator: Draft202012Validator | None = field(default=None, compare=False, repr=False)
    """Built on first use: jsonschema is imported then, not when the server starts."""

    def validator(self) -> Draft202012Validator:
        if self._validator is None:
            from jsonschema import Draft202012Validator

            Draft202012Validator.check_schema(self.parameters)
            object.__setattr__(self, "_validator", Draft202012Validator(self.parameters))
        assert self._validator is not None
        return self._validator


def spec_of(tool: Tool) -> ToolSpec:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


@dataclass(frozen=True)
class Truncation:
    text: str
    truncated: bool
    total_lines: int
    total_bytes: int
    kept_lines: int


def _utf8_len(line: str) -> int:
    return len(line.encode("utf-8", "surrogatepass"))


def truncate(
    text: str,
    keep: Literal["head", "tail"],
    *,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
) -> Truncation:
    """Keep whole lines from one end until either budget would be exceeded.

    A single line longer than the byte budget is cut at a character boundary so that
    something is always shown. Cost is linear in the part kept plus one pass to count.
    """
    total_bytes = _utf8_len(text)
    lines = text.split("\n")
    if len(lines) <= max_lines and total_bytes <= max_bytes:
        return Truncation(text, False, len(lines), total_bytes, len(lines))
    ordered = lines if keep == "head" else reversed(lines)
    kept: list[str] = []
    used = 0
    for line in ordered:
        cost = _utf8_len(line) + (1 if kept else 0)
        if len(kept) >= max_lines or used + cost > max_bytes:
            if not kept:
                budget = max_bytes
                piece = line.encode("utf-8", "surrogatepass")
                piece = piece[:budget] if keep == "head" else piece[-budget:]
                kept.append(piece.decode("utf-8", "ignore"))
            break
        kept.append(line)
        used += cost
    if keep == "tail":
        kept.reverse()
    return Truncation("\n".join(kept), True, len(lines), total_bytes, len(kept))


def fit_to_budget(text: str, keep: Literal["head", "tail"], hint: str) -> str:
    """Truncate to the budget and, if anything was cut, end with a line saying how much
    and how to get the rest (``hint``)."""
    cut = truncate(text, keep)
    if not cut.truncated:
        return text
    which = "first" if keep == "head" else "last"
    return (
        f"{cut.text}\n\n[Output truncated: showing the {which} {cut.kept_lines} of "
        f"{cut.total_lines} lines ({cut.total_bytes} bytes). {hint}]"
    )


def _describe_schema_error(error: ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(arguments)"
    if error.validator == "required":
        return f"{error.message} (at {where})"
    if error.validator == "additionalProperties":
        return f"{error.message} (at {where})"
    expected = error.validator_value
    return f"field '{where}': {error.message} (expected {error.validator}: {expected!r})"


def check_arguments(tool: Tool, arguments: Any) -> str | None:
    """None if the arguments satisfy the tool's schema, else a message naming every field."""
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    errors = sorted(tool.validator().iter_errors(arguments), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    return "; ".join(_describe_schema_error(error) for error in errors)


async def run_tool(
    tools: Sequence[Tool],
    call: ToolCallBlock,
    signal: AbortSignal,
    on_update: OnUpdate,
) -> tuple[ToolResultMessage, dict[str, Any] | None]:
    """Run one call and return exactly one result message (and the tool's details).

    Cancellation of the surrounding task is turned into an "aborted" result and then
    re-raised only if the cancellation did not come from ``signal`` (somebody else is
    tearing the task down and must see it).
    """
    name = call["name"]
    tool = next((t for t in tools if t.name == name), None)
    if tool is None:
        known = ", ".join(t.name for t in tools) or "(none)"
        message = f"Unknown tool '{name}'. Available tools: {known}."
        return tool_result(call["id"], name, message, is_error=True), None
    problem = check_arguments(tool, call["arguments"])
    if problem is not None:
        message = f"Invalid arguments for {name}: {problem}"
        return tool_result(call["id"], name, message, is_error=True), None
    try:
        running = ToolCall(call["id"], name, dict(call["arguments"]))
        output = await tool.execute(running, signal, on_update)
    except asyncio.CancelledError:
        if not signal.aborted:
            raise
        return tool_result(
            call["id"], name, "Aborted by the user before it finished.", is_error=True
        ), None
    except ToolError as exc:
        return tool_result(call["id"], name, str(exc) or type(exc).__name__, is_error=True), None
    except Exception as exc:  # the boundary: a tool bug must become a result, not a crash
        text = f"{name} failed: {type(exc).__name__}: {exc}"
        return tool_result(call["id"], name, text, is_error=True), None
    if isinstance(output, str):
        output = ToolOutput(output)
    hint = "The full output is not shown; narrow the request to see the rest."
    content = fit_to_budget(output.content, tool.keep, hint)
    result = tool_result(call["id"], name, content, is_error=output.is_error, images=output.images)
    return result, output.details
