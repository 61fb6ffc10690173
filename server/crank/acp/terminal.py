"""The agent's commands in the editor's terminal: ACP's ``terminal/*``.

Used when the client offers ``clientCapabilities.terminal`` (and ``crank acp`` was not
started with ``--local-commands``). The command it is handed is already whole
(``crank.tools.detached``: ``env -i`` with Crank's scrubbed environment, the leader
that gives it a process group of its own, the limits, the sandbox, then ``bash -c``),
so the client starts it as it is: ``command`` is argv[0], ``args`` the rest, ``env``
empty (nothing to add), and nothing of the editor's environment reaches the command.

Promises (``crank.tools.EditorTerminal``):
- ``terminal/create`` with ``outputByteLimit``; the call's ``tool_call_update`` then
  embeds ``{"type": "terminal", "terminalId": ...}`` so the client shows it live.
- ``terminal/wait_for_exit`` waits for the command, at most its timeout.
- On a timeout and on every other way out while it may still run, a cancelled turn
  included, Crank ends the command's whole process group itself (``Detached.end``:
  SIGTERM, then SIGKILL), then asks for ``terminal/kill``; the terminal is always
  released, in a cleanup a second cancellation cannot cut short; each of those calls
  waits at most CLIENT_SECONDS.
- Only when the group could not be learnt (a client on another machine), a second
  terminal of the same client runs the sweep after the kill, which SIGKILLs every
  process carrying the command's ``CRANK_TERMINAL`` mark (a process that cleared its
  environment escapes that one).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crank.agent.tools import ToolError
from crank.tools import TerminalRun
from crank.tools.bash import uncancellable
from crank.tools.detached import Detached, sweep_argv

from .files import ask
from .wire import Peer, PeerGone, RpcError

log = logging.getLogger("crank.acp")
SWEEP_SECONDS = 10.0
"""The sweep after a kill (create, wait, release) is given up after this long."""


def offers_terminal(capabilities: dict[str, Any]) -> bool:
    return capabilities.get("terminal") is True


def _exit(status: Any) -> tuple[int | None, str | None]:
    if not isinstance(status, dict):
        return None, None
    code, signal = status.get("exitCode"), status.get("signal")
    return (
        code if isinstance(code, int) and not isinstance(code, bool) else None,
        signal if isinstance(signal, str) else None,
    )


class AcpTerminal:
    """``crank.tools.EditorTerminal`` over the client's ``terminal/*``."""

    def __init__(
        self,
        peer: Peer,
        session_id: Callable[[], str],
        show: Callable[[str, str], None],
    ) -> None:
        self._peer = peer
        self._session_id = session_id
        self._show = show
        """``(tool_call_id, terminal_id)``: embed the terminal in the call's updates."""

    async def _call(self, method: str, terminal_id: str) -> Any:
        params = {"sessionId": self._session_id(), "terminalId": terminal_id}
        try:
            return await ask(self._peer, method, params)
        except RpcError as exc:
            raise ToolError(f"The editor's {method} failed: {exc.message}") from None
        except PeerGone:
            raise ToolError(f"The client closed the connection during {method}.") from None

    async def run(
        self, call_id: str, command: Detached, cwd: Path, seconds: float, output_limit: int
    ) -> TerminalRun:
        creating = asyncio.create_task(self._create(command.argv, cwd, output_limit))
        try:
            terminal_id = await asyncio.shield(creating)
        except asyncio.CancelledError:  # it may be created still: end it once it is
            await uncancellable(self._end_created(creating, command, cwd))
            raise
        command.watch()
        ended = False
        try:
            self._show(call_id, terminal_id)
            timed_out = False
            try:
                async with asyncio.timeout(seconds):
                    status = await self._peer.request(
                        "terminal/wait_for_exit",
                        {"sessionId": self._session_id(), "terminalId": terminal_id},
                    )
            except TimeoutError:
                timed_out = True
                grouped = await command.end()
                await self._call("terminal/kill", terminal_id)
                status = await self._call("terminal/wait_for_exit", terminal_id)
                if not grouped:
                    await self._sweep(command, cwd)
            except RpcError as exc:
                raise ToolError(
                    f"The editor's terminal/wait_for_exit failed: {exc.message}"
                ) from None
            except PeerGone:
                raise ToolError("The client closed the connection during the command.") from None
            ended = True
            output = await self._call("terminal/output", terminal_id)
        finally:
            await uncancellable(self._end(terminal_id, command, cwd, kill=not ended))
        code, signal = _exit(status)
        text = output.get("output") if isinstance(output, dict) else None
        if code is None and signal is None and isinstance(output, dict):
            code, signal = _exit(output.get("exitStatus"))
        return TerminalRun(
            output=text if isinstance(text, str) else "",
            exit_code=code,
            signal=signal,
            truncated=isinstance(output, dict) and output.get("truncated") is True,
            timed_out=timed_out,
        )

    async def _create(self, argv: Sequence[str], cwd: Path, output_limit: int) -> str:
        """The new terminal's id; ToolError when the client refuses or says nothing."""
        params = {
            "sessionId": self._session_id(),
            "command": argv[0],
            "args": list(argv[1:]),
            "env": [],
            "cwd": str(cwd),
            "outputByteLimit": output_limit,
        }
        try:
            created = await ask(self._peer, "terminal/create", params)
        except RpcError as exc:
            raise ToolError(f"The editor could not start the command: {exc.message}") from None
        except PeerGone:
            raise ToolError("The client closed the connection before the command ran.") from None
        terminal_id = created.get("terminalId") if isinstance(created, dict) else None
        if not isinstance(terminal_id, str) or not terminal_id:
            raise ToolError("The editor's answer to terminal/create had no terminalId.")
        return terminal_id

    async def _end_created(
        self, creating: asyncio.Future[str], command: Detached, cwd: Path
    ) -> None:
        try:
            terminal_id = await creating
        except (ToolError, asyncio.CancelledError):
            return  # never created
        command.watch()
        await self._end(terminal_id, command, cwd, kill=True)

    async def _end(self, terminal_id: str, command: Detached, cwd: Path, *, kill: bool) -> None:
        """End the command's group and kill the terminal (when it may still run), then
        release it; failures are logged, never raised over the command's own outcome."""
        grouped = await command.end() if kill else True
        methods = ("terminal/kill", "terminal/release") if kill else ("terminal/release",)
        for method in methods:
            try:
                await self._call(method, terminal_id)
            except ToolError as exc:
                log.warning("%s of terminal %s failed: %s", method, terminal_id, exc)
        if not grouped:
            await self._sweep(command, cwd)

    async def _sweep(self, command: Detached, cwd: Path) -> None:
        """The fallback when the command's group was not learnt: a client may kill
        only the process it started, and the command's children live on. A second
        terminal of the same client kills every process carrying the command's mark
        (``detached.sweep_argv``), released at once; failures are logged."""
        log.info("the command's process group was not learnt; sweeping by its mark")
        argv = sweep_argv(command.mark)
        try:
            async with asyncio.timeout(SWEEP_SECONDS):
                swept = await self._create(argv, cwd, 4096)
                try:
                    await self._call("terminal/wait_for_exit", swept)
                finally:
                    await self._call("terminal/release", swept)
        except (ToolError, TimeoutError) as exc:
            log.warning("the sweep after killing a terminal failed: %s", exc)
