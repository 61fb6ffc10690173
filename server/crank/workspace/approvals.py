"""Approval routing: a tool's question goes to the rules first, then to the editor.

The tools ask through ``ToolContext.approve`` and ``ToolContext.outside``; both carry
the ``ToolCall`` that asks, so the question the editor sees (``crank/requestPermission``)
names exactly that call. The permission mode and remembered rules answer first; only
what they leave open reaches the user, and only the user's answer changes a rule.
Anything but a valid answer (an error, an unknown decision) is a rejection that says
why: a tool never runs on a misunderstanding.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crank.agent.tools import ToolCall
from crank.tools import ApprovalRequest, Decision, PathPreview, approval_request

from .client import EditorClient
from .permissions import DECISIONS, Permissions

Where = Callable[[], tuple[str, str | None]]
"""The active session's id and the active run's id, at the moment of asking."""
Warning = Callable[[ApprovalRequest], str | None]
"""Why this request must be asked whatever the mode and rules say (a command that
would run unconfined), or None."""


class ApprovalRouter:
    """Answers the tools' questions for one workspace (``approve``, ``outside``)."""

    def __init__(
        self,
        uri: str,
        permissions: Permissions,
        client: EditorClient,
        where: Where,
        warning: Warning = lambda _: None,
    ) -> None:
        self.uri = uri
        self.permissions = permissions
        self._client = client
        self._where = where
        self._warning = warning

    async def approve(self, request: ApprovalRequest) -> Decision:
        """A change or a command, asked unless the mode or a rule already says yes (and
        nothing warns that it must be asked anyway; the warning goes with the question)."""
        unconfined = self._warning(request)
        warning = unconfined
        if warning is None and not self.permissions.needs_asking(request):
            return Decision.allow()
        why = self.permissions.why_asked(request)
        if why is not None:
            warning = why if warning is None else f"{warning} {why}"
        session_id, run_id = self._where()
        params: dict[str, Any] = {
            "workspace": self.uri,
            "sessionId": session_id,
            "runId": run_id,
            "toolCallId": request["toolCallId"],
            "toolName": request["toolName"],
            "arguments": request["arguments"],
            "preview": request["preview"],
        }
        if warning is not None:
            params["warning"] = warning
        if unconfined is not None:
            params["unconfined"] = True
        try:
            answer = await self._client.ask_permission(params)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return Decision.reject(f"the editor could not be asked ({exc})")
        decision = answer.get("decision")
        if decision not in DECISIONS:
            return Decision.reject(f"the editor answered with an unknown decision {decision!r}")
        if decision == "reject":
            reason = answer.get("reason")
            return Decision.reject(reason if isinstance(reason, str) else None)
        self.permissions.remember(request, decision)
        return Decision.allow()

    async def outside(self, path: Path, call: ToolCall) -> Decision:
        """A path outside the workspace, asked as the pseudo tool ``outside`` on behalf
        of ``call`` (free in ``auto``)."""
        if self.permissions.mode == "auto":
            return Decision.allow()
        preview: PathPreview = {"kind": "path", "path": str(path)}
        return await self.approve(approval_request(call, preview, tool_name="outside"))
