"""A local server as a child process, speaking newline-delimited JSON-RPC.

Crank's own transport rather than the SDK's ``stdio_client`` because it must own what
that one hides: the pid (reported, and checked gone after shutdown), the stderr (a
bounded tail for the error report, however much the server writes), stdout lines that
are not JSON-RPC (counted and quoted, never fatal), and the end (the whole process
group: a server's own children end with it). The environment is what the
configuration names plus PATH and HOME (and the locale), never the server's: a
provider key cannot reach a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from mcp import types

from .config import ServerConfig
from .remote import StderrTail

BASE_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "LOGNAME", "SHELL", "TERM")
MAX_LINE = 64 * 1024 * 1024
"""A stdout line longer than this is not a message we will parse (and is dropped)."""
GRACE_S = 2.0


def server_env(config: ServerConfig) -> dict[str, str]:
    """PATH, HOME and a few harmless basics from Crank's environment (an allow-list:
    nothing else of it, so no provider key or token), then what the configuration
    names (the user wrote it)."""
    env = {name: os.environ[name] for name in BASE_VARIABLES if name in os.environ}
    env.update(config.env)
    return env


class NotStartable(ConnectionError):
    """The program is not there: trying again would not help, so no restart."""


class StdioProcess:
    """The running server: its pid, and waiting for its end."""

    def __init__(self, process: Process) -> None:
        self._process = process
        self.pid = process.pid
        self.returncode: int | None = None
        self.stderr_closed = asyncio.Event()

    async def wait(self) -> int:
        """The exit status, once the process has exited and its stderr is read to the
        end (at most ``GRACE_S`` more: a child may hold the pipe open)."""
        self.returncode = await self._process.wait()
        with anyio.move_on_after(GRACE_S):
            await self.stderr_closed.wait()
        return self.returncode


def _kill_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@asynccontextmanager
async def stdio_streams(
    config: ServerConfig, root: Path, tail: StderrTail
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
        StdioProcess,
    ]
]:
    cwd = root / config.cwd if config.cwd else root
    try:
        process = await anyio.open_process(
            [config.command, *config.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=server_env(config),
            cwd=str(cwd),
            start_new_session=True,
        )
    except FileNotFoundError:
        raise NotStartable(
            f"MCP server {config.name!r}: {config.command!r} was not found "
            "(is it installed, and on PATH?)"
        ) from None
    except OSError as exc:
        raise ConnectionError(f"MCP server {config.name!r} could not be started: {exc}") from None
    handle = StdioProcess(process)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](64)

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        async with read_send:
            try:
                async for chunk in process.stdout:
                    buffer.extend(chunk)
                    while (end := buffer.find(b"\n")) >= 0:
                        line = bytes(buffer[:end])
                        del buffer[: end + 1]
                        await _deliver(line)
                    if len(buffer) > MAX_LINE:
                        tail.note_garbage(f"(a line over {MAX_LINE} bytes, dropped)")
                        buffer.clear()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return

    async def _deliver(line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            message = types.JSONRPCMessage.model_validate_json(text)
        except ValueError:
            tail.note_garbage(text)
            return
        await read_send.send(SessionMessage(message))

    async def read_stderr() -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                tail.feed(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            handle.stderr_closed.set()

    async def write_stdin() -> None:
        assert process.stdin is not None
        async with write_recv:
            try:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send((data + "\n").encode("utf-8"))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return

    tasks = [
        asyncio.get_running_loop().create_task(job())
        for job in (read_stdout, read_stderr, write_stdin)
    ]
    try:
        yield read_recv, write_send, handle
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, handle.pid)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await read_recv.aclose()
        await write_send.aclose()


async def _stop(process: Process, pid: int) -> None:
    """Close stdin (the polite end), then SIGTERM, then SIGKILL, to the whole group."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if process.returncode is None:
            with anyio.move_on_after(GRACE_S):
                await process.wait()
        _kill_group(pid, sig)
    with anyio.move_on_after(GRACE_S):
        await process.wait()
