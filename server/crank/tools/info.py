"""Every standard tool's ``ToolInfo`` by name, for a frontend that has only a name (an
event's ``toolName``, a permission question's): each tool module owns its own entry,
this module only gathers them. A name no tool owns (an MCP tool, the pseudo tool
``outside``, a test's) has kind ``other`` and nothing else to say."""

from __future__ import annotations

from functools import cache

from crank.agent.tools import ToolInfo

__all__ = ["all_tool_info", "tool_info"]


@cache
def all_tool_info() -> dict[str, ToolInfo]:
    from . import bash, edit, grep, listing, notes, read, recall, write

    owned = (
        read.INFO,
        write.INFO,
        edit.INFO,
        bash.INFO,
        listing.LS_INFO,
        grep.INFO,
        listing.FIND_INFO,
        notes.SAVE_INFO,
        notes.READ_INFO,
        recall.INFO,
    )
    return {info.name: info for info in owned}


def tool_info(name: str) -> ToolInfo:
    """The tool's own description of itself, or kind ``other`` for a name none owns."""
    return all_tool_info().get(name) or ToolInfo(name)
