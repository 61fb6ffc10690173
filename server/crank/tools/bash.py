"""bash: run a shell command in the workspace, streaming its output.

Output (stdout and stderr merged, in arrival order) goes to ``on_update`` as it
arrives. The result keeps the end of the output, where errors and summaries are; when
that is not all of it, the whole output is saved in ``output_dir`` and the last line
says where. A timeout or an abort (the task is cancelled) kills the whole process
group; the cancellation is then re-raised for the caller.

With ``ctx.terminal`` set, the command runs in the editor's terminal instead, so the
user watches it: the same sandboxed argv and limits, under ``env -i`` with Crank's
scrubbed environment, in a process group of its own that Crank ends itself on a
timeout or an abort (``detached``), so the editor's own environment (which may hold
provider keys) never reaches it and nothing it started outlives it. The editor keeps the last
``TERMINAL_OUTPUT_BYTES`` of output; the terminal shows the rest live.
"""

from __future__ import annotations

import asyncio
import codecs
import signal as signals
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from crank.agent import wiretext
from crank.agent.tools import (
    MAX_BYTES,
    MAX_LINES,
    OnUpdate,
    Tool,
    ToolCall,
    ToolInfo,
    ToolOutput,
    truncate,
)

from .agreement import command_note, with_note
from .capture import Capture
from .change import declined
from .context import CommandPreview, EditorTerminal, TerminalRun, ToolContext, approval_request
from .detached import detached
from .details import CommandDetails
from .limits import Cage, Limits, limit_note, memory_note
from .process import (
    CONFINED_GRACE_SECONDS,
    KILL_GRACE_SECONDS,
    Box,
    kill_group,
    start,
)
from .sandbox import probe

INFO = ToolInfo(
    "bash",
    kind="execute",
    label="Run command",
    shows="command",
    result="last_lines",
    details=CommandDetails,
)
"""What bash says about itself to frontends and clients (``ToolInfo``)."""

DEFAULT_TIMEOUT = 120.0
DRAIN_SECONDS = 0.5
TERMINAL_OUTPUT_BYTES = 1024 * 1024
READ_CHUNK = 65536

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "minLength": 1, "description": "Shell command to run."},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": f"Seconds before the command is killed (default {DEFAULT_TIMEOUT:g}).",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


@dataclass
class Finished:
    exit_code: int | None
    timed_out: bool
    left_running: bool
    capture: Capture
    note: str | None = None
    """A limit the command reached (``limits.limit_note``): the result is an error."""


async def _pump(stream: asyncio.StreamReader, capture: Capture, on_update: OnUpdate) -> None:
    # bytes that are not UTF-8 are shown as \xNN, by the one rule (agent/wiretext.py)
    decoder = codecs.getincrementaldecoder("utf-8")(errors=wiretext.OS_POLICY)
    while chunk := await stream.read(READ_CHUNK):
        text = decoder.decode(chunk)
        if text:
            capture.add(text)
            on_update(text)
    rest = decoder.decode(b"", final=True)
    if rest:
        capture.add(rest)
        on_update(rest)


async def uncancellable(step: Coroutine[Any, Any, None]) -> None:
    """Await ``step`` to its end even if the caller is cancelled meanwhile (a second
    abort); the cancellation is re-raised once it is done."""
    task = asyncio.create_task(step)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    task.result()
    if cancelled:
        raise asyncio.CancelledError


async def _end(starting: asyncio.Future[asyncio.subprocess.Process], grace: float) -> None:
    """Whatever state the start is in, see that nothing it began is left running:
    wait for the start to finish (it cannot be stopped half-way), then kill the
    group."""
    try:
        process = await starting
    except BaseException:
        return  # it never started
    await kill_group(process, grace)


async def run_command(
    ctx: ToolContext, command: str, seconds: float, on_update: OnUpdate, box: Box | None = None
) -> Finished:
    """Run ``command``; on every way out that is not its own end (timeout, abort,
    any error), the process group is killed in a cleanup no cancellation can cut
    short, including an abort that lands while the process is being started."""
    capture = Capture(ctx.output_dir)
    grace = KILL_GRACE_SECONDS if box is None else CONFINED_GRACE_SECONDS
    settings = ctx.sandbox()
    cage = None
    if box is not None:
        cage = await asyncio.to_thread(Cage.make, settings.limits.processes)
    starting = asyncio.create_task(
        start(command, ctx.root, box, settings.env, settings.limits, cage)
    )
    try:
        done = await _run(starting, capture, grace, seconds, on_update, cage)
        return with_limits(done, settings.limits)
    finally:
        if cage is not None:
            cage.close()


async def _run(
    starting: asyncio.Future[asyncio.subprocess.Process],
    capture: Capture,
    grace: float,
    seconds: float,
    on_update: OnUpdate,
    cage: Cage | None,
) -> Finished:
    reader: asyncio.Task[None] | None = None
    try:
        process = await asyncio.shield(starting)
        assert process.stdout is not None
        reader = asyncio.create_task(_pump(process.stdout, capture, on_update))
        timed_out = False
        try:
            async with asyncio.timeout(seconds):
                await process.wait()
        except TimeoutError:
            timed_out = True
            await uncancellable(kill_group(process, grace))
        done, _ = await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
        left_running = not done
        if left_running:
            reader.cancel()
        else:
            reader.result()
    except BaseException:
        await uncancellable(_end(starting, grace))
        if reader is not None:
            reader.cancel()
        capture.close()
        raise
    return Finished(process.returncode, timed_out, left_running, capture, limit_note(cage))


