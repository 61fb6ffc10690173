"""``crank demo``: watch the agent fix a bug, offline, with a scripted model.

A copy of the bundled sample project goes into a temporary folder; a scripted model
(it says so) lists the files, reads the code, runs the tests, edits the bug away and
runs the tests again. The tools are real: the edit really changes the copy and the
tests really run. Nothing touches the network or needs a key.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from . import exits
from .lsp_client import LspClient
from .render import EventPrinter

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


def _header(console: Console, project: Path, how: str) -> None:
    console.rule("[bold]Crank demo")
    console.print(
        "[dim]model:[/] scripted (a stand-in that replays a fixed script; no network, no key)"
    )
    console.print(f"[dim]server:[/] {how}")
    console.print(f"[dim]project:[/] {project}")
    console.print(f"[bold]> {PROMPT}")


def _prepare(workdir: Path) -> tuple[Path, Path]:
    project = workdir / "sample_project"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("__pycache__"))
    script = workdir / "demo-script.json"
    script.write_text(json.dumps(demo_script(), indent=2), encoding="utf-8")
    return project, script


async def _demo_via_server(workdir: Path, console: Console, keep: bool) -> int:
    """The demo as an editor sees it: ``crank serve`` in a child process, spoken to over
    stdio, every ``crank/event`` rendered as it arrives."""
    project, script = _prepare(workdir)
    server_log = (workdir / "server.log").open("wb")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "crank",
        "serve",
        cwd=workdir,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=server_log,
    )
    printer = EventPrinter(console)
    settled = asyncio.Event()
    outcome: dict[str, Any] = {}

    def on_notify(method: str, params: Any) -> None:
        if method != "crank/event":
            return
        event = params["event"]
        printer.show(event)
        if event["type"] == "agent_end":
            outcome["stop"] = event["stopReason"]
        if event["type"] == "agent_settled":
            settled.set()

    async def on_request(method: str, params: Any) -> Any:
        if method == "workspace/configuration":
            return [None for _ in params.get("items", [])]
        if method == "crank/requestPermission":
            return {"decision": "allow"}
        return None

    client = LspClient(process, on_notify, on_request)
    try:
        uri = project.as_uri()
        await client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": project.name}],
                "capabilities": {
                    "experimental": {"crank": {"events": True, "permissionRequests": True}}
                },
                "initializationOptions": {
                    "crank": {
                        "provider": {"api": "scripted", "script": str(script)},
                        "sessionDir": str(workdir / "sessions"),
                        "trusted": True,
                        "permissionMode": "auto",
                    }
                },
            },
        )
        await client.notify("initialized", {})
        _header(console, project, "crank serve (a child process, LSP over stdio)")
        await client.request("crank/prompt", {"text": PROMPT})
        await client.wait_for(settled)
        state = await client.request("crank/state", {})
        where = "" if keep else "  (removed at exit with the demo's folder; --keep keeps it)"
        console.print(f"[dim]session file:[/] {state.get('sessionFile')}{where}")
    except ConnectionError as exc:
        server_log.flush()
        tail = (workdir / "server.log").read_text(errors="replace").splitlines()[-20:]
        console.print(Text(f"Error: {exc}", style="bold red"))
        console.print(Text("\n".join(tail), style="dim"))
        return exits.FAILURE
    finally:
        await client.close()
        server_log.close()
    printer.show_diffs()
    stop = outcome.get("stop", "error")
    console.rule(f"[dim]run ended: {stop}")
    return exits.OK if stop == "stop" else exits.FAILURE


def run_demo(args: argparse.Namespace) -> int:
    console = Console()
    workdir = Path(tempfile.mkdtemp(prefix="crank-demo-"))
    try:
        return asyncio.run(_demo_via_server(workdir, console, args.keep))
    finally:
        if args.keep:
            console.print(f"[dim]kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
