"""The environment layer against real servers: the npm ``server-everything`` over
stdio and streamable HTTP, and our misbehaving ones (``odd_server.py``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from crank.agent.tools import ToolError
from crank.mcp.config import parse_servers
from crank.mcp.manager import McpServers

from .servers import alive, everything, free_port, npm_bin, odd

GUARD_S = 120
"""Not a timed assertion: only how long a broken test may hang before it fails."""


class Watched:
    def __init__(self, root: Path) -> None:
        self.changed = asyncio.Event()
        self.reports: list[str] = []
        self.servers = McpServers(root, self.changed.set, self.reports.append, init_timeout=20)

    def start(self, raw: dict[str, Any]) -> None:
        configs, problems = parse_servers(raw, "user", "test")
        assert problems == []
        self.servers.configure(configs)

    async def until(self, ready: Callable[[], bool]) -> None:
        async with asyncio.timeout(GUARD_S):
            while not ready():
                self.changed.clear()
                await self.changed.wait()

    def state(self, name: str) -> str:
        return self.servers.connections[name].state

    def offered(self, name: str) -> Any:
        return next(o for o in self.servers.catalog() if o.name == name)


@pytest.fixture
async def watched(tmp_path: Path) -> AsyncIterator[Watched]:
    w = Watched(tmp_path)
    try:
        yield w
    finally:
        await w.servers.close()


async def test_everything_over_stdio_echoes_adds_and_sends_an_image(watched: Watched) -> None:
    watched.start({"everything": everything()})
    await watched.until(lambda: watched.state("everything") == "ready")
    names = [o.name for o in watched.servers.catalog()]
    assert names == sorted(names)
    assert "mcp__everything__echo" in names
    echo = watched.offered("mcp__everything__echo")
    assert (await echo.server.call("echo", {"message": "plover"})).content == "Echo: plover"
    total = await watched.offered("mcp__everything__get-sum").server.call(
        "get-sum", {"a": 2, "b": 40}
    )
    assert "42" in total.content
    image = await echo.server.call("get-tiny-image", {})
    assert len(image.images) == 1 and image.images[0]["mimeType"] == "image/png"
    links = await echo.server.call("get-resource-links", {"count": 2})
    assert "[resource link " in links.content


@pytest.mark.parametrize(
    ("mode", "kind", "path", "ready_line"),
    [("streamableHttp", "http", "/mcp", b"listening"), ("sse", "sse", "/sse", b"running on port")],
)
async def test_everything_over_http(
    watched: Watched, mode: str, kind: str, path: str, ready_line: bytes
) -> None:
    port = free_port()
    server = await asyncio.create_subprocess_exec(
        npm_bin("mcp-server-everything"),
        mode,
        env={**os.environ, "PORT": str(port)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert server.stderr is not None
        async with asyncio.timeout(GUARD_S):
            while ready_line not in (await server.stderr.readline()).lower():
                pass  # an event: the server says it listens
        watched.start({"web": {"type": kind, "url": f"http://127.0.0.1:{port}{path}"}})
        await watched.until(lambda: watched.state("web") != "starting")
        assert watched.state("web") == "ready", watched.servers.connections["web"].error
        echo = watched.offered("mcp__web__echo")
        assert (await echo.server.call("echo", {"message": "over http"})).content == (
            "Echo: over http"
        )
    finally:
        server.terminate()
        await server.wait()


async def test_a_server_that_is_not_installed_fails_once_and_says_so(watched: Watched) -> None:
    watched.start({"ghost": {"command": "crank-no-such-mcp-server"}, "everything": everything()})
    await watched.until(lambda: watched.state("ghost") == "failed")
    error = watched.servers.connections["ghost"].error or ""
    assert "was not found" in error and "restarting" not in error
    await watched.until(lambda: watched.state("everything") == "ready")  # the others work


async def test_a_server_that_exits_at_once_is_reported_with_its_stderr(watched: Watched) -> None:
    watched.start({"quits": odd("exit")})
    await watched.until(lambda: watched.state("quits") == "failed")
    assert "cannot start, no config" in (watched.servers.connections["quits"].error or "")
    assert any("cannot start" in line for line in watched.reports)


async def test_a_server_that_hangs_at_initialize_times_out(tmp_path: Path) -> None:
    servers = McpServers(tmp_path, lambda: None, lambda _: None, init_timeout=1)
    configs, _ = parse_servers({"hangs": odd("hang")}, "user", "test")
    servers.configure(configs)
    try:
        await servers.settle(GUARD_S)
        connection = servers.connections["hangs"]
        assert connection.state == "failed"
        assert "did not answer initialize within 1 s" in (connection.error or "")
    finally:
        await servers.close()


async def test_a_server_that_speaks_garbage_is_quoted(tmp_path: Path) -> None:
    servers = McpServers(tmp_path, lambda: None, lambda _: None, init_timeout=5)
    configs, _ = parse_servers({"noise": odd("garbage")}, "user", "test")
    servers.configure(configs)
    try:
        await servers.settle(GUARD_S)
        error = servers.connections["noise"].error or ""
        assert "not JSON-RPC" in error and "Welcome to odd server" in error
    finally:
        await servers.close()


async def test_odd_tools_crash_flood_big_names_and_bad_schemas(watched: Watched) -> None:
    watched.start({"odd": odd("fastmcp")})
    await watched.until(lambda: watched.state("odd") == "ready")
    names = [o.name for o in watched.servers.catalog()]
    assert "mcp__odd__odd_name_with_spaces" in names  # sanitised, mapped back below
    assert all("bad" not in name for name in names)  # not JSON Schema: left out
    assert any("bad schema" in line and "not JSON Schema" in line for line in watched.reports)
    oddly = watched.offered("mcp__odd__odd_name_with_spaces")
    assert oddly.tool.name == "odd.name/with spaces"
    assert (await oddly.server.call(oddly.tool.name, {})).content == "odd name called"
    flood = await oddly.server.call("flood", {})
    assert flood.content == "flooded"
    big = await oddly.server.call("big", {})
    assert len(big.content) > 10_000_000  # bounded later, at the tool boundary
    pid = watched.servers.connections["odd"].pid
    assert pid is not None
    with pytest.raises(ToolError, match="closed the connection"):
        await oddly.server.call("crash", {})
    await watched.until(lambda: watched.state("odd") == "failed")
    error = watched.servers.connections["odd"].error or ""
    assert "about to crash" in error and "restarting in 1 s" in error
    await watched.until(lambda: watched.state("odd") == "ready")  # restarted
    assert watched.servers.connections["odd"].pid != pid


async def test_abort_sends_cancelled_and_timeout_is_a_tool_error(watched: Watched) -> None:
    raw = odd("fastmcp")
    raw["timeoutMs"] = 1500
    watched.start({"odd": raw})
    await watched.until(lambda: watched.state("odd") == "ready")
    connection = watched.servers.connections["odd"]
    with pytest.raises(ToolError, match=r"did not answer within 1.5 s"):
        await connection.call("sleep", {"seconds": 600})
    call = asyncio.ensure_future(connection.call("sleep", {"seconds": 600}))
    await asyncio.sleep(0.2)  # let the request go out (the assertion does not depend on it)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    # the server heard both cancellations (it answers once it has; the guard is
    # the 1.5 s timeout: a server that never heard them makes this a ToolError)
    assert (await connection.call("cancellations", {"at_least": 2})).content == "2"


async def test_list_changed_updates_the_catalog(watched: Watched) -> None:
    watched.start({"odd": odd("fastmcp")})
    await watched.until(lambda: watched.state("odd") == "ready")
    connection = watched.servers.connections["odd"]
    assert "mcp__odd__add2" not in [o.name for o in watched.servers.catalog()]
    await connection.call("grow", {})
    await watched.until(lambda: "mcp__odd__add2" in [o.name for o in watched.servers.catalog()])


async def test_close_ends_every_server_process(watched: Watched) -> None:
    watched.start({"a": everything(), "b": odd("fastmcp")})
    await watched.until(lambda: {watched.state("a"), watched.state("b")} == {"ready"})
    pids = [c.pid for c in watched.servers.connections.values()]
    assert all(pid is not None and alive(pid) for pid in pids)
    await watched.servers.close()
    assert [pid for pid in pids if pid is not None and alive(pid)] == []


async def test_a_server_gets_no_provider_key(watched: Watched, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-never-reach-a-server")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-neither")
    raw = everything()
    raw["env"] = {"NAMED": "yes"}
    watched.start({"everything": raw})
    await watched.until(lambda: watched.state("everything") == "ready")
    env = await watched.servers.connections["everything"].call("get-env", {})
    assert "NAMED" in env.content and "PATH" in env.content
    assert "sk-should-never" not in env.content and "ghp-neither" not in env.content


async def test_an_http_server_that_answers_401_is_a_clear_error(watched: Watched) -> None:
    """A loopback HTTP server that refuses every request with 401, as a server wanting
    OAuth does (written here: no real server refuses on purpose)."""

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b'{"error": "unauthorized"}'
        writer.write(
            b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
            b'WWW-Authenticate: Bearer realm="mcp"\r\n'
            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        watched.start({"locked": {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}})
        await watched.until(lambda: watched.state("locked") == "failed")
        error = watched.servers.connections["locked"].error or ""
        assert "'locked'" in error and "401 Unauthorized" in error and "headers" in error
        assert "restarting" not in error  # the same headers would be refused again
    finally:
        server.close()
        await server.wait_closed()


async def test_the_filesystem_server_reads_inside_its_root_only(
    watched: Watched, tmp_path: Path
) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    (root / "notes.txt").write_text("plover\n")
    watched.start({"fs": {"command": npm_bin("mcp-server-filesystem"), "args": [str(root)]}})
    await watched.until(lambda: watched.state("fs") != "starting")
    connection = watched.servers.connections["fs"]
    assert connection.state == "ready", connection.error
    names = [o.name for o in watched.servers.catalog()]
    assert "mcp__fs__read_text_file" in names and "mcp__fs__list_directory" in names
    read = await connection.call("read_text_file", {"path": str(root / "notes.txt")})
    assert read.content.strip() == "plover" and not read.is_error
    outside = await connection.call("read_text_file", {"path": "/etc/hostname"})
    assert outside.is_error  # the server's own refusal, passed on as a tool error


async def test_a_disabled_server_is_listed_not_started_and_can_be_enabled(
    watched: Watched,
) -> None:
    raw = everything()
    raw["disabled"] = True
    watched.start({"later": raw})
    connection = watched.servers.connections["later"]
    assert (connection.state, connection.pid) == ("disabled", None)
    await connection.restart()  # crank/mcpServer "enable"
    await watched.until(lambda: watched.state("later") == "ready")