def with_limits(done: Finished, limits: Limits) -> Finished:
    """``done`` with the memory limit's note when its output says an allocation
    failed (``limits.memory_note``), beside the process limit's (if any)."""
    note = memory_note(limits, done.exit_code, done.capture.tail())
    if note is None:
        return done
    done.note = f"{done.note}\n{note}" if done.note else note
    return done


def _exit_code(ran: TerminalRun) -> int | None:
    """The terminal's exit as a process's return code (a signal as its negative)."""
    if ran.exit_code is not None:
        return ran.exit_code
    if ran.signal:
        try:
            return -signals.Signals[ran.signal].value
        except KeyError:
            return None
    return None


async def run_in_terminal(
    ctx: ToolContext,
    terminal: EditorTerminal,
    call_id: str,
    command: str,
    seconds: float,
    box: Box | None,
) -> tuple[Finished, bool]:
    """Run ``command`` in the editor's terminal; the Finished (its output captured as
    a local command's is) and whether the editor cut the output's beginning."""
    settings = ctx.sandbox()
    cage = None
    if box is not None:
        cage = await asyncio.to_thread(Cage.make, settings.limits.processes)
    job = detached(command, ctx.root, box, settings.env, settings.limits, cage)
    try:
        ran = await terminal.run(call_id, job, ctx.root, seconds, TERMINAL_OUTPUT_BYTES)
        note = limit_note(cage)
    finally:
        job.close()
    capture = Capture(ctx.output_dir)
    if ran.output:
        capture.add(ran.output)
    done = Finished(_exit_code(ran), ran.timed_out, False, capture, note)
    return with_limits(done, settings.limits), ran.truncated


def _status(done: Finished, timeout: float) -> str | None:
    code = done.exit_code
    if done.timed_out:
        return f"Command timed out after {timeout:g} seconds; it and its children were killed."
    if code is not None and code < 0:
        try:
            name = signals.Signals(-code).name
        except ValueError:
            name = str(-code)
        return f"Command was killed by signal {name}."
    if code:
        return f"Command exited with code {code}."
    return None


def report(done: Finished, timeout: float) -> ToolOutput:
    capture = done.capture
    cut = truncate(capture.tail(), "tail", max_lines=MAX_LINES - 6, max_bytes=MAX_BYTES - 1024)
    notes: list[str] = []
    saved = None
    if cut.truncated or capture.path is not None:
        saved = capture.try_spill()
        where = (
            f"Full output saved to {saved}"
            if saved is not None
            else f"The full output could not be saved: {capture.save_error}"
        )
        notes.append(
            f"[Output truncated: showing the last {cut.kept_lines} of {capture.lines} lines. "
            f"{where}]"
        )
    capture.close()
    if done.left_running:
        notes.append(
            "[Background processes still hold the output open; later output is not shown.]"
        )
    status = _status(done, timeout)
    if done.note:
        notes.append(done.note)
    if status:
        notes.append(status)
    body = cut.text if capture.total_chars else "(no output)"
    content = "\n\n".join([body.rstrip("\n"), *notes])
    details = {
        "exitCode": done.exit_code,
        "timedOut": done.timed_out,
        "fullOutputPath": str(saved) if saved else None,
    }
    return ToolOutput(content, is_error=status is not None or bool(done.note), details=details)


async def box_for(ctx: ToolContext) -> Box | None:
    """The sandbox for the next command, or None when it runs unconfined (mode
    ``off``, or no sandbox on this machine: the frontends decide, through ``approve``,
    whether an unconfined command may run at all)."""
    settings = ctx.sandbox()
    if settings.mode == "off" or not (await asyncio.to_thread(probe)).available:
        return None
    return Box(settings, ctx.protected, (ctx.output_dir,))


def make_bash(ctx: ToolContext) -> Tool:
    async def execute(call: ToolCall, signal: object, on_update: OnUpdate) -> ToolOutput:
        args = call.arguments
        command: str = args["command"]
        timeout = float(args.get("timeout", DEFAULT_TIMEOUT))
        preview: CommandPreview = {"kind": "command", "command": command}
        decision = await ctx.approve(approval_request(call, preview))
        if not decision.allowed:
            return declined(f"running the command `{command}`", decision)
        box = await box_for(ctx)
        if ctx.terminal is None:
            done = await run_command(ctx, command, timeout, on_update, box)
            return with_note(report(done, timeout), await command_note(ctx))
        done, cut = await run_in_terminal(ctx, ctx.terminal, call.id, command, timeout, box)
        output = report(done, timeout)
        if cut:
            output = with_note(
                output,
                f"[The editor's terminal kept only the last {TERMINAL_OUTPUT_BYTES // 1024} KB "
                "of the output; the beginning is lost.]",
            )
        return with_note(output, await command_note(ctx))

    return Tool(
        info=INFO,
        name="bash",
        description=(
            "Run a shell command (bash -c) in the workspace folder. stdout and stderr are merged; "
            "the last part of the output is returned and, when it is long, the whole output is "
            f"saved to a file whose path is given. Killed after timeout seconds (default "
            f"{DEFAULT_TIMEOUT:g}). A non-zero exit code is reported as an error."
        ),
        parameters=PARAMETERS,
        execute=execute,
        snippet="Run a shell command in the workspace",
        guidelines=(
            "Say what a command is for before you run it.",
            "Give long-running commands a timeout, and do not start commands that wait for input.",
        ),
        keep="tail",
        mutates=True,
    )
