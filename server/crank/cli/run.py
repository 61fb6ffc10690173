"""``crank run``: one prompt in the current directory, for scripts and CI.

It drives the same ``WorkspaceHost`` as ``crank serve`` and ``crank acp`` (with the
terminal as its editor, ``terminal.TerminalClient``), so a run here has what a run
there has: the session log, compaction, the context policies, overflow recovery, the
approval router, the prompt watcher, ``/skill:`` and template commands. What is
particular to the command line is only what is printed (``output.py``: the reply
streamed to stdout and one line per tool call on stderr, or with ``--json`` every
event envelope as one line) and the answers to the tools' questions, which nobody is
asked (``terminal.answer``): the file tools stay in the current directory and out of
the secret locations; commands run in the sandbox (crank.tools.sandbox; the user
config file's ``sandbox`` and the flags choose how), and where there is none they are
refused unless ``--no-sandbox`` is given.

The session is saved like any other (``crank sessions list``), so ``--continue``
picks it up. Ctrl-C aborts the run cleanly: the partial reply is recorded and the
exit status is 130. The built-in commands (``/compact``, ...) act on an editor's
session and are refused. Exit statuses: ``exits.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from crank.agent import wiretext
from crank.agent.messages import AssistantMessage
from crank.session import SessionError
from crank.tools.sandbox import SandboxSettings
from crank.vendors import ConfigError
from crank.workspace import CrankError, WorkspaceHost
from crank.workspace.attachments import prompt_images
from crank.workspace.commands import BUILTIN_NAMES, parse_command
from crank.workspace.mcp import RUN_WAIT_S
from crank.workspace.settings import Settings, merge_layers, read_config_file

from . import exits
from .output import JsonLines, PlainText, RunOutput
from .terminal import TerminalClient


class UsageError(Exception):
    """Bad input from the command line or its files; printed as ``Error: ...``."""


def add_run_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser("run", help="run one prompt in the current directory")
    parser.add_argument("prompt", nargs="+", help="what to ask the agent")
    parser.add_argument("--json", action="store_true", help="print every event as a JSON line")
    parser.add_argument(
        "--image",
        action="append",
        default=[],
        metavar="FILE",
        help="send a PNG, JPEG, GIF or WebP image with the prompt (repeatable)",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--continue",
        dest="resume",
        action="store_true",
        help="continue the newest session of this directory",
    )
    where.add_argument("--session", metavar="FILE", help="continue the session in FILE")
    parser.add_argument("--max-turns", type=int, default=None, metavar="N")
    parser.add_argument(
        "--script",
        metavar="FILE",
        help='use a scripted model: a JSON file {"replies": [...]} (offline)',
    )
    parser.add_argument(
        "--model",
        metavar="ID",
        help="the model to ask, on the configured provider (instead of CRANK_MODEL or the config)",
    )
    parser.add_argument(
        "--trust",
        action="store_true",
        help="load this project's AGENTS.md and skills (trusted workspace)",
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help="only read, ls, grep and find (no write, edit or bash)",
    )
    parser.add_argument("--session-dir", default=None, help="where session files live")
    parser.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run the agent's commands unconfined, as you (needed where no sandbox exists)",
    )
    parser.add_argument(
        "--network",
        action="store_true",
        help="let sandboxed commands use the network (off by default)",
    )
    parser.set_defaults(handler=run_command)


def current_directory() -> Path:
    """The folder ``crank run`` works in; one that was deleted under the shell is refused."""
    try:
        return Path(os.getcwd())
    except FileNotFoundError:
        raise UsageError(
            "the current directory no longer exists (it was deleted or moved): "
            "cd into an existing folder and run crank run there"
        ) from None


def run_settings(args: argparse.Namespace) -> Settings:
    """The workspace settings of one ``crank run``: the user config file's, with the
    flags over them (trust only with ``--trust``; the mode from ``--read-only``), and
    MCP servers still starting waited for up to ``RUN_WAIT_S`` unless the file sets
    ``mcpStartupWaitMs``."""
    layer: dict[str, Any] = {
        "trusted": args.trust,
        "permissionMode": "readOnly" if args.read_only else "ask",
    }
    if args.session_dir:
        layer["sessionDir"] = args.session_dir
    provider: dict[str, Any] = {}
    if args.script:
        provider.update(api="scripted", script=args.script)
    if args.model:
        provider["model"] = args.model
    if provider:
        layer["provider"] = provider
    settings = merge_layers([("crank run", layer)])
    if "mcpStartupWaitMs" not in read_config_file():
        # A script wants the tools it was configured with: it waits longer for servers
        # still starting than an editor's first answer may (unless the user says).
        settings = dataclasses.replace(settings, mcp_startup_wait_ms=int(RUN_WAIT_S * 1000))
    chosen = settings.sandbox
    sandbox = SandboxSettings(
        mode="off" if args.no_sandbox else chosen.mode, network=args.network or chosen.network
    )
    return dataclasses.replace(settings, sandbox=sandbox)


def session_file(raw: str) -> Path:
    """``--session FILE``: a session file that exists (a mistyped path is said as one)."""
    path = Path(raw).expanduser()
    if not path.is_file():
        raise UsageError(
            f"--session {raw}: there is no session file there; "
            "crank sessions list shows this directory's sessions and their files"
        )
    return path


def sessions_folder(folder: Path, session_dir: str | None) -> None:
    """Make the folder the session file goes into, or say in one line why it cannot
    be and what to do (before any model is asked)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK):
            raise PermissionError(13, "Permission denied", str(folder))
    except OSError as exc:
        why = f"{exc.strerror or exc}: {exc.filename or folder}"
        if session_dir:
            raise UsageError(
                f"--session-dir {session_dir} cannot hold sessions ({why}); "
                "pass a folder you can write"
            ) from None
        raise UsageError(
            f"the data folder for sessions {folder} cannot be written ({why}); make it "
            "writable, point XDG_DATA_HOME elsewhere, or pass --session-dir FOLDER"
        ) from None


