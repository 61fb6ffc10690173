"""The wire JSON of a workspace's state: ``crank/state``, ``crank/messages``,
``crank/systemPrompt``. Pure functions of what they are given, so the shapes the
protocol promises can be read (and tested) in one place; key order is the wire's."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crank.agent.events import ContextUsage
from crank.agent.harness import Harness
from crank.agent.messages import Message
from crank.agent.tools import Tool, ToolInfo
from crank.agent.view import Repairs
from crank.mcp.manager import McpServerState
from crank.prompt import SystemPrompt
from crank.vendors.config import without_credentials

from .permissions import PermissionMode


def state_json(
    *,
    session_id: str,
    harness: Harness,
    run_id: str | None,
    permission_mode: PermissionMode,
    trusted: bool,
    sandbox: dict[str, Any],
    usage: ContextUsage,
    session_file: Path,
    seq: int,
    config_error: str | None,
    repairs: Repairs,
    branched: bool | None = False,
    tools: Sequence[Tool] = (),
    mcp: Sequence[McpServerState] | None = None,
    base_url: str | None = None,
) -> dict[str, Any]:
    """``crank/state``: ``runId`` only while a run is active, ``configError`` only while
    no provider is configured, ``viewRepairs`` only when the view repaired something,
    ``tools`` (what each tool says about itself) when there are tools, ``mcp`` only
    when an MCP server is configured (one object per server), ``model.baseUrl`` when
    the model has an endpoint (``base_url``, shown without credentials); ``branched``
    unless it is not known without reading the session's history."""
    model = harness.model
    state: dict[str, Any] = {"sessionId": session_id, "running": harness.is_running}
    if run_id is not None:
        state["runId"] = run_id
    state.update(
        {
            "model": {
                "api": model.api,
                "id": model.id,
                "contextWindow": model.context_window,
                **({"baseUrl": without_credentials(base_url)} if base_url else {}),
            },
            "permissionMode": permission_mode,
            "trusted": trusted,
            "sandbox": sandbox,
            "queue": harness.queues.as_dict(),
            "usage": usage,
            "sessionFile": str(session_file),
            "seq": seq,
        }
    )
    if config_error is not None:
        state["configError"] = config_error
    if branched is not None:
        state["branched"] = branched
    if repairs:
        state["viewRepairs"] = repairs.to_json()
    if tools:
        state["tools"] = [(tool.info or ToolInfo(tool.name)).to_json() for tool in tools]
    if mcp:
        state["mcp"] = list(mcp)
    return state


def messages_json(
    harness: Harness, *, limit: int | None = None, before: int | None = None
) -> dict[str, Any]:
    """``crank/messages``: the transcript as the Harness holds it (the record, not the
    view), or one page of it when ``limit`` or ``before`` is given (``MessagesParams``)."""
    record = harness.messages
    if limit is None and before is None:
        return {"messages": list(record)}
    start, end = page_of(record, limit, before)
    return {"messages": list(record[start:end]), "start": start, "total": len(record)}


def page_of(record: Sequence[Message], limit: int | None, before: int | None) -> tuple[int, int]:
    """Where a page of ``record`` starts and ends: ``limit`` messages before ``before``,
    started earlier while it would begin with a tool result (so that every result on
    the page has its call there, and a client draws it as one card)."""
    end = len(record) if before is None else min(before, len(record))
    start = 0 if limit is None else max(end - limit, 0)
    while 0 < start < end and record[start]["role"] == "toolResult":
        start -= 1
    return start, end


def system_prompt_json(prompt: SystemPrompt | None) -> dict[str, Any]:
    """``crank/systemPrompt``: the prompt the next run starts with (empty before the first build)."""
    if prompt is None:
        return {"text": "", "hash": "", "sources": []}
    return prompt.to_json()
