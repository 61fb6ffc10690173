"""Every question a tool asks names the call that asks it (no guessing upstream)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crank.agent.model import AbortSignal
from crank.agent.tools import ToolCall, run_tool
from crank.tools import ApprovalRequest, Decision, ToolContext, standard_tools


async def test_approvals_and_outside_questions_carry_the_call(root: Path) -> None:
    (root.parent / "far.txt").write_text("far\n")
    approvals: list[ApprovalRequest] = []
    outside: list[tuple[Path, ToolCall]] = []

    async def approve(request: ApprovalRequest) -> Decision:
        approvals.append(request)
        return Decision.reject("no")

    async def ask_outside(path: Path, call: ToolCall) -> bool:
        outside.append((path, call))
        return True

    tools = standard_tools(ToolContext(root, approve=approve, outside=ask_outside))
    calls: list[Any] = [
        {
            "type": "toolCall",
            "id": "w1",
            "name": "write",
            "arguments": {"path": "x", "content": "1"},
        },
        {
            "type": "toolCall",
            "id": "w2",
            "name": "write",
            "arguments": {"path": "x", "content": "1"},
        },
        {"type": "toolCall", "id": "b1", "name": "bash", "arguments": {"command": "true"}},
        {"type": "toolCall", "id": "r1", "name": "read", "arguments": {"path": "../far.txt"}},
    ]
    for block in calls:
        await run_tool(tools, block, AbortSignal(), lambda _: None)
    assert [(a["toolCallId"], a["toolName"]) for a in approvals] == [
        ("w1", "write"),
        ("w2", "write"),
        ("b1", "bash"),
    ]
    assert approvals[0]["arguments"] == calls[0]["arguments"]
    assert [(p.name, c.id, c.name) for p, c in outside] == [("far.txt", "r1", "read")]
