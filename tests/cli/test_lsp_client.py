"""The demo's LSP client against real child processes that stop talking."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from crank.cli.lsp_client import LspClient

HANG_BOUND = 60
"""Only so a regression fails instead of hanging the suite; nothing is timed."""


async def _client(code: str) -> LspClient:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )

    def ignore(method: str, params: Any) -> None:
        return None

    async def answer(method: str, params: Any) -> Any:
        return None

    return LspClient(process, ignore, answer)


async def test_waiting_for_an_event_ends_when_the_server_exits() -> None:
    client = await _client("import sys; sys.stdin.readline()")
    never = asyncio.Event()
    waiting = asyncio.create_task(client.wait_for(never))
    client.process.stdin.write(b"bye\n")  # type: ignore[union-attr]
    with pytest.raises(ConnectionError, match="closed its output"):
        await asyncio.wait_for(waiting, HANG_BOUND)
    await client.close()


async def test_a_request_after_the_server_is_gone_fails_at_once() -> None:
    client = await _client("pass")
    with pytest.raises(ConnectionError):
        await client.wait_for(asyncio.Event())
    with pytest.raises(ConnectionError, match="closed its output"):
        await asyncio.wait_for(client.request("crank/state", {}), HANG_BOUND)
    await client.close()


async def test_wait_for_returns_when_the_event_is_set() -> None:
    client = await _client("import sys; sys.stdin.read()")
    ready = asyncio.Event()
    ready.set()
    await client.wait_for(ready)
    assert client.process.returncode is None
    client.process.kill()
    await client.close()


SLOPPY_SERVER = r"""
import sys
sys.stdin.buffer.readline()  # the client's request has arrived (its header line)
out = sys.stdout.buffer
out.write(b"server starting up...\n\n")                      # stray output, not a frame
out.write(b"Content-Length: 9\r\n\r\n{not json")               # a frame that is no message
out.write(b"Content-Length: 12\r\n\r\n{\"id\": [1]}\n")         # an id nobody asked with
body = b'{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
out.write(b"content-length: %d\nContent-Type: application/vscode-jsonrpc\n\n" % len(body) + body)
out.flush()
sys.stdin.buffer.read()
"""


async def test_stray_output_and_bad_frames_are_skipped_not_fatal() -> None:
    """The client reads with the server's framing parser: what is not a frame, or not
    a message, is skipped, and the answer after it still reaches its request (the
    hand-written reader died on the first line that was not a header)."""
    client = await _client(SLOPPY_SERVER)
    result = await asyncio.wait_for(client.request("crank/state", {}), HANG_BOUND)
    assert result == {"ok": True}
    client.process.kill()
    await client.close()
