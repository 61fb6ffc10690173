"""A workspace's servers: started together, offered together, stopped together.

``configure`` takes the chosen configurations (``config.choose``) and starts what is
new, restarts what changed and stops what went away. ``catalog`` is the tool list the
model is offered, sorted by the name it sees (so prompt caching keeps working), each
entry mapping that name back to its server and the server's own tool name.
``state_json`` is the ``crank/state`` ``mcp`` list.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from .config import McpSource, ServerConfig, Transport
from .connection import ServerConnection, ServerState
from .names import qualified, unique
from .remote import RemotePrompt, RemoteTool


class McpServerState(TypedDict):
    """One server as ``crank/state`` ``mcp`` and the ``mcp_changed`` event list it."""

    name: str
    source: McpSource
    transport: Transport
    state: ServerState
    tools: list[str]
    """The names the model sees (``mcp__<server>__<tool>``)."""
    error: NotRequired[str]
    pid: NotRequired[int]
    problems: NotRequired[list[str]]


@dataclass(frozen=True)
class Offered:
    """One tool as the model sees it (``name``) and where it goes."""

    name: str
    server: ServerConnection
    tool: RemoteTool


@dataclass(frozen=True)
class OfferedPrompt:
    name: str
    server: ServerConnection
    prompt: RemotePrompt


class McpServers:
    def __init__(
        self,
        root: Path,
        on_change: Callable[[], None],
        report: Callable[[str], None],
        *,
        init_timeout: float | None = None,
    ) -> None:
        self.root = root
        self._on_change = on_change
        self._report = report
        self._init_timeout = init_timeout
        self.connections: dict[str, ServerConnection] = {}
        self.notes: list[str] = []
        """Sentences about the configuration (a name set aside, a file not read)."""
        self._closed = False

    def configure(
        self, configs: Sequence[ServerConfig], *, deferred: bool = False
    ) -> list[asyncio.Task[None]]:
        """Start, restart or stop servers so the chosen ``configs`` run; the stops run
        in tasks (returned, for whoever wants to wait on them). ``deferred``: a new
        server waits, ``idle``, for ``wake`` (the first prompt) instead of starting."""
        if self._closed:
            return []
        wanted = {config.name: config for config in configs}
        tasks: list[asyncio.Task[None]] = []
        loop = asyncio.get_running_loop()
        for name, connection in list(self.connections.items()):
            if wanted.get(name) != connection.config:
                del self.connections[name]
                tasks.append(loop.create_task(connection.stop()))
        for name, config in wanted.items():
            if name in self.connections:
                continue
            kwargs: dict[str, Any] = {}
            if self._init_timeout is not None:
                kwargs["init_timeout"] = self._init_timeout
            connection = ServerConnection(
                config, self.root, self._on_change, self._report, **kwargs
            )
            self.connections[name] = connection
            if deferred:
                connection.defer()
            else:
                connection.start()
        if tasks:
            self._on_change()
        return tasks

    async def close(self) -> None:
        """Every server stopped, its process group ended."""
        self._closed = True
        connections, self.connections = list(self.connections.values()), {}
        await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)

    async def settle(self, wait_s: float) -> None:
        """Wait (at most ``wait_s`` s in all) until no server is still in its first start."""
        await asyncio.gather(*(c.settle(wait_s) for c in self.connections.values()))

    def wake(self) -> None:
        """Start every server still waiting for its first use."""
        for connection in self.connections.values():
            if connection.state == "idle":
                connection.start()

    def starting(self) -> list[str]:
        return sorted(n for n, c in self.connections.items() if c.state == "starting")

    def catalog(self) -> list[Offered]:
        """The ready servers' tools, sorted by the name the model sees."""
        pairs = [
            (connection, tool)
            for _name, connection in sorted(self.connections.items())
            if connection.state == "ready"
            for tool in sorted(connection.tools, key=lambda t: t.name)
        ]
        names = unique([qualified(c.config.name, t.name) for c, t in pairs])
        offered = [Offered(n, c, t) for n, (c, t) in zip(names, pairs, strict=True)]
        return sorted(offered, key=lambda o: o.name)

    def prompts(self) -> list[OfferedPrompt]:
        pairs = [
            (connection, prompt)
            for _name, connection in sorted(self.connections.items())
            if connection.state == "ready"
            for prompt in sorted(connection.prompts, key=lambda p: p.name)
        ]
        names = unique([qualified(c.config.name, p.name) for c, p in pairs])
        return [OfferedPrompt(n, c, p) for n, (c, p) in zip(names, pairs, strict=True)]

    def state_json(self) -> list[McpServerState]:
        """``crank/state`` ``mcp``: one object per server, by name."""
        offered: dict[str, list[str]] = {}
        for item in self.catalog():
            offered.setdefault(item.server.config.name, []).append(item.name)
        out: list[McpServerState] = []
        for name, connection in sorted(self.connections.items()):
            entry: McpServerState = {
                "name": name,
                "source": connection.config.source,
                "transport": connection.config.transport,
                "state": connection.state,
                "tools": offered.get(name, []),
            }
            if connection.error is not None:
                entry["error"] = connection.error
            if connection.pid is not None:
                entry["pid"] = connection.pid
            if connection.problems:
                entry["problems"] = list(connection.problems)
            out.append(entry)
        return out