def refuse_builtin(text: str) -> None:
    parsed = parse_command(text)
    if not isinstance(parsed, str) and parsed.name in BUILTIN_NAMES:
        raise UsageError(f"/{parsed.name} is an editor command; crank run does not perform it")


async def run_prompt(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    cwd = current_directory()
    images = prompt_images([{"path": str(cwd / p)} for p in args.image], "--image")
    text = " ".join(args.prompt)
    refuse_builtin(text)
    settings = run_settings(args)
    client = TerminalClient(err)
    output: RunOutput = JsonLines(out) if args.json else PlainText(out, err)
    # crank run remembers no "always allow" answer and follows none given in an
    # editor: its rules file is a fresh, empty folder's, gone when the run ends.
    with tempfile.TemporaryDirectory(prefix="crank-run-") as scratch:
        host = WorkspaceHost(
            cwd.as_uri(),
            cwd,
            client,
            settings,
            rules_file=Path(scratch) / "rules.json",
            resume_last=False,
            max_turns=args.max_turns,
        )
        try:
            return await _drive(host, args, text, images, client, output, err)
        finally:
            await host.close()


async def _drive(
    host: WorkspaceHost,
    args: argparse.Namespace,
    text: str,
    images: list[Any],
    client: TerminalClient,
    output: RunOutput,
    err: TextIO,
) -> int:
    if args.session:
        await host.open_session_file(session_file(args.session))
    elif args.resume:
        await host.open_newest_session()
    await host.start()
    sessions_folder(Path(host.state()["sessionFile"]).parent, args.session_dir)
    sandbox = host.state()["sandbox"]
    if not args.read_only and sandbox["mode"] != "off" and not sandbox["available"]:
        print(f"crank: no sandbox ({sandbox['detail']}): commands are refused", file=err)
    started = await host.submit(text, images=images)
    if "imagesOmitted" in started:
        print(f"crank: {started['imagesOmitted']}", file=err)
    run_id = started["runId"]
    interrupted = False
    aborting: list[asyncio.Task[object]] = []

    def on_interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        aborting.append(asyncio.create_task(host.abort()))

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, on_interrupt)
    try:
        while True:
            envelope = await client.events.get()
            if envelope.get("runId") != run_id:
                continue  # the workspace's own news between runs
            output.show(envelope)
            if envelope["event"]["type"] == "agent_settled":
                break
        for task in aborting:
            await task
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    if interrupted:
        print("crank: aborted; the session is saved", file=err)
        return exits.INTERRUPTED
    return report(output.reply, err)


def report(reply: AssistantMessage | None, err: TextIO) -> int:
    """The exit status says how the run ended; a failure is said once on stderr."""
    if reply is None:
        print("Error: the run produced no reply", file=err)
        return exits.FAILURE
    if reply["stopReason"] in ("error", "aborted"):
        print(wiretext.shown(f"Error: {reply.get('errorMessage', reply['stopReason'])}"), file=err)
        return exits.FAILURE
    if reply["stopReason"] == "length":
        print("crank: the answer was cut short by the model's output length limit", file=err)
    return exits.OK


def run_command(
    args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    try:
        return asyncio.run(run_prompt(args, out, err))
    except KeyboardInterrupt:
        print("crank: interrupted", file=err)
        return exits.INTERRUPTED
    except (UsageError, ConfigError, SessionError) as exc:
        print(f"Error: {exc}", file=err)
        return exits.FAILURE
    except CrankError as exc:  # a bad --image, an unknown command, no provider
        print(f"Error: {exc.message}", file=err)
        return exits.FAILURE
    except BrokenPipeError:
        raise  # the reader went away (``| head``): main() ends quietly
    except OSError as exc:  # a file-system problem no check above foresaw
        print(f"Error: {exc.strerror or exc}: {exc.filename or ''}", file=err)
        return exits.FAILURE
