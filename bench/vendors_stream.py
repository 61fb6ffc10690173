"""Parse-and-assemble cost of long streamed replies, and abort latency.

Serves a pre-built SSE body of n text deltas from a loopback server (own thread, large
writes that cut events at arbitrary byte offsets) and times the vendor model from
request to ``done``, for n = 10,000 and 100,000, both API families. Prints medians of
several runs, deltas per second, and the 100k/10k ratio (linear means about 10; the
budget is 12). Then times abort: cancel a silent stream and measure until the server
sees the connection close, and what the fresh client after a cancel costs the next request.

    .venv/bin/python bench/vendors_stream.py [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "server"), str(ROOT)]

from tests.support.model_server import ModelServer  # noqa: E402

from crank.agent.messages import user_message  # noqa: E402
from crank.agent.model import AbortSignal, ModelRequest  # noqa: E402
from crank.vendors import AnthropicModel, OpenAIModel, ProviderConfig, Secret  # noqa: E402


def _event(name: str, data: dict[str, object]) -> str:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def anthropic_body(n: int) -> bytes:
    usage = {"input_tokens": 5, "output_tokens": 1}
    block = {"type": "text", "text": ""}
    delta = {"type": "text_delta", "text": "tok "}
    parts = [
        _event("message_start", {"type": "message_start", "message": {"usage": usage}}),
        _event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        _event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        * n,
        _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
        _event("message_stop", {"type": "message_stop"}),
    ]
    return "".join(parts).encode()


def openai_body(n: int) -> bytes:
    chunk = json.dumps(
        {"choices": [{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}]}
    )
    end = json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return (f"data: {chunk}\n\n" * n + f"data: {end}\n\ndata: [DONE]\n\n").encode()


class BlobServer:
    """Serves one fixed SSE body to every request, in 64 KiB chunked writes."""

    def __init__(self) -> None:
        self.body = b""
        self.port = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(
                next(
                    (
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    b"0",
                )
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            body = self.body
            for start in range(0, len(body), 65536):
                piece = body[start : start + 65536]
                writer.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            writer.close()

        async def start() -> None:
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            self.port = server.sockets[0].getsockname()[1]

        def run() -> None:
            self.loop.run_until_complete(start())
            ready.set()
            self.loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait()


async def time_stream(api: str, url: str) -> tuple[float, int]:
    config = ProviderConfig(api=api, model="m", base_url=url, api_key=Secret("k"))
    model = AnthropicModel(config) if api == "anthropic" else OpenAIModel(config)
    request = ModelRequest(system="s", messages=[user_message("go", 1)])
    deltas = 0
    started = time.perf_counter()
    async for event in model.stream(request, AbortSignal()):
        if event["type"] == "text_delta":
            deltas += 1
        elif event["type"] == "done":
            assert event["message"]["stopReason"] == "stop", event["message"].get("errorMessage")
    elapsed = time.perf_counter() - started
    await model.aclose()
    return elapsed, deltas


async def abort_latency(runs: int) -> list[float]:
    out = []
    async with ModelServer([]) as server:
        for _ in range(runs):
            server.add({"text": "x", "chunks": 1, "hangAfter": 3})
            config = ProviderConfig(
                api="anthropic", model="m", base_url=server.url, api_key=Secret("k")
            )
            model = AnthropicModel(config)
            first = asyncio.Event()

            async def consume(model: AnthropicModel = model, first: asyncio.Event = first) -> None:
                async for event in model.stream(
                    ModelRequest(system="", messages=[user_message("x", 1)]), AbortSignal()
                ):
                    if event["type"] == "text_delta":
                        first.set()

            task = asyncio.create_task(consume())
            await first.wait()
            before = len(server.disconnects)
            cancelled_at = time.monotonic()
            task.cancel()
            while len(server.disconnects) == before:  # noqa: ASYNC110 - polling the server's record
                await asyncio.sleep(0.001)
            out.append(server.disconnects[-1] - cancelled_at)
            await model.aclose()
    return out


async def after_cancel(runs: int) -> tuple[list[float], list[float]]:
    """Request-to-done of a short reply on one model: right after a completed request
    (the client is reused) and right after a cancelled one (a fresh client is built)."""
    reused, fresh = [], []
    script = {
        "rules": [
            {"lastUserContains": "stall", "reply": {"text": "x", "hangAfter": 0}},
            {"lastUserContains": "go", "reply": {"text": "ok"}},
        ]
    }
    async with ModelServer(script) as server:
        config = ProviderConfig(
            api="anthropic", model="m", base_url=server.url, api_key=Secret("k")
        )
        model = AnthropicModel(config)

        async def once(text: str) -> float:
            started = time.perf_counter()
            async for _ in model.stream(
                ModelRequest(system="", messages=[user_message(text, 1)]), AbortSignal()
            ):
                pass
            return time.perf_counter() - started

        await once("go")
        for _ in range(runs):
            reused.append(await once("go"))
            task = asyncio.create_task(once("stall"))
            before = len(server.requests)
            while len(server.requests) == before:  # noqa: ASYNC110 - polling the server's record
                await asyncio.sleep(0.001)
            task.cancel()
            await asyncio.wait([task])
            fresh.append(await once("go"))
        await model.aclose()
    return reused, fresh


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    blob = BlobServer()
    for api in ("anthropic", "openai"):
        url = f"http://127.0.0.1:{blob.port}" + ("" if api == "anthropic" else "/v1")
        medians = {}
        for n in (10_000, 100_000):
            blob.body = anthropic_body(n) if api == "anthropic" else openai_body(n)
            times = []
            for _ in range(args.runs):
                elapsed, deltas = asyncio.run(time_stream(api, url))
                assert deltas == n, (deltas, n)
                times.append(elapsed)
            medians[n] = statistics.median(times)
            print(
                f"{api:9s} n={n:>7,}  median {medians[n]:.3f}s  {n / medians[n]:>10,.0f} deltas/s"
            )
        print(
            f"{api:9s} ratio 100k/10k = {medians[100_000] / medians[10_000]:.2f}"
            " (linear ~10, budget 12)"
        )
    latencies = asyncio.run(abort_latency(20))
    print(
        f"abort: cancel -> server sees close, median {statistics.median(latencies) * 1000:.1f} ms, "
        f"max {max(latencies) * 1000:.1f} ms over {len(latencies)} runs"
    )
    reused, fresh = asyncio.run(after_cancel(20))
    print(
        f"next request: after a completed one median {statistics.median(reused) * 1000:.1f} ms, "
        f"after a cancelled one (fresh client) median {statistics.median(fresh) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
