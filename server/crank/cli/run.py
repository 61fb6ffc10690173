"""``crank run``: one prompt in the current directory, for scripts and CI.

Without ``--json`` only the final answer goes to stdout (or ``Error: <message>`` on
stderr and exit status 1); with it, every event is one line of JSON. The session is
saved like any other (``crank sessions list``), so ``--continue`` picks it up. Ctrl-C
aborts the run cleanly: the partial reply is recorded and the exit status is 130.

Nobody is asked, so what the agent may do is fixed here: the file tools stay in the
current directory (``refuse_outside``) and out of the secret locations; commands run in
the sandbox (crank.tools.sandbox; the user config file's ``sandbox`` and the flags
choose how), and where there is none they are refused unless ``--no-sandbox`` is given.

A prompt ``/skill:name args`` or ``/template args`` is expanded as in the editor
(crank.workspace.commands); the built-ins (``/compact``, ...) are refused.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import signal
import sys
from pathlib import Path
from typing import TextIO, cast

import anyio.to_thread

from crank.agent.harness import Harness
from crank.agent.messages import AssistantMessage, text_of
from crank.agent.model import Model, accepts_images
from crank.agent.scripted import ScriptedModel, reply_from_dict
from crank.prompt import PromptLocations, compute_prompt, load_inputs
from crank.session import SessionError, SessionLog, SessionStore
from crank.session.blobs import loading_requests
from crank.session.notes import Notes, notes_path, notes_request
from crank.tools import (
    ApprovalRequest,
    Approve,
    Decision,
    ToolContext,
)
from crank.tools.sandbox import SandboxSettings, SandboxStatus, probe, protected_paths
from crank.vendors import ConfigError, create_model, resolve_provider
from crank.vendors.secrets import provider_env
from crank.workspace import CrankError
from crank.workspace.attachments import prompt_images
from crank.workspace.commands import BUILTIN_NAMES, CommandCatalog, parse_command
from crank.workspace.mcp import start_for_run
from crank.workspace.settings import merge_layers
from crank.workspace.toolset import session_tools

EXIT_INTERRUPTED = 130


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


def load_script(path: Path) -> ScriptedModel:
    """A scripted model from ``{"replies": [...]}``; every problem names the file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        replies = [reply_from_dict(reply) for reply in data["replies"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"cannot use script {path}: {exc}") from exc
    return ScriptedModel(replies, id=f"scripted:{path.name}")


def choose_model(script: str | None) -> Model:
    if script:
        return load_script(Path(script))
    config = resolve_provider(env=provider_env())
    if config.api == "scripted":
        raise UsageError("the configured provider is 'scripted': pass --script FILE")
    return create_model(config)


def open_session(args: argparse.Namespace, cwd: Path) -> SessionLog:
    store = SessionStore(cwd, args.session_dir)
    if args.session:
        return SessionLog.open(Path(args.session))
    if args.resume:
        newest = store.newest()
        if newest is not None:
            return SessionLog.open(newest)
    return store.create()


def _final_reply(harness: Harness) -> AssistantMessage | None:
    for message in reversed(harness.messages):
        if message["role"] == "assistant":
            return cast(AssistantMessage, message)
    return None


def command_gate(status: SandboxStatus, settings: SandboxSettings) -> Approve:
    """``crank run`` asks nobody: a command runs if it is confined, or if the user
    said ``--no-sandbox``; otherwise it is refused with a message saying how."""

    async def gate(request: ApprovalRequest) -> Decision:
        if request["toolName"] != "bash" or settings.mode == "off" or status.available:
            return Decision.allow()
        return Decision.reject(
            f"crank run does not run commands without a sandbox, and there is none here "
            f"({status.detail}). Run crank run --no-sandbox to allow unconfined commands"
        )

    return gate


def sandbox_settings(args: argparse.Namespace) -> SandboxSettings:
    """The user config file's ``sandbox`` (if any), then the flags over it."""
    try:
        chosen = merge_layers([]).sandbox
    except CrankError as exc:
        raise UsageError(exc.message) from exc
    return SandboxSettings(
        mode="off" if args.no_sandbox else chosen.mode, network=args.network or chosen.network
    )


def tool_context(args: argparse.Namespace, cwd: Path, err: TextIO) -> ToolContext:
    settings = sandbox_settings(args)
    status = probe()
    if not args.read_only and settings.mode != "off" and not status.available:
        print(f"crank: no sandbox ({status.detail}): commands are refused", file=err)
    extra = [Path(args.session_dir).expanduser()] if args.session_dir else []
    return ToolContext(
        cwd,
        approve=command_gate(status, settings),
        sandbox=lambda: settings,
        protected=protected_paths(extra),
    )


async def expand_prompt(text: str, locations: PromptLocations) -> tuple[str, str | None]:
    """The text to send and, for a ``/skill:`` or template command, what was typed
    (the skills and templates are loaded only for a command, before any session file
    is made). Built-ins act on an editor's session and are refused (``UsageError``)."""
    parsed = parse_command(text)
    if isinstance(parsed, str):
        return parsed, None
    if parsed.name in BUILTIN_NAMES:
        raise UsageError(f"/{parsed.name} is an editor command; crank run does not perform it")
    inputs = await anyio.to_thread.run_sync(load_inputs, locations)
    try:
        expansion = CommandCatalog(inputs.skills, inputs.templates).expand(parsed)
    except CrankError as exc:
        raise UsageError(exc.message) from exc
    return expansion.text, expansion.typed


async def run_prompt(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    cwd = Path.cwd()
    images = prompt_images([{"path": str(cwd / p)} for p in args.image], "--image")
    model = choose_model(args.script)
    if images and not accepts_images(model):
        print(
            f"crank: {model.id} does not accept images; it gets a text placeholder for each",
            file=err,
        )
    context = tool_context(args, cwd, err)
    locations = PromptLocations(cwd, cwd, args.trust)
    text, typed = await expand_prompt(" ".join(args.prompt), locations)
    log = open_session(args, cwd)
    mcp = await start_for_run(cwd, args.trust, lambda line: print(line, file=err))
    try:
        # a continued session that was compacted is offered recall, as in the editor
        notes = Notes(notes_path(log.path))
        extra = mcp.tools(context.approve)
        tools = session_tools(context, log, read_only=args.read_only, notes=notes, extra=extra)
        build = await compute_prompt(tools, locations, datetime.date.today())
        for problem in build.problems:
            print(f"crank: {problem}", file=err)
        harness = Harness(
            system=build.prompt.text,
            tools=tools,
            model=model,
            messages=log.replay(),
            max_turns=args.max_turns,
            build_request=loading_requests(log.load_image, model, notes_request(notes)),
        )
        harness.subscribe(log.listener(harness.messages_after))
        interrupted = False

        aborting: list[asyncio.Task[str]] = []

        def on_interrupt() -> None:
            nonlocal interrupted
            interrupted = True
            aborting.append(asyncio.ensure_future(harness.abort()))

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
        try:
            run = harness.prompt(text, images, typed=typed)
            async for event in run.events():
                if args.json:
                    print(
                        json.dumps(
                            {"runId": run.id, "sessionId": log.session_id, "event": event},
                            ensure_ascii=False,
                        ),
                        file=out,
                        flush=True,
                    )
            await run.wait()
        finally:
            loop.remove_signal_handler(signal.SIGINT)
    finally:
        await mcp.close()
        log.close()
    if interrupted:
        print("crank: aborted; the session is saved", file=err)
        return EXIT_INTERRUPTED
    return report(_final_reply(harness), args.json, out, err)


def report(reply: AssistantMessage | None, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Print the answer the way a script wants it; the exit status says how it ended."""
    if reply is None:
        print("Error: the run produced no reply", file=err)
        return 1
    if reply["stopReason"] in ("error", "aborted"):
        print(f"Error: {reply.get('errorMessage', reply['stopReason'])}", file=err)
        return 1
    if not as_json:
        print(text_of(reply), file=out)
    if reply["stopReason"] == "length":
        print("crank: the answer was cut short by the model's output length limit", file=err)
    return 0


def run_command(
    args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    try:
        return asyncio.run(run_prompt(args, out, err))
    except (UsageError, ConfigError, SessionError) as exc:
        print(f"Error: {exc}", file=err)
        return 1
    except CrankError as exc:  # a bad --image
        print(f"Error: {exc.message}", file=err)
        return 2
