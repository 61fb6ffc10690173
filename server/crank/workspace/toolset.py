"""The tools a session is offered, for every frontend and ``crank run`` alike.

One owner for the rule "the standard (or read-only) tools, the note tools, plus
``recall`` while the session's active branch has something compacted away or trimmed
out of the request": the
workspace host and the CLI
both ask here, so a session continued with ``crank run --continue`` can reach what a
``crank serve`` compaction summarised, exactly as it could in the editor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crank.agent.tools import Tool
from crank.session import SessionLog
from crank.session.recall import Recall
from crank.tools import ToolContext, read_only_tools, standard_tools
from crank.tools.notes import NoteSource, make_note_tools
from crank.tools.recall import make_recall


def session_tools(
    ctx: ToolContext,
    log: SessionLog | None,
    *,
    read_only: bool,
    notes: NoteSource | None = None,
    trimmed: Callable[[], bool] | None = None,
    extra: Sequence[Tool] = (),
) -> list[Tool]:
    """The tools for a session on ``log`` (``None``: no session yet, so no ``recall``).
    ``note_save``/``note_read`` come with ``notes`` in every mode, read-only included:
    they write only beside the session, never in the project. ``trimmed`` (the
    Housekeeper's) says whether the ``trim`` policy leaves turns out of the request.
    ``extra`` (the MCP servers' tools, already sorted) come last, so the built-in
    tools' part of the request stays byte-identical; read-only mode keeps only those
    that change nothing."""
    tools = read_only_tools(ctx) if read_only else standard_tools(ctx)
    if notes is not None:
        tools.extend(make_note_tools(notes))
    if log is not None:
        recall = Recall(log, trimmed)
        if recall.available():
            tools.append(make_recall(recall))
    tools.extend(tool for tool in extra if not (read_only and tool.mutates))
    return tools
