"""Shared helpers: a workspace folder in tmp_path and a way to call a tool through the
real ``run_tool`` boundary (so schema validation and budgets apply as in the loop)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from crank.agent.model import AbortSignal
from crank.agent.tools import Tool, run_tool
from crank.tools import ApprovalRequest, Decision, MemoryDocuments, ToolContext, standard_tools


@dataclass
class Result:
    content: str
    is_error: bool
    details: dict[str, Any] | None
    updates: list[str] = field(default_factory=list)


async def call(tools: list[Tool], name: str, args: dict[str, Any], **kw: Any) -> Result:
    updates: list[str] = kw.pop("updates", [])
    on_update = kw.pop("on_update", updates.append)
    signal = kw.pop("signal", AbortSignal())
    block = {"type": "toolCall", "id": "c1", "name": name, "arguments": args}
    message, details = await run_tool(tools, block, signal, on_update)  # type: ignore[arg-type]
    return Result(message["content"], message["isError"], details, updates)


class Approvals:
    """Records every approval request and answers with a fixed decision."""

    def __init__(self, decision: Decision | None = None) -> None:
        self.decision = decision or Decision.allow()
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Decision:
        self.requests.append(request)
        return self.decision


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def docs() -> MemoryDocuments:
    return MemoryDocuments()


@pytest.fixture
def approvals() -> Approvals:
    return Approvals()


@pytest.fixture
def ctx(root: Path, tmp_path: Path, docs: MemoryDocuments, approvals: Approvals) -> ToolContext:
    return ToolContext(
        root,
        documents=docs,
        apply_edit=docs.apply_edit,
        approve=approvals,
        output_dir=tmp_path / "outputs",
    )


@pytest.fixture
def tools(ctx: ToolContext) -> list[Tool]:
    return standard_tools(ctx)
