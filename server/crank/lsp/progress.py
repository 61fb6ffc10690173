"""Each run as LSP work-done progress, so a plain LSP client shows the agent working.

``agent_start`` creates a token (``window/workDoneProgress/create``, only if the client
supports it) and begins a cancellable progress; tool starts are reported; the run's
``agent_settled`` ends it. While a permission question of the run is open the report
says "waiting for approval: <tool>" (the user's turn, not the agent's). The steps of one run go out in order from one task, so a
slow ``create`` never reorders them and never delays the ``crank/event`` stream.
A client cancelling the progress aborts the run.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from crank.agent.tasks import Tasks

if TYPE_CHECKING:
    from crank.workspace import WorkspaceHost
    from crank.workspace.stream import EventParams, WireEvent

    from .server import CrankServer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Waiting:
    """A permission question of the run opened (``waiting``) or was answered."""

    tool: str
    waiting: bool


class RunProgress:
    def __init__(self, server: CrankServer) -> None:
        self._server = server
        self._queues: dict[str, asyncio.Queue[WireEvent | Waiting | None]] = {}
        self._runs: dict[str, tuple[str, str | None]] = {}
        """token -> (workspace, runId) of the run it reports, until that run settles."""
        self._tasks = Tasks()
        self._tokens: dict[str, str] = {}

    def _supported(self) -> bool:
        window = self._server.client_capabilities.window
        return bool(window is not None and window.work_done_progress)

    def run_of(self, token: Any) -> tuple[WorkspaceHost, str | None] | None:
        """The host and run a progress token reports, while that run is unsettled."""
        found = self._runs.get(str(token))
        if found is None:
            return None
        host = self._server.hosts.get(found[0])
        return (host, found[1]) if host is not None else None

    def on_event(self, params: EventParams) -> None:
        event = params["event"]
        kind = event["type"]
        if kind not in ("agent_start", "tool_execution_start", "agent_settled"):
            return
        run_key = f"{params['workspace']}#{params.get('runId')}"
        if kind == "agent_start":
            if not self._supported():
                return
            queue: asyncio.Queue[WireEvent | Waiting | None] = asyncio.Queue()
            self._queues[run_key] = queue
            token = f"crank-{uuid.uuid4().hex[:12]}"
            self._runs[token] = (params["workspace"], params.get("runId"))
            self._tokens[run_key] = token
            self._tasks.start(self._drive(token, queue))
        found = self._queues.get(run_key)
        if found is None:
            return
        found.put_nowait(event)
        if kind == "agent_settled":
            found.put_nowait(None)
            del self._queues[run_key]
            self._runs.pop(self._tokens.pop(run_key, ""), None)

    async def close(self) -> None:
        """End the progress reports still running (the connection is going)."""
        await self._tasks.close()

    def waiting(self, params: dict[str, Any], waiting: bool) -> None:
        """A permission question (``crank/requestPermission`` params) opened or closed."""
        found = self._queues.get(f"{params.get('workspace')}#{params.get('runId')}")
        if found is not None:
            found.put_nowait(Waiting(str(params.get("toolName") or "a tool"), waiting))

    async def _drive(self, token: str, queue: asyncio.Queue[WireEvent | Waiting | None]) -> None:
        progress = self._server.work_done_progress
        created = False
        try:
            await progress.create_async(token)
            created = True
        except Exception as exc:
            log.info("work-done progress not created: %s", exc)
        while True:
            event = await queue.get()
            if event is None:
                break
            if not created:
                continue
            if isinstance(event, Waiting):
                what = "waiting for approval:" if event.waiting else "running"
                progress.report(token, types.WorkDoneProgressReport(message=f"{what} {event.tool}"))
            elif event["type"] == "agent_start":
                progress.begin(
                    token,
                    types.WorkDoneProgressBegin(title="Crank", message="working", cancellable=True),
                )
            elif event["type"] == "tool_execution_start":
                progress.report(
                    token, types.WorkDoneProgressReport(message=f"running {event['toolName']}")
                )
            else:
                progress.end(token, types.WorkDoneProgressEnd(message="done"))
        self._runs.pop(token, None)
        progress.tokens.pop(token, None)
