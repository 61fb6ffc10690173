"""The agent's commands in the editor's terminal: ACP's ``terminal/*``.

Used when the client offers ``clientCapabilities.terminal`` (and ``crank acp`` was not
started with ``--local-commands``). The argv it is handed is already the whole,
confined command (``crank.tools.process.detached_argv``: ``env -i`` with Crank's
scrubbed environment, then the sandbox, then ``bash -c``), so the client starts it as
it is: ``command`` is argv[0], ``args`` the rest, ``env`` empty (nothing to add), and
nothing of the editor's environment reaches the command.

Promises (``crank.tools.EditorTerminal``):
- ``terminal/create`` with ``outputByteLimit``; the call's ``tool_call_update`` then
  embeds ``{"type": "terminal", "terminalId": ...}`` so the client shows it live.
- ``terminal/wait_for_exit`` waits for the command, at most its timeout; then
  ``terminal/kill`` and the exit status it ends with.
- On every way out, including a cancelled turn, the terminal is killed (if it may
  still run) and released, in a cleanup a second cancellation cannot cut short; each
  of those calls waits at most CLIENT_SECONDS.
- After a kill, a second terminal of the same client runs a sweep that SIGKILLs every
  process whose environment holds the command's ``CRANK_TERMINAL`` mark (put there by
  ``detached_argv``): a client that kills only the process it started, not its group,
  left the command's children running; a ``setsid`` child is found the same way.
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
from crank.tools.process import sweep_argv, terminal_mark

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
        self._mark: str | None = None
        self._cwd = Path.cwd()

    async def _call(self, method: str, terminal_id: str) -> Any:
        params = {"sessionId": self._session_id(), "terminalId": terminal_id}
        try:
            return await ask(self._peer, method, params)
        except RpcError as exc:
            raise ToolError(f"The editor's {method} failed: {exc.message}") from None
        except PeerGone:
            raise ToolError(f"The client closed the connection during {method}.") from None

    async def run(
        self, call_id: str, argv: Sequence[str], cwd: Path, seconds: float, output_limit: int
    ) -> TerminalRun:
        self._mark = terminal_mark(argv)
        self._cwd = cwd
        creating = asyncio.create_task(self._create(argv, cwd, output_limit))
        try:
            terminal_id = await asyncio.shield(creating)
        except asyncio.CancelledError:  # it may be created still: end it once it is
            await uncancellable(self._end_created(creating))
            raise
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
                await self._call("terminal/kill", terminal_id)
                status = await self._call("terminal/wait_for_exit", terminal_id)
                await self._sweep()
            except RpcError as exc:
                raise ToolError(
                    f"The editor's terminal/wait_for_exit failed: {exc.message}"
                ) from None
            except PeerGone:
                raise ToolError("The client closed the connection during the command.") from None
            ended = True
            output = await self._call("terminal/output", terminal_id)
        finally:
            await uncancellable(self._end(terminal_id, kill=not ended))
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

    async def _end_created(self, creating: asyncio.Future[str]) -> None:
        try:
            terminal_id = await creating
        except (ToolError, asyncio.CancelledError):
            return  # never created
        await self._end(terminal_id, kill=True)

    async def _end(self, terminal_id: str, *, kill: bool) -> None:
        """Kill (when it may still run) and release the terminal; failures are logged,
        never raised over the command's own outcome."""
        methods = ("terminal/kill", "terminal/release") if kill else ("terminal/release",)
        for method in methods:
            try:
                await self._call(method, terminal_id)
            except ToolError as exc:
                log.warning("%s of terminal %s failed: %s", method, terminal_id, exc)
        if kill:
            await self._sweep()

    async def _sweep(self) -> None:
        """After a kill: a client may kill only the process it started, and the
        command's children (in their own session or not) live on. A second terminal
        of the same client then kills every process carrying the command's mark
        (``process.sweep_argv``), released at once; failures are logged."""
        if self._mark is None:
            return
        argv = sweep_argv(self._mark)
        try:
            async with asyncio.timeout(SWEEP_SECONDS):
                swept = await self._create(argv, self._cwd, 4096)
                try:
                    await self._call("terminal/wait_for_exit", swept)
                finally:
                    await self._call("terminal/release", swept)
        except (ToolError, TimeoutError) as exc:
            log.warning("the sweep after killing a terminal failed: %s", exc)
