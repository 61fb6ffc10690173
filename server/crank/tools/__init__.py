"""crank.tools: the standard tools over a workspace (disk plus open editor buffers).

``standard_tools(ctx)`` gives read, write, edit, bash, ls, grep and find;
``read_only_tools(ctx)`` gives read, ls, grep and find. ``ToolContext`` carries what
the tools need from the editor (see ``context``); its defaults need no editor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
    from crank.agent.tools import Tool

    from .context import (  # noqa: F401  (re-exported: crank.lazy)
        ApplyEdit,
        ApprovalRequest,
        Approve,
        CommandPreview,
        Decision,
        DiffPreview,
        Documents,
        EditNotSaved,
        EditorFiles,
        EditorTerminal,
        EditRefused,
        MemoryDocuments,
        NoDocuments,
        OpenDocuments,
        Outside,
        PathPreview,
        TerminalRun,
        ToolContext,
        approval_request,
    )


__getattr__, __dir__, __all__ = exports(__name__, __file__, "read_only_tools", "standard_tools")


def read_only_tools(ctx: ToolContext) -> list[Tool]:
    """The standard tools that change nothing (``Tool.mutates`` is the one owner)."""
    return [tool for tool in standard_tools(ctx) if not tool.mutates]


def standard_tools(ctx: ToolContext) -> list[Tool]:
    from .bash import make_bash
    from .edit import make_edit
    from .grep import make_grep
    from .listing import make_find, make_ls
    from .read import make_read
    from .write import make_write

    return [
        make_read(ctx),
        make_write(ctx),
        make_edit(ctx),
        make_bash(ctx),
        make_ls(ctx),
        make_grep(ctx),
        make_find(ctx),
    ]
