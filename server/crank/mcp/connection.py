"""One configured server, kept connected in the background.

``start`` returns at once; a supervisor task loads the SDK (in a worker thread),
connects, lists the tools and prompts, and sets ``state`` to ``ready``. A server that
cannot start or later dies is ``failed`` with an ``error`` that quotes its stderr tail,
and is restarted after 1, 2, then 4 seconds, at most ``MAX_RESTARTS`` times in all
(``restart`` starts the count again). ``notifications/tools/list_changed`` lists the
tools again; every change calls ``on_change`` (the workspace offers the new list from
the next run on). ``stop`` ends the process group and waits for it.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from crank.agent.tools import ToolError, ToolOutput

from .config import ServerConfig
from .remote import RemotePrompt, RemoteTool, StderrTail

if TYPE_CHECKING:
    from .link import Link

log = logging.getLogger(__name__)

ServerState = Literal["idle", "starting", "ready", "failed", "disabled"]
"""``idle``: configured to start at first use (``mcpStart: firstUse``), not started yet."""
SERVER_STATES: tuple[ServerState, ...] = get_args(ServerState)
MAX_RESTARTS = 3
BACKOFF_S = (1.0, 2.0, 4.0)
INIT_TIMEOUT_S = 30.0


async def _load_link_module() -> Any:
    """The SDK-facing module, imported in a worker thread (pydantic takes a while)."""
    return await asyncio.to_thread(importlib.import_module, "crank.mcp.link")


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside the task groups' ExceptionGroups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


class ServerConnection:
    def __init__(
        self,
        config: ServerConfig,
        root: Path,
        on_change: Callable[[], None],
        report: Callable[[str], None],
        *,
        init_timeout: float = INIT_TIMEOUT_S,
        backoff: tuple[float, ...] = BACKOFF_S,
    ) -> None:
        self.config = config
        self.root = root
        self._on_change = on_change
        self._report = report
        self._init_timeout = init_timeout
        self._backoff = backoff
        self.state: ServerState = "disabled" if config.disabled else "starting"
        self.error: str | None = None
        self.tools: list[RemoteTool] = []
        self.prompts: list[RemotePrompt] = []
        self.problems: list[str] = []
        """Tools left out (a schema that is not JSON Schema), one sentence each."""
        self.pid: int | None = None
        self.restarts = 0
        self._link: Link | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._relist: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        """Set once the first attempt is over (ready or failed): ``settle`` waits on it."""

    # -- lifetime -------------------------------------------------------------------

    def start(self, *, force: bool = False) -> None:
        """Start in the background (``force``: even when configured ``disabled``)."""
        if self.config.disabled and not force:
            self._settled.set()
            return
        if self.state == "idle":
            self.state = "starting"
            self._on_change()
        if self._task is None or self._task.done():
            self._stop = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._supervise())

    async def stop(self) -> None:
        """End the server now: a start under way is cancelled (its process group
        still ends: the transport's own ``finally``), a running one is closed."""
        self._stop.set()
        task, self._task = self._task, None
        if task is not None:
            if self.state != "ready":
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._link, self.pid = None, None

    def defer(self) -> None:
        """Wait for the first use (``start``) instead of starting now."""
        if self.state == "starting" and self._task is None:
            self.state = "idle"

    async def restart(self) -> None:
        await self.stop()
        self.restarts = 0
        self.state, self.error = "starting", None
        self._settled = asyncio.Event()
        self._on_change()
        self.start(force=True)

    async def disable(self) -> None:
        await self.stop()
        self.state, self.error, self.tools, self.prompts = "disabled", None, [], []
        self._settled.set()
        self._on_change()

    async def settle(self, wait_s: float) -> None:
        """Wait up to ``wait_s`` seconds for the first attempt to be over."""
        try:
            async with asyncio.timeout(wait_s):
                await self._settled.wait()
        except TimeoutError:
            return

    async def _supervise(self) -> None:
        while not self._stop.is_set():
            tail = StderrTail()
            final = False
            try:
                reason = await self._connect_once(tail)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a server's failure is reported, never raised
                leaf = exc if type(exc).__name__ == "Refused" else _leaf(exc)
                reason = str(leaf) or type(leaf).__name__
                if not reason.startswith("MCP server"):
                    reason = f"MCP server {self.config.name!r} failed: {reason}"
                final = type(leaf).__name__ in ("NotStartable", "Refused")
            if self._stop.is_set():
                return
            extra = tail.report()
            self._link, self.pid, self.tools, self.prompts = None, None, [], []
            self.state = "failed"
            self.error = f"{reason}; {extra}" if extra else reason
            if final:
                self.restarts = MAX_RESTARTS
            if self.restarts < min(MAX_RESTARTS, len(self._backoff)):
                delay = self._backoff[self.restarts]
                self.error += f" (restarting in {delay:g} s)"
            self._settled.set()
            self._report(self.error)
            self._on_change()
            if self.restarts >= min(MAX_RESTARTS, len(self._backoff)):
                return
            delay = self._backoff[self.restarts]
            self.restarts += 1
            try:
                async with asyncio.timeout(delay):
                    await self._stop.wait()
                return
            except TimeoutError:
                self.state = "starting"
                self._on_change()

    async def _connect_once(self, tail: StderrTail) -> str:
        """Connect, serve until the process ends or ``stop``; the reason it ended."""
        link_module = await _load_link_module()

        def started(pid: int) -> None:
            self.pid = pid

        async with link_module.open_link(
            self.config,
            self.root,
            tail,
            self._list_changed,
            started,
            init_timeout=self._init_timeout,
        ) as link:
            self._link = link
            await self._list(link)
            self.state, self.error = "ready", None
            self._settled.set()
            self._on_change()
            ended = asyncio.create_task(link.ended())
            stopping = asyncio.create_task(self._stop.wait())
            try:
                await asyncio.wait({ended, stopping}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
                stopping.cancel()
            if self._stop.is_set():
                return "stopped"
            code = link.process.returncode if link.process is not None else None
            return f"MCP server {self.config.name!r} exited (status {code})"

    async def _list(self, link: Link) -> None:
        from .schemas import usable

        tools, problems = [], []
        for tool in await link.list_tools():
            problem = usable(tool.input_schema)
            if problem is None:
                tools.append(tool)
            else:
                problems.append(
                    f"MCP server {self.config.name!r}: tool {tool.name!r} is not offered: "
                    f"its input schema {problem}"
                )
        for problem in problems:
            if problem not in self.problems:
                self._report(problem)
        self.tools, self.problems = tools, problems
        try:
            self.prompts = await link.list_prompts()
        except ToolError as exc:
            self._report(str(exc))
            self.prompts = []

    def _list_changed(self) -> None:
        link = self._link
        if link is None or (self._relist is not None and not self._relist.done()):
            return

        async def relist() -> None:
            try:
                await self._list(link)
            except Exception as exc:
                self._report(
                    f"MCP server {self.config.name!r}: the tools could not be listed again: {exc}"
                )
                return
            self._on_change()

        self._relist = asyncio.get_running_loop().create_task(relist())

    # -- use --------------------------------------------------------------------------

    def _ready_link(self) -> Link:
        link = self._link
        if link is None or self.state != "ready":
            why = f": {self.error}" if self.error else ""
            raise ToolError(f"MCP server {self.config.name!r} is {self.state}{why}")
        return link

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolOutput:
        output: ToolOutput = await self._ready_link().call(tool, arguments)
        return output

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> str:
        text: str = await self._ready_link().get_prompt(name, arguments)
        return text

    def instructions(self) -> str | None:
        return self._link.instructions if self._link is not None else None
