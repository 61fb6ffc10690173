"""A Crank server driven over stdio in LSP framing, for the start-up benchmarks.

One owner for what ``server.py`` (start-up, memory) and ``mcp_startup.py`` (start-up
with MCP servers configured) both do: spawn ``command``, frame messages to its stdin,
read whole framed messages from its stdout, wait for the answer to one request, and
tell the wall time since the spawn. Blocking reads on purpose: a benchmark times one
server at a time, and nothing else runs in the process meanwhile.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import IO, Any


class StdioServer:
    """One spawned server; ``began`` is when it was spawned (``time.perf_counter``)."""

    def __init__(
        self, command: list[str], env: dict[str, str], stderr: int | IO[bytes] | None = None
    ) -> None:
        self.began = time.perf_counter()
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def elapsed_ms(self) -> float:
        """Wall milliseconds since the spawn."""
        return (time.perf_counter() - self.began) * 1e3

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def request(self, number: int, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": number, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def read(self) -> dict[str, Any]:
        """One whole framed message from the server's stdout."""
        assert self.process.stdout
        length = 0
        while (line := self.process.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message: dict[str, Any] = json.loads(self.process.stdout.read(length))
        return message

    def answer(self, number: int) -> dict[str, Any]:
        """Read until the answer to request ``number`` (events before it are dropped)."""
        while (message := self.read()).get("id") != number:
            pass
        return message

    def initialize(self, folders: list[Any]) -> dict[str, Any]:
        """``initialize`` (id 1) with these workspace folders, and its answer."""
        self.request(1, "initialize", {"capabilities": {}, "workspaceFolders": folders})
        return self.answer(1)

    def close(self, timeout: float = 30) -> None:
        """Close its stdin (the editor went away) and wait for it to end."""
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=timeout)
