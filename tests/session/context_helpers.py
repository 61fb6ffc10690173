"""Builders for the context tests: a real read tool over tmp_path, a scripted agent
that reads files and answers, a scripted summariser that writes from what it is sent,
and a Harness wired to a real SessionLog and a Housekeeper."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crank.agent.harness import Harness
from crank.agent.model import AbortSignal, ModelRequest
from crank.agent.scripted import Reply, ScriptedModel, estimate_tokens, render_request
from crank.agent.tools import OnUpdate, Tool, ToolCall
from crank.session import SessionLog
from crank.session.housekeeping import ContextSettings, Housekeeper

READ_ARGS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
GOAL = "GOAL: port the service to 8080"


def read_tool(root: Path) -> Tool:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        return (root / call.arguments["path"]).read_text()

    return Tool(name="read", description="Read a file.", parameters=READ_ARGS, execute=execute)


def write_files(root: Path, count: int, size: int = 200) -> list[str]:
    root.mkdir(parents=True, exist_ok=True)
    names = []
    for index in range(count):
        name = f"file_{index:02d}.txt"
        line = f"{name} line: the value of item {index} is {index * 7}\n"
        (root / name).write_text((line * (size // len(line) + 1))[:size])
        names.append(name)
    return names


def reader(request: ModelRequest) -> Reply:
    """Reads the file a prompt names, then answers from the result it was sent."""
    last = request.messages[-1]
    if last["role"] == "user":
        match = re.search(r"file_\d+\.txt", last["content"])
        if match:
            return Reply(calls=(("read", {"path": match.group(0)}),))
        return Reply(text="Noted.")
    if last["role"] == "toolResult":
        return Reply(text=f"Read {last['content'][:12]}.")
    return Reply(text="Done.")


def summariser(request: ModelRequest) -> Reply:
    """Writes a summary from what it is sent: the goal line is carried over from the
    existing summary or taken from the quoted conversation."""
    text = request.messages[-1]["content"]
    assert isinstance(text, str)
    goal = re.search(r"GOAL: [^\n\"]*", text)
    return Reply(text=f"## Goal\n{goal.group(0) if goal else 'unknown'}\n## Progress\nworking")


def largest_request(model: ScriptedModel) -> int:
    return max(estimate_tokens(render_request(r)) for r in model.requests)


@dataclass
class Rig:
    log: SessionLog
    agent: ScriptedModel
    summary_model: ScriptedModel
    keeper: Housekeeper
    harness: Harness
    events: list[dict[str, Any]] = field(default_factory=list)

    def compactions(self) -> list[dict[str, Any]]:
        return [e for e in self.log.entries() if e["type"] == "compaction"]

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]


def rig(
    tmp_path: Path,
    *,
    window: int = 2_000,
    replies: list[Any] | None = None,
    summary_replies: list[Any] | None = None,
    summary_window: int | None = None,
    settings: ContextSettings | None = None,
    system: str = "You are a careful agent.",
    tools: Callable[[Path], list[Tool]] | None = None,
    session: Path | None = None,
) -> Rig:
    """A harness on a new session log, or on the existing file ``session`` (a restart)."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    if session is not None:
        log = SessionLog.open(session)
    else:
        log = SessionLog.create(tmp_path / "sessions", cwd=str(project))
    agent = ScriptedModel(replies if replies is not None else [reader] * 500, context_window=window)
    summary_model = ScriptedModel(
        summary_replies if summary_replies is not None else [summariser] * 200,
        context_window=summary_window or window,
        id="summariser",
    )
    keeper = Housekeeper(log, agent, settings or ContextSettings(), summarizer=summary_model)
    tool_list = tools(project) if tools else [read_tool(project)]
    harness = Harness(
        system=system,
        tools=tool_list,
        model=agent,
        messages=log.replay(),
        build_request=keeper.build_request,
        before_request=keeper.before_request,
        recover_overflow=keeper.recover_overflow,
    )
    harness.subscribe(log.listener())
    made = Rig(log, agent, summary_model, keeper, harness)
    harness.subscribe(made.events.append)
    return made
