"""A scripted loopback model server speaking Anthropic and OpenAI streaming (SSE).

For tests of anything that talks to a model over HTTP: the vendors layer, the LSP
server end to end, the VS Code and Neovim clients. It is a real HTTP/1.1 server on
127.0.0.1 (asyncio streams, stdlib only) that writes real chunked SSE bytes and splits
events across writes at awkward places (inside ``data:``, between the two newlines).

Use it in-process::

    async with ModelServer(script) as server:      # same event loop
        ... server.url, server.requests ...
    with ModelServer(script) as server:            # its own thread and loop
        ...

or as a script, which prints ``PORT <n>`` on one line of stdout and serves until
killed::

    python tests/support/model_server.py --script FILE.json [--port N]

Endpoints: ``POST /v1/messages`` (Anthropic; point ``baseUrl`` at ``server.url``),
``POST /v1/chat/completions`` (OpenAI; ``baseUrl`` = ``server.url + "/v1"``), and
``GET /_requests`` (every request body received so far, as JSON, for tests in
another process). ``server.routes`` maps other paths to a JSON answer (any method),
e.g. ``{"/v1/models": {"data": [...]}}`` or Ollama's ``/api/show``; any other path is
a 404, as on a server that lacks it.

Script format (JSON): either a list of replies, or an object::

    {"replies": [REPLY, ...],                     # served in order, one per request
     "rules": [{"lastUserContains": "X", "reply": REPLY}, ...]}
                                                  # checked first, never used up

A rule may say ``lastMessageContains`` instead: it matches the text of the request's
last message whatever its role (a tool result, too), so a script can answer the turn
after a tool call by what the tool printed.

A REPLY is an object; every key is optional:

- ``text``: the reply text. ``thinking`` (+ ``signature``): a thinking block first.
- ``toolCalls``: ``[{"id"?, "name", "arguments": {...}}]`` or ``"argumentsText"``
  for raw (possibly broken) JSON.
- ``chunks`` (default 3): how many pieces text, thinking and arguments are split into.
- ``delayMs``: pause between writes. ``pings``: interleave keep-alives (Anthropic
  ``ping`` events, OpenAI SSE comments).
- ``hangAfter``: go silent after N events (0: right after the headers) until the
  client disconnects; the disconnect time is recorded in ``server.disconnects``.
- ``dropAfter``: close the connection after N events, mid-stream.
- ``errorAfter`` + ``error`` (``{"type", "message"}``): an error event after N events.
- ``raw``: serve this SSE text verbatim instead (e.g. a recorded fixture), still
  split awkwardly across writes; ``rawFile``: the same, read from a file.
- ``bodyFile`` (+ ``status``, default 200): answer with that file's bytes as a plain
  JSON response (a recorded non-streamed answer or error body), unchanged. An empty
  ``raw`` (or ``rawFile``) stream sends headers and no event, as llama-cpp-python does
  when it fails after starting a stream.
- ``drop``: read the request, then close the connection before sending any header:
  ``"close"`` (a FIN: the client sees the server disconnect) or ``"reset"`` (an RST:
  a read error). Recorded in ``server.dropped``.
- ``dropNext`` (``"close"`` or ``"reset"``): answer with ``Connection: keep-alive``,
  end the body properly, then drop the next request that arrives on this same
  connection the same way, unanswered and without using a script reply. This is the
  lost race of a server that says keep-alive but closes the connection after an error
  (llama-cpp-python's uvicorn does, after the empty stream of a prompt past n_ctx):
  a client that reuses the pooled connection at once has its request dropped.
- ``status``: answer with this HTTP error instead (429, 529, 500, 400, 401, ...), with
  ``retryAfter`` (header), ``errorType``, ``errorCode`` (OpenAI), ``errorMessage``.
- ``stopReason``: the API's own stop/finish reason (default from the content).
- ``usage``: ``{"input", "output", "cacheRead", "cacheWrite"}``, or ``"estimate"``: about
  a token per four bytes of the request and of the reply (a top-level
  ``"estimateUsage": true`` does that for every reply without ``usage``); ``noUsage``: send none
  (OpenAI). ``omitToolIds``: tool calls without ids (OpenAI). ``noDone``: no
  ``[DONE]`` (OpenAI).

When the script runs out, requests get a 500 whose message says so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

Reply = dict[str, Any]

_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    count = max(1, min(count, len(text)))
    size, extra = divmod(len(text), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


def _arguments_text(call: dict[str, Any]) -> str:
    if "argumentsText" in call:
        return str(call["argumentsText"])
    return json.dumps(call.get("arguments", {}))


def _last_user_text(api: str, body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


def _last_message_text(body: dict[str, Any]) -> str:
    """The text of the request's last message of any role: for a tool result (OpenAI
    ``tool`` message, Anthropic ``tool_result`` block) what the tool returned."""
    messages = body.get("messages", [])
    if not messages:
        return ""
    content = messages[-1].get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        inner = block.get("content", block.get("text", ""))
        if isinstance(inner, list):
            inner = "".join(b.get("text", "") for b in inner if isinstance(b, dict))
        parts.append(str(inner))
    return "".join(parts)


def anthropic_events(reply: Reply, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The (event name, data) pairs of one Anthropic Messages stream."""
    chunks = int(reply.get("chunks", 3))
    usage = reply.get("usage", {})
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_loopback",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": usage.get("input", 10),
                    "cache_creation_input_tokens": usage.get("cacheWrite", 0),
                    "cache_read_input_tokens": usage.get("cacheRead", 0),
                    "output_tokens": 1,
                },
            },
        },
    )
    blocks: list[tuple[dict[str, Any], str, str, str]] = []
    if "thinking" in reply:
        blocks.append(
            ({"type": "thinking", "thinking": ""}, "thinking_delta", "thinking", reply["thinking"])
        )
    if reply.get("text"):
        blocks.append(({"type": "text", "text": ""}, "text_delta", "text", reply["text"]))
    for number, call in enumerate(reply.get("toolCalls", [])):
        head = {
            "type": "tool_use",
            "id": call.get("id", f"toolu_{number:02d}"),
            "name": call["name"],
            "input": {},
        }
        blocks.append((head, "input_json_delta", "partial_json", _arguments_text(call)))
    for index, (head, delta_type, key, text) in enumerate(blocks):
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": head},
        )
        deltas = [{"type": delta_type, key: piece} for piece in _pieces(text, chunks)]
        if head["type"] == "thinking":
            deltas.append({"type": "signature_delta", "signature": reply.get("signature", "sig")})
        for delta in deltas:
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": delta},
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = reply.get("stopReason") or ("tool_use" if reply.get("toolCalls") else "end_turn")
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage.get("output", 5)},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def openai_chunks(reply: Reply, model: str) -> Iterator[dict[str, Any] | str]:
    """The data payloads of one chat-completions stream (``"[DONE]"`` last)."""
    chunks = int(reply.get("chunks", 3))

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.get("thinking", ""), chunks):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(reply.get("text", ""), chunks):
        yield chunk({"content": piece})
    for number, call in enumerate(reply.get("toolCalls", [])):
        head: dict[str, Any] = {
            "index": number,
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        if not reply.get("omitToolIds"):
            head["id"] = call.get("id", f"call_{number:02d}")
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(_arguments_text(call), chunks):
            yield chunk({"tool_calls": [{"index": number, "function": {"arguments": piece}}]})
    finish = reply.get("stopReason") or ("tool_calls" if reply.get("toolCalls") else "stop")
    yield chunk({}, finish)
    if not reply.get("noUsage"):
        usage = reply.get("usage", {})
        cached = usage.get("cacheRead", 0)
        prompt = usage.get("input", 10) + cached
        yield {
            "id": "chatcmpl-loopback",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": usage.get("output", 5),
                "total_tokens": prompt + usage.get("output", 5),
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
    if not reply.get("noDone"):
        yield "[DONE]"


def _error_body(api: str, reply: Reply) -> dict[str, Any]:
    status = int(reply["status"])
    message = reply.get("errorMessage", f"loopback error {status}")
    if api == "anthropic":
        kind = reply.get("errorType", _ANTHROPIC_ERRORS.get(status, "api_error"))
        return {"type": "error", "error": {"type": kind, "message": message}}
    kind, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    return {
        "error": {
            "message": message,
            "type": reply.get("errorType", kind),
            "code": reply.get("errorCode", code),
        }
    }


def _stream_error(api: str, error: dict[str, Any]) -> bytes:
    kind = error.get("type", "overloaded_error" if api == "anthropic" else "server_error")
    message = error.get("message", "loopback stream error")
    if api == "anthropic":
        data = json.dumps({"type": "error", "error": {"type": kind, "message": message}})
        return f"event: error\ndata: {data}\n\n".encode()
    return f"data: {json.dumps({'error': {'message': message, 'type': kind}})}\n\n".encode()


class ModelServer:
    """A loopback server that answers model requests from a script; see the module doc."""

    def __init__(
        self, script: list[Reply] | dict[str, Any], host: str = "127.0.0.1", port: int = 0
    ):
        if isinstance(script, list):
            script = {"replies": script}
        self.replies: list[Reply] = list(script.get("replies", []))
        self.rules: list[dict[str, Any]] = list(script.get("rules", []))
        self.estimate_usage = bool(script.get("estimateUsage", False))
        self.host = host
        self.port = port
        self.requests: list[dict[str, Any]] = []
        self.routes: dict[str, Any] = {}
        self.route_requests: list[dict[str, Any]] = []
        """Every model request received: ``{"path", "headers", "body", "at"}``."""
        self.disconnects: list[float] = []
        """``time.monotonic()`` of each client disconnect noticed while hanging."""
        self.dropped: list[dict[str, Any]] = []
        """Each request dropped unanswered (``drop``, ``dropNext``):
        ``{"path", "how", "reused"}``; ``reused`` when it came on a kept-alive
        connection."""
        self._served = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> ModelServer:
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> ModelServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __enter__(self) -> ModelServer:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            loop.run_until_complete(self.start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="model-server", daemon=True)
        self._thread.start()
        ready.wait()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)

    # -- serving -----------------------------------------------------------------------
    def _choose(self, api: str, body: dict[str, Any]) -> Reply:
        last = _last_user_text(api, body)
        final = _last_message_text(body)
        for rule in self.rules:
            needle = rule.get("lastUserContains")
            if needle is not None and needle in last:
                return dict(rule["reply"])
            needle = rule.get("lastMessageContains")
            if needle is not None and needle in final:
                return dict(rule["reply"])
        if self._served < len(self.replies):
            self._served += 1
            return self.replies[self._served - 1]
        return {
            "status": 500,
            "errorMessage": f"loopback script exhausted after {self._served} replies",
        }

    @staticmethod
    async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                name, value = line.split(":", 1)
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        raw = await reader.readexactly(length) if length else b""
        return method, path, headers, raw

    def _drop(self, writer: asyncio.StreamWriter, path: str, how: str, reused: bool) -> None:
        """Close without a status line: a FIN, or (``reset``) an RST."""
        self.dropped.append({"path": path, "how": how, "reused": reused})
        if how == "reset":
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            method, path, headers, raw = await self._read_request(reader)
            if method == "GET" and path == "/_requests":
                await self._send_json(writer, 200, self.requests)
                return
            if path in self.routes:
                self.route_requests.append({"path": path, "method": method, "body": raw})
                await self._send_json(writer, 200, self.routes[path])
                return
            api = "anthropic" if path.endswith("/messages") else "openai"
            if not (path.endswith("/messages") or path.endswith("/chat/completions")):
                await self._send_json(writer, 404, {"error": {"message": f"no route {path}"}})
                return
            body = json.loads(raw or b"{}")
            self.requests.append(
                {"path": path, "headers": headers, "body": body, "at": time.monotonic()}
            )
            reply = self._choose(api, body)
            if reply.get("usage") == "estimate" or (self.estimate_usage and "usage" not in reply):
                spoken = len(str(reply.get("text", ""))) + len(
                    json.dumps(reply.get("toolCalls", []))
                )
                reply = {**reply, "usage": {"input": len(raw) // 4, "output": max(1, spoken // 4)}}
            if "drop" in reply:
                self._drop(writer, path, str(reply["drop"]), reused=False)
                return
            if "bodyFile" in reply:
                data = Path(reply["bodyFile"]).read_bytes()  # noqa: ASYNC240 (a small fixture)
                await self._send_bytes(writer, int(reply.get("status", 200)), data)
                return
            if "status" in reply:
                extra = {}
                if "retryAfter" in reply:
                    extra["retry-after"] = str(reply["retryAfter"])
                await self._send_json(writer, int(reply["status"]), _error_body(api, reply), extra)
                return
            await self._stream(reader, writer, api, reply, str(body.get("model", "loopback")))
            if "dropNext" in reply:
                _, path, _, _ = await self._read_request(reader)
                self._drop(writer, path, str(reply["dropNext"]), reused=True)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _send_json(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        payload: Any,
        extra: dict[str, str] | None = None,
    ) -> None:
        await self._send_bytes(writer, status, json.dumps(payload).encode(), extra)

    async def _send_bytes(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        data: bytes,
        extra: dict[str, str] | None = None,
    ) -> None:
        head = [
            f"HTTP/1.1 {status} Loopback",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
            "Connection: close",
        ]
        head += [f"{k}: {v}" for k, v in (extra or {}).items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await writer.drain()

    def _events(self, api: str, reply: Reply, model: str) -> list[bytes]:
        out: list[bytes] = []
        if "raw" in reply or "rawFile" in reply:
            if "rawFile" in reply:
                with open(reply["rawFile"], encoding="utf-8") as handle:
                    raw = handle.read()
            else:
                raw = str(reply["raw"])
            if not raw.strip():
                return []
            return [part.encode() + b"\n\n" for part in raw.strip().split("\n\n")]
        pings = bool(reply.get("pings"))
        if api == "anthropic":
            for name, data in anthropic_events(reply, model):
                out.append(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                if pings and name in ("message_start", "content_block_stop"):
                    out.append(b'event: ping\ndata: {"type": "ping"}\n\n')
        else:
            for item in openai_chunks(reply, model):
                text = item if isinstance(item, str) else json.dumps(item)
                out.append(f"data: {text}\n\n".encode())
                if pings:
                    out.append(b": keep-alive\n\n")
        return out

    async def _stream(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        api: str,
        reply: Reply,
        model: str,
    ) -> None:
        connection = "keep-alive" if "dropNext" in reply else "close"
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            f"Transfer-Encoding: chunked\r\nConnection: {connection}\r\n\r\n"
        )
        writer.write(head.encode())
        await writer.drain()
        delay = float(reply.get("delayMs", 0)) / 1000
        for number, event in enumerate(self._events(api, reply, model)):
            if reply.get("hangAfter") == number:
                await self._hang(reader)
                return
            if reply.get("dropAfter") == number:
                writer.transport.abort()
                return
            if reply.get("errorAfter") == number:
                event = _stream_error(api, reply.get("error", {}))
                await self._write(writer, event, number)
                break
            await self._write(writer, event, number)
            if delay:
                await asyncio.sleep(delay)
        else:
            if reply.get("hangAfter") is not None:
                await self._hang(reader)
                return
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _write(self, writer: asyncio.StreamWriter, event: bytes, number: int) -> None:
        cut = 1 + (number * 7) % max(1, len(event) - 1)
        for part in (event[:cut], event[cut:]):
            if part:
                writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                await writer.drain()

    async def _hang(self, reader: asyncio.StreamReader) -> None:
        while await reader.read(1024):
            pass
        self.disconnects.append(time.monotonic())


def main() -> None:
    parser = argparse.ArgumentParser(description="Scripted loopback model server (SSE).")
    parser.add_argument(
        "--script", required=True, help="JSON file: a list of replies or {replies, rules}"
    )
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with open(args.script, encoding="utf-8") as handle:
        script = json.load(handle)

    async def serve() -> None:
        server = await ModelServer(script, port=args.port).start()
        print(f"PORT {server.port}", flush=True)
        await asyncio.Event().wait()

    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
