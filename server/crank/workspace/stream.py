"""The envelope around every event, its ``seq``, and delta coalescing.

Each event goes out as ``{workspace, sessionId, runId?, seq, event}``; ``seq`` is
strictly increasing per session within this process, so a client can see a gap.
Streamed text is the hot path: ``message_update`` deltas are held for at most
``coalesce_ms`` and consecutive deltas of the same block are sent as one, whose text
is the exact concatenation. Any other event flushes what is held first, so order is
never changed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Literal, NotRequired, TypedDict

from crank.agent.events import Delta, Event
from crank.mcp.manager import McpServerState


class SystemPromptChanged(TypedDict):
    """The prompt for the next run was rebuilt (its bytes changed)."""

    type: Literal["system_prompt_changed"]
    hash: str
    sources: list[dict[str, Any]]


class SessionChanged(TypedDict):
    """The workspace's active session is another one now (new, opened)."""

    type: Literal["session_changed"]
    sessionId: str


class McpChanged(TypedDict):
    """A server started, failed, stopped or changed its tools (``crank/state`` ``mcp``)."""

    type: Literal["mcp_changed"]
    servers: list[McpServerState]


WireEvent = Event | SystemPromptChanged | SessionChanged | McpChanged
"""Every event a client hears: a run's (``crank.agent.events``) and the workspace's own."""


class EventParams(TypedDict):
    """``crank/event`` params: the event and where it belongs."""

    workspace: str
    sessionId: str
    runId: NotRequired[str]
    seq: int
    event: WireEvent


Send = Callable[[EventParams], None]


class EventStream:
    def __init__(self, workspace: str, send: Send, *, coalesce_ms: float = 4.0) -> None:
        self.workspace = workspace
        self._send = send
        self._delay = coalesce_ms / 1000
        self._seq: dict[str, int] = {}
        self._held: list[tuple[str, str | None, Delta, list[str]]] = []
        """Held deltas: where they go, the first delta of the run (whose other fields,
        a tool call's ``toolCallId`` and ``toolName``, go out with the joined text), and
        the texts."""
        self._timer: asyncio.TimerHandle | None = None

    def last_seq(self, session_id: str) -> int:
        return self._seq.get(session_id, 0)

    def emit(self, session_id: str, run_id: str | None, event: WireEvent) -> None:
        if event["type"] == "message_update" and self._delay > 0:
            self._hold(session_id, run_id, event["delta"])
            return
        self.flush()
        self._deliver(session_id, run_id, event)

    def _hold(self, session_id: str, run_id: str | None, delta: Delta) -> None:
        if self._held and "toolCallId" not in delta:  # a delta naming a call starts one
            where, run, first, parts = self._held[-1]
            if (
                where == session_id
                and run == run_id
                and first["kind"] == delta["kind"]
                and first["contentIndex"] == delta["contentIndex"]
            ):
                parts.append(delta["text"])
                return
        self._held.append((session_id, run_id, delta, [delta["text"]]))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._delay, self.flush)

    def flush(self) -> None:
        """Send every held delta now (also called by the timer)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        held, self._held = self._held, []
        for session_id, run_id, first, parts in held:
            delta: Delta = {
                "kind": first["kind"],
                "contentIndex": first["contentIndex"],
                "text": "".join(parts),
            }
            if "toolCallId" in first:
                delta["toolCallId"] = first["toolCallId"]
            if "toolName" in first:
                delta["toolName"] = first["toolName"]
            self._deliver(session_id, run_id, {"type": "message_update", "delta": delta})

    def _deliver(self, session_id: str, run_id: str | None, event: WireEvent) -> None:
        seq = self._seq.get(session_id, 0) + 1
        self._seq[session_id] = seq
        # Key order is the wire's: workspace, sessionId, runId?, seq, event.
        if run_id is None:
            envelope: EventParams = {
                "workspace": self.workspace,
                "sessionId": session_id,
                "seq": seq,
                "event": event,
            }
        else:
            envelope = {
                "workspace": self.workspace,
                "sessionId": session_id,
                "runId": run_id,
                "seq": seq,
                "event": event,
            }
        self._send(envelope)
