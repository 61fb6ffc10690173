"""Context policies on one long scripted task, once per setting.

Sixty files of a few KB; for each, a prompt that reads it and asks a question, then two
more questions about it, and from the eleventh file on one question about the file ten
before it (what a long task does: it comes back to what it saw a while ago). The scripted model reports prefix-cache usage (the longest
prefix shared with the previous request) and refuses requests over its window. The
summariser is a scripted model that writes a summary from what it is sent.

The scripted agent answers a question about a file from the file's text when the
request still shows it, and reads the file again when it does not (a result cleared,
a turn trimmed, a summary in its place): those are the re-reads counted. With notes
(the `+notes` rows) it also saves a one-line note after each first read, and when the
file is no longer shown but its key is listed at the end of the request, it reads the
note instead of the file. A scripted agent cannot decide to use notes: the rows show
what the notes cost and save when an agent does use them this way, not whether a real
model would.

Prints one row per policy: total input tokens (cached and not), the share read from the
cache, the largest request, the number of turns (model requests), whether every
prompt was answered, summaries, re-reads and note reads, for a 200k window (where
`none` fits) and a 32k one (where it cannot).
Run: .venv/bin/python bench/context_policies.py
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
from crank.agent.tools import OnUpdate, Tool, ToolCall
from crank.session import SessionLog
from crank.session.housekeeping import ContextSettings, Housekeeper
from crank.session.notes import INDEX, Notes, notes_path
from crank.tools.notes import make_note_tools

WINDOW = 200_000
SMALL_WINDOW = 32_000
FILES = 60
FILE_BYTES = 6_000
REVISIT = 10
"""After each file from the eleventh on, one question about the file ten before it."""
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


def read_tool(root: Path, reads: list[str]) -> Tool:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        reads.append(call.arguments["path"])
        return (root / call.arguments["path"]).read_text()

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    return Tool(name="read", description="Read a file.", parameters=schema, execute=execute)


NAME = re.compile(r"src/module_\d+\.py")
INDEX_START = INDEX.split("{")[0]


def key_of(name: str) -> str:
    return name.removeprefix("src/").removesuffix(".py")


def shown(request: ModelRequest, name: str, key: str) -> bool:
    """The file's text (or its note, read back) is still in the request."""
    for message in request.messages:
        if message["role"] != "toolResult":
            continue
        content = message["content"]
        if content.startswith(f"# {name}:") or content.startswith(f"[note {key}]"):
            return True
    return False


def agent(request: ModelRequest) -> Reply:
    messages = request.messages
    keys: set[str] = set()
    if messages[-1]["role"] == "user" and messages[-1]["content"].startswith(INDEX_START):
        keys = set(messages[-1]["content"][len(INDEX_START) :].rstrip("]").split(", "))
        messages = messages[:-1]
    last = messages[-1]
    if last["role"] == "user":
        wanted = re.search(r"READ (\S+)", last["content"])
        if wanted:
            return Reply(calls=(("read", {"path": wanted.group(1)}),))
        name = NAME.search(last["content"])
        if name and not shown(request, name.group(0), key_of(name.group(0))):
            key = key_of(name.group(0))
            if key in keys:
                return Reply(calls=(("note_read", {"key": key}),))
            return Reply(calls=(("read", {"path": name.group(0)}),))
        return Reply(text="It defines handlers that scale a value; nothing odd.")
    if last["role"] == "toolResult" and last["toolName"] == "read":
        key = key_of(last["content"][2:].split(":")[0])
        if NOTES_OFFERED in {t["name"] for t in request.tools} and key not in keys:
            note = f"{key}: small handlers that scale a value; nothing odd"
            return Reply(calls=((NOTES_OFFERED, {"key": key, "text": note}),))
    return Reply(text="Read it: a module of small handler functions.")


NOTES_OFFERED = "note_save"


def summariser(request: ModelRequest) -> Reply:
    text = request.messages[-1]["content"]
    assert isinstance(text, str)
    goal = re.search(r"GOAL: [^\n\"]*", text)
    files = sorted(set(re.findall(r"src/module_\d+\.py", text)))
    return Reply(
        text=f"## Goal\n{goal.group(0) if goal else '?'}\n## Progress\n### Done\n"
        + "\n".join(f"- reviewed {f}" for f in files[-8:])
    )


async def run(policy: str, window: int, *, notes: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        names = make_files(root)
        log = SessionLog.create(Path(tmp) / "sessions", cwd=str(root))
        model = ScriptedModel([agent] * 10_000, context_window=window)
        summary_model = ScriptedModel([summariser] * 1_000, context_window=window, id="summariser")
        keeper = Housekeeper(log, model, ContextSettings(policy=policy), summarizer=summary_model)
        reads: list[str] = []
        tools = [read_tool(root, reads)]
        if notes:
            tools += make_note_tools(Notes(notes_path(log.path)))
        harness = Harness(
            system="You review Python modules and answer questions about them.",
            tools=tools,
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
            if index >= REVISIT:  # back to a file seen a while ago
                asked += 1
                older = names[index - REVISIT]
                if await harness.prompt(f"Back to {older}: what did it define?").wait() == "stop":
                    answered += 1
        log.close()
        usages = model.usages
        total = sum(u["input"] + u["cacheRead"] for u in usages)
        cached = sum(u["cacheRead"] for u in usages)
        largest = max(estimate_tokens(render_request(r)) for r in model.requests)
        calls = [
            block["name"]
            for message in log.replay()
            if message["role"] == "assistant"
            for block in message["content"]
            if block["type"] == "toolCall"
        ]
        return {
            "policy": policy + ("+notes" if notes else ""),
            "rereads": len(reads) - len(set(reads)),
            "note_reads": calls.count("note_read"),
            "input": total,
            "cached": cached / total if total else 0.0,
            "largest": largest,
            "turns": len(model.requests),
            "answered": f"{answered}/{asked}",
            "compactions": len(summary_model.requests),
        }


POLICIES = ("none", "cache", "clear", "compact", "trim", "default")
WITH_NOTES = ("clear", "compact", "trim", "default")
"""The policies that hide something from a later request, run again with notes."""


async def table(window: int) -> None:
    rows = [await run(policy, window) for policy in POLICIES]
    rows += [await run(policy, window, notes=True) for policy in WITH_NOTES]
    none_input = rows[0]["input"]
    print(f"\nwindow {window:,} tokens; {FILES} files of ~{FILE_BYTES:,} bytes, 3 questions each")
    header = (
        f"{'policy':<14} {'input tokens':>13} {'vs none':>8} {'from cache':>10} {'largest':>8} "
        f"{'turns':>6} {'answered':>9} {'summaries':>9} {'re-reads':>8} {'note reads':>10}"
    )
    print(header)
    for row in rows:
        print(
            f"{row['policy']:<14} {row['input']:>13,} {row['input'] / none_input:>8.2f} "
            f"{row['cached']:>10.1%} {row['largest']:>8,} {row['turns']:>6} "
            f"{row['answered']:>9} {row['compactions']:>9} {row['rereads']:>8} "
            f"{row['note_reads']:>10}"
        )


async def main() -> None:
    for window in (WINDOW, SMALL_WINDOW):
        await table(window)


if __name__ == "__main__":
    asyncio.run(main())
