"""A byte-for-byte TCP relay in front of a real HTTP server, keeping the requests.

Tests use it to see what Crank put on the wire to a server nobody here wrote (the C++
llama-server, llama-cpp-python): the relay forwards every byte unchanged both ways, so
the server answers exactly as it would without it, and parses the client's side into
``requests`` (method, path, JSON body). Request bodies must carry ``Content-Length``
(httpx sends one for a body it has whole, which is what Crank sends).
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class TappedRequest:
    method: str
    path: str
    body: Any
    """The JSON body (None for a request without one)."""


@dataclass
class WireTap:
    """``with WireTap(upstream_base_url) as tap:`` then point the client at ``tap.url``
    (the same path as the upstream's, on the relay's port)."""

    upstream: str
    requests: list[TappedRequest] = field(default_factory=list)
    _port: int = 0
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> str:
        parts = urlsplit(self.upstream)
        return f"http://127.0.0.1:{self._port}{parts.path}"

    def posted(self, suffix: str) -> list[Any]:
        """The JSON bodies POSTed to a path ending in ``suffix``, in order."""
        return [r.body for r in self.requests if r.method == "POST" and r.path.endswith(suffix)]

    def __enter__(self) -> WireTap:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the wire tap did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        server = loop.run_until_complete(asyncio.start_server(self._relay, "127.0.0.1", 0))
        self._port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            # relays still open (a client that kept its connection) end here, not when
            # the collector finds their coroutines after the loop is closed
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()

            async def ended() -> None:
                await asyncio.gather(*pending, return_exceptions=True)

            loop.run_until_complete(ended())
            loop.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        parts = urlsplit(self.upstream)
        try:
            up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port)
        except OSError:
            writer.close()
            return
        seen = bytearray()

        async def client_to_server() -> None:
            while data := await reader.read(65536):
                seen.extend(data)
                self._parse(seen)
                up_writer.write(data)
                await up_writer.drain()
            up_writer.write_eof()

        async def server_to_client() -> None:
            while data := await up_reader.read(65536):
                writer.write(data)
                await writer.drain()
            writer.close()

        try:
            await asyncio.gather(client_to_server(), server_to_client())
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            up_writer.close()

    def _parse(self, seen: bytearray) -> None:
        """Take every whole request off the front of ``seen``."""
        while True:
            end = seen.find(b"\r\n\r\n")
            if end < 0:
                return
            head = seen[:end].decode("latin-1").split("\r\n")
            method, path, _version = head[0].split(" ", 2)
            length = 0
            for line in head[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            if len(seen) < end + 4 + length:
                return
            raw = bytes(seen[end + 4 : end + 4 + length])
            del seen[: end + 4 + length]
            body = json.loads(raw) if raw else None
            self.requests.append(TappedRequest(method, path, body))
