"""The prompt with a real Harness and the scripted model: skills are found by reading,
and a prompt change during a run reaches only the next run.

The read tool here is a tiny real one over tmp_path (the tools layer owns the real one).
"""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from prompt_helpers import tool

from crank.agent.model import AbortSignal, ModelRequest
from crank.agent.tools import OnUpdate, Tool, ToolCall
from crank.prompt import PromptLocations, PromptWatcher, SystemPrompt, compute_prompt

harness_module = pytest.importorskip("crank.agent.harness")
scripted = pytest.importorskip("crank.agent.scripted")

DAY = datetime.date(2026, 3, 14)
STEP = "Tag the commit shop-v<version>, then run make ship."


def disk_read_tool() -> Tool:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        return await anyio.Path(call.arguments["path"]).read_text(encoding="utf-8")

    base = tool("read", "Read file contents", "Use read to examine files instead of cat.")
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return Tool(base.name, base.description, schema, execute, base.snippet, base.guidelines)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def last_result(request: ModelRequest) -> str | None:
    message = request.messages[-1]
    return str(message["content"]) if message["role"] == "toolResult" else None


def releaser(request: ModelRequest) -> Any:
    """Has never cut a release: finds a release skill's file in the system prompt, reads
    it, and answers with the tagging step it found there."""
    result = last_result(request)
    if result is None:
        line = next(
            (x for x in request.system.splitlines() if "release" in x and "SKILL.md" in x), None
        )
        if line is None:
            return scripted.say("I do not know how releases are done here.")
        path = line[line.index("(file: ") + len("(file: ") : line.rindex(")")]
        return scripted.call("read", {"path": path})
    step = next((x for x in result.splitlines() if x.startswith("Tag the commit")), None)
    return scripted.say(step or "The playbook did not say how to tag.")


async def test_scripted_model_finds_the_release_skill_reads_it_and_follows_it(
    tmp_path: Path,
) -> None:
    root = tmp_path / "shop"
    write(
        root / ".crank" / "skills" / "release" / "SKILL.md",
        "---\nname: release\ndescription: How to cut a release of the shop.\n---\n"
        f"# Cutting a release\n\nNever push straight to main.\n{STEP}\n",
    )
    write(
        root / ".crank" / "skills" / "db" / "SKILL.md",
        "---\nname: db-migration\ndescription: Schema changes.\n---\nTake a backup first.\n",
    )
    locations = PromptLocations(root, root, True, user_dir=tmp_path / "user-config")
    tools = [disk_read_tool()]
    prompt = (await compute_prompt(tools, locations, DAY)).prompt
    assert STEP not in prompt.text  # the body is only in the file
    model = scripted.ScriptedModel([releaser, releaser])
    harness = harness_module.Harness(system=prompt.text, tools=tools, model=model)
    await harness.prompt("Cut release 2.1 of the shop.").wait()
    roles = [m["role"] for m in harness.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"]
    assert STEP in str(harness.messages[2]["content"])
    final = harness.messages[-1]["content"]
    assert final == [{"type": "text", "text": STEP}]


async def test_a_prompt_change_during_a_run_reaches_only_the_next_run(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    write(root / "AGENTS.md", "Use uv, never pip.\n")
    locations = PromptLocations(root, root, True, user_dir=tmp_path / "user-config")
    announced = asyncio.Event()

    async def edit_agents_md(call: ToolCall, signal: AbortSignal, on: OnUpdate) -> str:
        write(root / "AGENTS.md", "Use uv, never pip. Keep a changelog.\n")
        async with asyncio.timeout(1.0):
            await announced.wait()  # the watcher has rebuilt and swapped the prompt
        return "AGENTS.md updated."

    base = tool("note", "Record a project rule")
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    tools = [Tool(base.name, base.description, schema, edit_agents_md, base.snippet)]

    async def rebuild() -> SystemPrompt:
        return (await compute_prompt(tools, locations, DAY)).prompt

    first = await rebuild()
    model = scripted.ScriptedModel(
        [scripted.call("note", {}), scripted.say("Noted."), scripted.say("Hello again.")]
    )
    harness = harness_module.Harness(system=first.text, tools=tools, model=model)

    async def on_change(prompt: SystemPrompt) -> None:
        harness.set_system(prompt.text)
        announced.set()

    watcher = PromptWatcher(locations, rebuild, on_change, initial=first)
    await watcher.start()
    try:
        await harness.prompt("Remember to keep a changelog.").wait()
        await harness.prompt("Hi.").wait()
    finally:
        await watcher.stop()
    systems = [request.system for request in model.requests]
    assert systems[0] == systems[1] == first.text  # the run in progress kept its prompt
    assert "Keep a changelog." in systems[2]  # the next run got the new one
