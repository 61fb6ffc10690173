"""A model whose request was cancelled must serve the next request normally.

Every test cancels a first request at some moment (before the connection exists,
while the request body is still being written, after the server has the request but
before any event, mid stream) and then sends a second request on the same model
object, which must finish with the second reply. The models are given a pool of one
connection (``max_connections=1``), so a connection slot that a cancelled request
leaves behind shows up at once instead of after a hundred aborts. ``wait_for`` is only
a hang guard, never a speed check.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from tests.support.model_server import ModelServer
from vendor_helpers import KEY, simple_request

from crank.agent.harness import Harness
from crank.agent.model import AbortSignal
from crank.vendors import AnthropicModel, OpenAIModel, ProviderConfig, Secret
from crank.vendors.transport import StreamingModel

GUARD = 20.0
APIS = ["anthropic", "openai"]
SCRIPT = {
    "rules": [
        {"lastUserContains": "answer", "reply": {"text": "fine"}},
        {"lastUserContains": "stall", "reply": {"text": "never", "hangAfter": 0}},
        {"lastUserContains": "midway", "reply": {"text": "abcdefgh", "chunks": 4, "hangAfter": 4}},
        {"lastUserContains": "slowly", "reply": {"text": "s l o w", "chunks": 7, "delayMs": 20}},
    ]
}


class StallingProxy:
    """A TCP proxy in front of the model server. While ``stall_after`` is set, a new
    connection is read for that many bytes and then never again, so a client with a
    large body is left blocked writing it; ``stalled`` is set at that point. Otherwise
    bytes are piped both ways."""

    def __init__(self, target: ModelServer) -> None:
        self.target = target
        self.stall_after: int | None = None
        self.stalled = asyncio.Event()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> StallingProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self.stall_after is not None:
                await reader.readexactly(self.stall_after)
                self.stalled.set()
                await asyncio.Event().wait()
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target.port)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.close()


@pytest.fixture
async def rules_server() -> AsyncIterator[ModelServer]:
    async with ModelServer(SCRIPT) as running:
        yield running


@pytest.fixture(params=APIS)
async def model(
    request: pytest.FixtureRequest, rules_server: ModelServer
) -> AsyncIterator[StreamingModel]:
    """A one-slot model of each API family, pointed at the rules server."""
    made = model_for(request.param, rules_server.url)
    yield made
    await made.aclose()


def model_for(
    api: str,
    url: str,
    slots: int = 1,
    client: httpx.AsyncClient | None = None,
    connect_timeout: float = 2.0,
) -> StreamingModel:
    config = ProviderConfig(
        api=api,
        model="claude-sonnet-4-5" if api == "anthropic" else "gpt-4o",
        base_url=url if api == "anthropic" else url + "/v1",
        api_key=Secret(KEY),
        connect_timeout=connect_timeout,
        read_timeout=10.0,
        max_retries=0,
    )
    cls = AnthropicModel if api == "anthropic" else OpenAIModel
    return cls(config, client=client, limits=httpx.Limits(max_connections=slots))


async def reply_text(model: StreamingModel, text: str = "answer") -> dict[str, Any]:
    """Stream a request to the end (under the hang guard) and return the final message."""

    async def run() -> dict[str, Any]:
        events = [e async for e in model.stream(simple_request(text), AbortSignal())]
        assert events[-1]["type"] == "done"
        return dict(events[-1]["message"])  # type: ignore[typeddict-item]

    return await asyncio.wait_for(run(), GUARD)


def started(model: StreamingModel, text: str) -> tuple[asyncio.Task[None], asyncio.Queue[str]]:
    """The first request in a task of its own, reporting each event type it sees."""
    seen: asyncio.Queue[str] = asyncio.Queue()

    async def run() -> None:
        async for event in model.stream(simple_request(text), AbortSignal()):
            seen.put_nowait(event["type"])

    return asyncio.create_task(run()), seen


async def cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.wait([task])
    assert task.cancelled(), f"the first request ended by itself: {task}"


async def cancel_after(model: StreamingModel, steps: int) -> None:
    """Start a request the server will never answer, cancel it after ``steps`` turns
    of the event loop."""
    task, _ = started(model, "stall")
    for _ in range(steps):
        await asyncio.sleep(0)
    await cancelled(task)


def assert_fine(message: dict[str, Any], context: str) -> None:
    assert message["stopReason"] == "stop", f"{context}: {message.get('errorMessage')}"
    assert message["content"] == [{"type": "text", "text": "fine"}], context


async def until(condition: Callable[[], bool], what: str) -> None:
    """Poll the loopback server's record (it has no events to wait on)."""
    for _ in range(4000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


async def wait_for_requests(server: ModelServer, count: int) -> None:
    await until(lambda: len(server.requests) >= count, f"{count} request(s) received")


async def test_a_cancel_at_every_loop_step_leaves_the_model_usable(
    model: StreamingModel,
) -> None:
    """Cancel after 0, 1, 2, ... event-loop steps: this walks the whole request path
    (pool, connect, headers, body, waiting for the response) one await at a time."""
    for steps in range(40):
        await cancel_after(model, steps)
        assert_fine(await reply_text(model), f"after a cancel at step {steps}")


@pytest.mark.parametrize("api", APIS)
async def test_a_cancel_while_the_body_is_being_written(
    api: str, rules_server: ModelServer
) -> None:
    async with StallingProxy(rules_server) as proxy:
        model = model_for(api, proxy.url)
        try:
            proxy.stall_after = 65536
            task, _ = started(model, "stall " + "x" * 16_000_000)
            await asyncio.wait_for(proxy.stalled.wait(), GUARD)
            await cancelled(task)
            proxy.stall_after = None
            assert_fine(await reply_text(model), "after a cancel mid body")
        finally:
            await model.aclose()


@pytest.mark.parametrize("moment", ["before the first event", "mid stream"])
async def test_a_cancel_once_the_server_has_the_request(
    moment: str, model: StreamingModel, rules_server: ModelServer
) -> None:
    task, seen = started(model, "stall" if moment == "before the first event" else "midway")
    if moment == "mid stream":
        assert await asyncio.wait_for(seen.get(), GUARD) == "text_delta"
    else:
        await wait_for_requests(rules_server, 1)
        await asyncio.sleep(0.05)  # let the response headers reach the client
        assert seen.empty(), "the stalled reply sends no event"
    await cancelled(task)
    await until(lambda: bool(rules_server.disconnects), "the server saw the disconnect")
    assert_fine(await reply_text(model), f"after a cancel {moment}")
    assert len(rules_server.requests) == 2


async def test_many_cancels_in_a_row_do_not_use_up_the_pool(model: StreamingModel) -> None:
    """Three cancels at each of the first 16 steps, then one request: nothing
    accumulates."""
    for steps in range(16):
        for _ in range(3):
            await cancel_after(model, steps)
    assert_fine(await reply_text(model), "after 48 cancels")


async def test_harness_abort_then_prompt_again(
    model: StreamingModel, rules_server: ModelServer
) -> None:
    """The real Harness: prompt, abort at a given moment, prompt again; the second run
    must get the model's answer. (The rules put "answer" first: the two user turns are
    merged into one request, which holds both words.)"""
    harness = Harness(system="You are terse.", tools=[], model=model)
    for steps in [*range(40), -1]:
        run = harness.prompt("stall please")
        if steps >= 0:
            for _ in range(steps):
                await asyncio.sleep(0)
        else:
            await wait_for_requests(rules_server, len(rules_server.requests) + 1)
        assert await asyncio.wait_for(harness.abort(), GUARD) == "aborted"
        assert await run.wait() == "aborted"
        again = harness.prompt("now answer")
        assert await asyncio.wait_for(again.wait(), GUARD) == "stop", f"step {steps}"
        last = harness.messages[-1]
        assert last["role"] == "assistant"
        assert last["content"] == [{"type": "text", "text": "fine"}], f"step {steps}"


async def test_a_request_running_on_a_retired_client_finishes(rules_server: ModelServer) -> None:
    """A cancel retires the shared client, but a second stream already running on it
    is not disturbed; the next request goes out on a fresh client."""
    model = model_for("anthropic", rules_server.url, slots=4)
    try:
        old = model.client()
        slow = asyncio.create_task(reply_text(model, "slowly"))
        stalled, _ = started(model, "stall")
        await asyncio.wait_for(wait_for_requests(rules_server, 2), GUARD)
        await cancelled(stalled)
        assert model.client() is not old, "the cancel retired the client"
        message = await slow
        assert message["stopReason"] == "stop"
        assert message["content"] == [{"type": "text", "text": "s l o w"}]
        assert old.is_closed, "the retired client is closed once its last request ended"
        assert_fine(await reply_text(model), "on the fresh client")
    finally:
        await model.aclose()


async def test_a_given_client_is_never_retired_or_closed(rules_server: ModelServer) -> None:
    async with httpx.AsyncClient() as given:
        model = model_for("openai", rules_server.url, client=given)
        task, _ = started(model, "stall")
        await asyncio.wait_for(wait_for_requests(rules_server, 1), GUARD)
        await cancelled(task)
        assert model.client() is given and not given.is_closed
        assert_fine(await reply_text(model), "on the given client")
        await model.aclose()
        assert not given.is_closed, "the caller's client is the caller's to close"


async def test_a_full_pool_is_reported_as_a_pool_timeout(rules_server: ModelServer) -> None:
    """One slot, held by a stalled stream: the next request fails with a message that
    names the pool, not a read timeout."""
    model = model_for("openai", rules_server.url, connect_timeout=0.2)
    try:
        holder, _ = started(model, "stall")
        await asyncio.wait_for(wait_for_requests(rules_server, 1), GUARD)
        message = await reply_text(model)
        assert message["stopReason"] == "error"
        assert message["errorKind"] == "timeout"
        assert "connection pool timeout" in message["errorMessage"]
        await cancelled(holder)
    finally:
        await model.aclose()
