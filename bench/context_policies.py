"""Context policies on one long scripted task, once per setting.

Sixty files of a few KB; for each, a prompt that reads it and asks a question, then two
more questions about it. The scripted model reports prefix-cache usage (the longest
prefix shared with the previous request) and refuses requests over its window. The
summariser is a scripted model that writes a summary from what it is sent.

Prints one row per policy: total input tokens (cached and not), the share read from the
cache, the largest request, the number of turns (model requests), and whether every
prompt was answered, for a 200k window (where `none` fits) and a 32k one (where it
cannot). Run: .venv/bin/python bench/context_policies.py
"""

from __future__ import annotations

import asyncio
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from crank.agent.harness import Harness
from crank.agent.model import AbortSignal, ModelRequest
from crank.agent.scripted import Reply, ScriptedModel, estimate_tokens, render_request
from crank.agent.tools import OnUpdate, Tool
from crank.session import SessionLog
from crank.session.housekeeping import ContextSettings, Housekeeper

WINDOW = 200_000
SMALL_WINDOW = 32_000
FILES = 60
FILE_BYTES = 6_000
QUESTIONS = (
    "What does {name} define?",
    "Which values in {name} matter?",
    "Anything odd in {name}?",
)


def make_files(root: Path) -> list[str]:
    names = []
    for index in range(FILES):
        name = f"src/module_{index:02d}.py"
        lines = [f"# {name}: part of the task"]
        number = 0
        while sum(len(line) + 1 for line in lines) < FILE_BYTES:
            lines.append(f"def handler_{index}_{number}(value: int) -> int:")
            lines.append(f"    return value * {number + index} + {len(lines)}  # step {number}")
            number += 1
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("\n".join(lines) + "\n")
        names.append(name)
    return names


def read_tool(root: Path) -> Tool:
    async def execute(arguments: dict[str, Any], signal: AbortSignal, on_update: OnUpdate) -> str:
        return (root / arguments["path"]).read_text()

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return Tool(name="read", description="Read a file.", parameters=schema, execute=execute)


def agent(request: ModelRequest) -> Reply:
    last = request.messages[-1]
    if last["role"] == "user":
        wanted = re.search(r"READ (\S+)", last["content"])
        if wanted:
            return Reply(calls=(("read", {"path": wanted.group(1)}),))
        return Reply(text="It defines handlers that scale a value; nothing odd.")
    return Reply(text="Read it: a module of small handler functions.")


def summariser(request: ModelRequest) -> Reply:
    text = request.messages[-1]["content"]
    assert isinstance(text, str)
    goal = re.search(r"GOAL: [^\n\"]*", text)
    files = sorted(set(re.findall(r"src/module_\d+\.py", text)))
    return Reply(
        text=f"## Goal\n{goal.group(0) if goal else '?'}\n## Progress\n### Done\n"
        + "\n".join(f"- reviewed {f}" for f in files[-8:])
    )


async def run(policy: str, window: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        names = make_files(root)
        log = SessionLog.create(Path(tmp) / "sessions", cwd=str(root))
        model = ScriptedModel([agent] * 10_000, context_window=window)
        summary_model = ScriptedModel([summariser] * 1_000, context_window=window, id="summariser")
        keeper = Housekeeper(log, model, ContextSettings(policy=policy), summarizer=summary_model)
        harness = Harness(
            system="You review Python modules and answer questions about them.",
            tools=[read_tool(root)],
            model=model,
            build_request=keeper.build_request,
            before_request=keeper.before_request,
            recover_overflow=keeper.recover_overflow,
        )
        harness.subscribe(log.listener())
        answered = 0
        asked = 0
        for index, name in enumerate(names):
            goal = "GOAL: review every module under src/ for odd handlers. " if index == 0 else ""
            for number, question in enumerate(QUESTIONS):
                text = question.format(name=name)
                prompt = f"{goal}READ {name} then answer: {text}" if number == 0 else text
                goal = ""
                asked += 1
                if await harness.prompt(prompt).wait() == "stop":
                    answered += 1
        log.close()
        usages = model.usages
        total = sum(u["input"] + u["cacheRead"] for u in usages)
        cached = sum(u["cacheRead"] for u in usages)
        largest = max(estimate_tokens(render_request(r)) for r in model.requests)
        return {
            "policy": policy,
            "input": total,
            "cached": cached / total if total else 0.0,
            "largest": largest,
            "turns": len(model.requests),
            "answered": f"{answered}/{asked}",
            "compactions": len(summary_model.requests),
        }


async def table(window: int) -> None:
    policies = ("none", "cache", "clear", "compact", "default")
    rows = [await run(policy, window) for policy in policies]
    none_input = rows[0]["input"]
    print(f"\nwindow {window:,} tokens; {FILES} files of ~{FILE_BYTES:,} bytes, 3 questions each")
    header = f"{'policy':<8} {'input tokens':>13} {'vs none':>8} {'from cache':>10} {'largest':>8} {'turns':>6} {'answered':>9} {'summaries':>9}"
    print(header)
    for row in rows:
        print(
            f"{row['policy']:<8} {row['input']:>13,} {row['input'] / none_input:>8.2f} "
            f"{row['cached']:>10.1%} {row['largest']:>8,} {row['turns']:>6} "
            f"{row['answered']:>9} {row['compactions']:>9}"
        )


async def main() -> None:
    for window in (WINDOW, SMALL_WINDOW):
        await table(window)


if __name__ == "__main__":
    asyncio.run(main())
