"""The editor's half of ACP's client capabilities, implemented for real in the test.

``Recorder`` keeps what the agent sends and answers permissions; ``RecordingClient``
(the suites' default) also offers files and a terminal, as Zed does.

The SDK's client side (``acp.spawn_agent_process``) routes Crank's ``fs/*`` and
``terminal/*`` requests to these methods after parsing their params into the schema's
request models, so a request Crank sends that breaks the schema fails there.

``EditorBuffers`` is an editor with open buffers: a read answers with the buffer when
the file is open (its unsaved text), else with the disk; a write replaces the buffer
and saves it, as Zed does. ``Terminals`` runs each ``terminal/create`` as a real
process, the way an editor's terminal does: in the editor's own environment (here with
a provider key in it, as a user's editor may have), plus the ``env`` asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from acp import RequestError, schema

EDITOR_KEY = "sk-ant-api03-in-the-editors-environment-0123456789"


class Recorder:
    """An ACP client's core: keeps every ``session/update`` and answers permissions in
    turn (``RecordingClient`` adds the files and the terminal real clients offer)."""

    def __init__(self, answers: list[str | None] | None = None) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.answers = list(answers or [])
        self.questions: list[schema.RequestPermissionRequest] = []
        self.asked = asyncio.Event()
        self.changed = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.questions.append(
            schema.RequestPermissionRequest(
                session_id=session_id, tool_call=tool_call, options=options
            )
        )
        self.asked.set()
        choice = self.answers.pop(0) if self.answers else "wait"
        if choice == "wait":  # never answered: the test cancels the turn
            await asyncio.Event().wait()
        if choice is None:
            return schema.RequestPermissionResponse(
                outcome=schema.DeniedOutcome(outcome="cancelled")
            )
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    def kinds(self) -> list[str]:
        return [update.session_update for _, update in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(
            update.content.text for _, update in self.updates if update.session_update == kind
        )

    def of(self, kind: str) -> list[Any]:
        return [update for _, update in self.updates if update.session_update == kind]

    async def wait_for(self, predicate: Any, what: str, within: float = 120) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(loop(), within)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; updates: {self.kinds()}") from None


class EditorBuffers(Recorder):
    def __init__(self, answers: list[str | None] | None = None, **buffers: str) -> None:
        super().__init__(answers)
        self.buffers: dict[str, str] = dict(buffers)
        """Open buffers by absolute path."""
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.events: list[str] = []
        """``read``/``write``/``ask`` in the order they happened."""
        self.fail_reads = False
        self.hang_reads = False
        self.reading = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> schema.RequestPermissionResponse:
        self.events.append("ask")
        return await super().request_permission(session_id, tool_call, options, **kwargs)

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> schema.ReadTextFileResponse:
        self.reads.append(path)
        self.events.append("read")
        self.reading.set()
        if self.hang_reads:  # an editor that never answers
            await asyncio.Event().wait()
        if self.fail_reads:
            raise RequestError.resource_not_found(path)
        if path in self.buffers:
            return schema.ReadTextFileResponse(content=self.buffers[path])
        try:
            return schema.ReadTextFileResponse(
                content=await asyncio.to_thread(Path(path).read_text)
            )
        except OSError:
            raise RequestError.resource_not_found(path) from None

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> schema.WriteTextFileResponse:
        self.writes.append((path, content))
        self.events.append("write")
        self.buffers[path] = content
        await asyncio.to_thread(Path(path).write_text, content)  # the editor saves it
        return schema.WriteTextFileResponse()


class Terminal:
    def __init__(self, process: asyncio.subprocess.Process, limit: int | None) -> None:
        self.process = process
        self.limit = limit
        self.output = b""
        self.truncated = False
        self.killed = False
        self.released = False
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                self.output = self.output[-self.limit :]
                self.truncated = True

    def kill(self) -> None:
        """What closing a terminal does: the whole process group is killed (a pty's
        hangup reaches every process of its foreground group)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.killed = True

    def status(self) -> schema.TerminalExitStatus | None:
        code = self.process.returncode
        if code is None:
            return None
        if code < 0:
            return schema.TerminalExitStatus(signal=signal.Signals(-code).name)
        return schema.TerminalExitStatus(exit_code=code)


class Terminals(Recorder):
    def __init__(self, answers: list[str | None] | None = None) -> None:
        super().__init__(answers)
        self.terminals: dict[str, Terminal] = {}
        self.created: list[schema.CreateTerminalRequest] = []
        self.calls: list[tuple[str, str]] = []
        self.started = asyncio.Event()

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[schema.EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> schema.CreateTerminalResponse:
        self.created.append(
            schema.CreateTerminalRequest(
                session_id=session_id,
                command=command,
                args=args,
                env=env,
                cwd=cwd,
                output_byte_limit=output_byte_limit,
            )
        )
        environment = dict(os.environ, ANTHROPIC_API_KEY=EDITOR_KEY)
        environment.update({variable.name: variable.value for variable in env or []})
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            env=environment,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # a terminal's own session, as a pty gives it
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = Terminal(process, output_byte_limit)
        self._record("create", terminal_id)
        self.started.set()
        return schema.CreateTerminalResponse(terminal_id=terminal_id)

    def _record(self, method: str, terminal_id: str) -> None:
        self.calls.append((method, terminal_id))
        self.changed.set()  # wake the test's wait_for

    def _live(self, terminal_id: str) -> Terminal:
        terminal = self.terminals.get(terminal_id)
        if terminal is None or terminal.released:
            raise RequestError.invalid_params({"terminalId": terminal_id})
        return terminal

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.TerminalOutputResponse:
        self._record("output", terminal_id)
        terminal = self._live(terminal_id)
        if terminal.process.returncode is not None:
            await terminal.reader
        return schema.TerminalOutputResponse(
            output=terminal.output.decode("utf-8", "replace"),
            truncated=terminal.truncated,
            exit_status=terminal.status(),
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.WaitForTerminalExitResponse:
        self._record("wait", terminal_id)
        terminal = self._live(terminal_id)
        await terminal.process.wait()
        status = terminal.status()
        assert status is not None
        return schema.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.KillTerminalResponse:
        self._record("kill", terminal_id)
        terminal = self._live(terminal_id)
        if terminal.process.returncode is None:
            terminal.kill()
        return schema.KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> schema.ReleaseTerminalResponse:
        self._record("release", terminal_id)
        terminal = self._live(terminal_id)
        if terminal.process.returncode is None:
            terminal.kill()
        await terminal.process.wait()
        await terminal.reader
        terminal.released = True
        self.changed.set()
        return schema.ReleaseTerminalResponse()


class RecordingClient(EditorBuffers, Terminals):
    """What real clients offer (Zed: fs read and write, and a terminal; codecompanion:
    fs): every suite's default client, so those paths run everywhere."""


REAL_CLIENT_CAPABILITIES = schema.ClientCapabilities(
    fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)
"""What ``RecordingClient`` offers in ``initialize`` unless a test says otherwise."""
