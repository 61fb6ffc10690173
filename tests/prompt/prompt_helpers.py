"""Tools shaped like the real ones (name, snippet, guidelines) for prompt tests.

Their ``execute`` is never called by the builder, so it refuses loudly if it ever is.
"""

from __future__ import annotations

from typing import Any

from crank.agent.model import AbortSignal
from crank.agent.tools import OnUpdate, Tool, ToolOutput

SHARED = "Show file paths clearly when working with files."


async def _not_run(
    arguments: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
) -> ToolOutput:
    raise AssertionError("the prompt builder must never run a tool")


def tool(name: str, snippet: str | None = None, *guidelines: str, mutates: bool = False) -> Tool:
    return Tool(
        name=name,
        description=f"The {name} tool.",
        parameters={"type": "object", "properties": {}},
        execute=_not_run,
        snippet=snippet,
        guidelines=tuple(guidelines),
        mutates=mutates,
    )


def read_tool() -> Tool:
    return tool(
        "read", "Read file contents", "Use read to examine files instead of cat or sed.", SHARED
    )


def write_tool() -> Tool:
    return tool(
        "write",
        "Create or overwrite files",
        "Use write only for new files or complete rewrites.",
        SHARED,
        mutates=True,
    )


def edit_tool() -> Tool:
    return tool(
        "edit",
        "Make precise edits to files",
        "Use edit for targeted changes.",
        SHARED,
        mutates=True,
    )


def bash_tool() -> Tool:
    return tool(
        "bash", "Run shell commands", "Say what a command is for before you run bash.", mutates=True
    )


def full_tools() -> list[Tool]:
    return [read_tool(), write_tool(), edit_tool(), bash_tool()]
