"""``crank demo``: watch the agent fix a bug, offline, with a scripted model.

A copy of the bundled sample project goes into a temporary folder; a scripted model
(it says so) lists the files, reads the code, runs the tests, edits the bug away and
runs the tests again. The tools are real: the edit really changes the copy and the
tests really run. Nothing touches the network or needs a key.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console

from crank.agent.harness import Harness
from crank.prompt import PromptLocations, compute_prompt
from crank.session import SessionStore
from crank.tools import ToolContext, standard_tools

from .render import EventPrinter
from .run import load_script

SAMPLE = Path(__file__).with_name("sample_project")
PROMPT = "The tests in this project fail. Find the bug, fix it, and show me the tests pass."
TEST_COMMAND = "python3 -m unittest -q"


def demo_script() -> dict[str, Any]:
    """What the scripted model will say, turn by turn (it cannot see tool results)."""
    return {
        "replies": [
            {
                "text": "Let me look at the project first.",
                "calls": [{"name": "ls", "arguments": {}}],
            },
            {"calls": [{"name": "read", "arguments": {"path": "stats.py"}}]},
            {
                "text": "Let me run the tests to see what fails.",
                "calls": [{"name": "bash", "arguments": {"command": TEST_COMMAND}}],
            },
            {
                "text": "`mean` divides by `len(numbers) + 1`, so every mean comes out too small. "
                "Fixing the divisor.",
                "calls": [
                    {
                        "name": "edit",
                        "arguments": {
                            "path": "stats.py",
                            "edits": [
                                {
                                    "oldText": "return total / (len(numbers) + 1)",
                                    "newText": "return total / len(numbers)",
                                }
                            ],
                        },
                    }
                ],
            },
            {"calls": [{"name": "bash", "arguments": {"command": TEST_COMMAND}}]},
            {
                "text": "Fixed. `mean` in `stats.py` divided by one more than the number of "
                "values; it now divides by `len(numbers)`, and all three tests pass."
            },
        ]
    }


def add_demo_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("demo", help="watch a scripted agent fix a bug (offline)")
    parser.add_argument("--keep", action="store_true", help="keep the project copy afterwards")
    parser.set_defaults(handler=run_demo)


async def _demo(workdir: Path, console: Console) -> int:
    project = workdir / "sample_project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    script = workdir / "demo-script.json"
    script.write_text(json.dumps(demo_script(), indent=2), encoding="utf-8")
    model = load_script(script)
    tools = standard_tools(ToolContext(project, output_dir=workdir / "tool-output"))
    build = await compute_prompt(
        tools,
        PromptLocations(project, project, True, user_dir=workdir / "no-user-config"),
        datetime.date.today(),
    )
    log = SessionStore(project, workdir / "sessions").create()
    harness = Harness(system=build.prompt.text, tools=tools, model=model, messages=log.replay())
    harness.subscribe(log.listener())
    console.rule("[bold]Crank demo")
    console.print(
        "[dim]model:[/] scripted (a stand-in that replays a fixed script; no network, no key)"
    )
    console.print(f"[dim]project:[/] {project}")
    console.print(f"[dim]session:[/] {log.path}")
    console.print(f"[bold]> {PROMPT}")
    printer = EventPrinter(console)
    run = harness.prompt(PROMPT)
    async for event in run.events():
        printer.show(event)
    stop = await run.wait()
    log.close()
    printer.show_diffs()
    console.rule(f"[dim]run ended: {stop}")
    return 0 if stop == "stop" else 1


def run_demo(args: argparse.Namespace) -> int:
    console = Console()
    workdir = Path(tempfile.mkdtemp(prefix="crank-demo-"))
    try:
        return asyncio.run(_demo(workdir, console))
    finally:
        if args.keep:
            console.print(f"[dim]kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
