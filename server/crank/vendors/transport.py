"""The shared HTTP machinery: one streamed POST, retries, timeouts, abort.

An API family (``anthropic.py``, ``openai.py``) supplies three things: the request
body, the headers, and a parser that turns each server-sent event into neutral stream
events. Everything a flaky provider needs is here, once:

- retries with exponential backoff and jitter for rate limits, overload, server errors
  and connections that drop before anything streamed, honouring ``Retry-After``;
  never after content has streamed, never for overflow; each retry announced with
  ``retry_start`` / ``retry_end``; the wait ends at once on abort;
- connect and read timeouts (a stream silent past the read timeout ends as an error);
- abort: cancellation of the iterating task closes the HTTP stream at once (the
  ``async with`` unwinds) and propagates; ``signal.aborted`` seen between events ends
  the reply with ``stopReason: "aborted"`` and its partial content;
- the reply's usage priced from the catalog, and overflow detected from usage.

The API key is only ever placed in a header; any error text that echoes it is scrubbed.
"""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import replace
from typing import Any, Protocol

import httpx
from httpx_sse import EventSource

from crank.agent import wiretext
from crank.agent.messages import AssistantMessage, StopReason
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent

from .catalog import ModelInfo, cost_of, lookup
from .clients import ClientKeeper
from .config import ProviderConfig, without_credentials
from .errors import ProviderError, body_of, classify
from .reply import ReplyBuilder

log = logging.getLogger("crank.vendors")

HOSTED_OPENAI = "https://api.openai.com"
REFUSED_RETRY_DELAY = 0.5
"""Seconds before the one retry of a refused connection: a server that is starting
gets a moment; one that is not running is reported at once, not after the backoff."""


def _unknown_host(exc: httpx.ConnectError, url: str) -> ProviderError | None:
    """A failed name lookup (``socket.gaierror`` under httpx's error) said as one: the
    host in the base URL is wrong or the network has no DNS; nothing about ports."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, socket.gaierror):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    host = httpx.URL(url).host
    return ProviderError(
        "network",
        f"the provider's host {host} could not be found ({cause.strerror or cause}): "
        "check the host name in the base URL, and that this machine can resolve names",
        retryable=False,
    )


class StreamFailure(Exception):
    """Raised by a parser for an error the provider reported inside the stream."""

    def __init__(self, error: ProviderError) -> None:
        super().__init__(error.message)
        self.error = error


class Parser(Protocol):
    complete: bool
    """True once the provider said the reply is finished."""
    stop_reason: StopReason

    def feed(self, event: str, data: str) -> list[StreamEvent]: ...

    def finalize(self) -> None:
        """Called once after a complete stream (e.g. to estimate missing usage)."""

    def ended_cleanly(self) -> bool:
        """Whether a stream that has ended held a whole reply."""


DRAIN_SECONDS = 0.05
"""How long the end of a body may take after the reply's end marker."""


async def _finish_body(events: AsyncIterator[object]) -> None:
    """Read what follows the end marker (``[DONE]``, ``message_stop``) to the end of
    the body, unparsed, so httpx can put the connection back in its pool: stopping at
    the marker made it close the connection, and every turn paid a new connection (a
    new TLS handshake against a cloud API). The body's end normally comes with the
    marker; a server slow to send it costs at most DRAIN_SECONDS, and then the
    connection is simply closed, as before."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in events:
                pass
    except (TimeoutError, httpx.HTTPError):
        pass


class StreamingModel:
    """Base for the HTTP models; implements ``crank.agent.model.Model``."""

    api_name = ""

    def __init__(
        self,
        config: ProviderConfig,
        *,
        client: httpx.AsyncClient | None = None,
        limits: httpx.Limits | None = None,
    ) -> None:
        self.config = config
        self.info: ModelInfo = lookup(
            self.api_name,
            config.model,
            context_window=config.context_window,
            max_output_tokens=config.max_output_tokens,
            compatible=not config.base_url.startswith(HOSTED_OPENAI),
            images=config.images,
        )
        self._limits = limits or httpx.Limits()
        self._ssl: ssl.SSLContext | None = None
        self._clients = ClientKeeper(self._new_client, client)

    @property
    def api(self) -> str:
        return self.api_name

    @property
    def id(self) -> str:
        return self.config.model

    @property
    def context_window(self) -> int:
        return self.info.context_window

    @property
    def accepts_images(self) -> bool:
        """The catalog's (or the configuration's) word on whether images can be sent."""
        return self.info.images

    def set_context_window(self, tokens: int) -> None:
        """The window the server said it runs with (it wins over any default)."""
        self.info = replace(self.info, context_window=tokens, known=True)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.public()!r})"

    # -- supplied by an API family ---------------------------------------------------
    def url(self) -> str:
        raise NotImplementedError

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def parser(self, builder: ReplyBuilder, request: ModelRequest, payload: bytes) -> Parser:
        raise NotImplementedError

    def adapt(self, error: ProviderError) -> bool:
        """Whether the request can be changed so that the server takes it (a field it
        refused, left out or renamed); then it is sent again at once. Each change is
        made once per model, so this cannot loop."""
        return False

    async def unstreamed(
        self, client: httpx.AsyncClient, request: ModelRequest, parser: Parser
    ) -> list[StreamEvent] | ProviderError | None:
        """A stream that closed before sending anything says nothing of why; an API
        family may ask again without streaming to learn it (its answer, or its error).
        None: no second opinion."""
        return None

    async def explain(self, client: httpx.AsyncClient, error: ProviderError) -> ProviderError:
        """The chance to add what the server can tell about a refusal (the models it
        serves, for a wrong model name)."""
        return error

    # -- shared ----------------------------------------------------------------------
    def client(self) -> httpx.AsyncClient:
        """The client the next request will use (a new one after a cancelled request)."""
        return self._clients.current()

    def _new_client(self) -> httpx.AsyncClient:
        """One SSL context per model: loading the CA store is most of what a new client
        costs (tens of ms), and a cancel asks for a new client."""
        timeout = httpx.Timeout(
            connect=self.config.connect_timeout,
            read=self.config.read_timeout,
            write=self.config.read_timeout,
            pool=self.config.connect_timeout,
        )
        if self._ssl is None:
            self._ssl = httpx.create_ssl_context()
        return httpx.AsyncClient(timeout=timeout, limits=self._limits, verify=self._ssl)

    async def aclose(self) -> None:
        await self._clients.aclose()

    def _scrub(self, text: str) -> str:
        key = self.config.api_key
        if key is not None and key.reveal():
            text = text.replace(key.reveal(), "***")
        return text

    def _error(self, error: ProviderError) -> ProviderError:
        scrubbed = self._scrub(error.message)
        if error.kind == "auth" and self.config.api_key is None and self.config.withheld_keys:
            scrubbed += (
                f" (no key was sent to {without_credentials(self.config.base_url)}: "
                f"{'; '.join(self.config.withheld_keys)}; a key goes only to the endpoint it "
                "was configured with, so set it next to this base URL)"
            )
        if scrubbed == error.message:
            return error
        return ProviderError(error.kind, scrubbed, error.status, error.retry_after, error.retryable)

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter: about base * 2^(attempt-1), +-25%."""
        delay: float = min(
            self.config.max_retry_delay, self.config.retry_base_delay * 2.0 ** (attempt - 1)
        )
        return delay * random.uniform(0.75, 1.25)

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        payload = wiretext.dumps(self.body(request))
        retries = 0
        refused = 0
        retrying = False
        reconnected = False
        if signal.aborted:
            message = ReplyBuilder(self.api, self.id).finish("aborted", note=signal.reason)
            yield {"type": "done", "message": self._priced(message)}
            return
        while True:
            builder = ReplyBuilder(self.api, self.id)
            parser = self.parser(builder, request, payload)
            error: ProviderError | None = None
            aborted = False
            silent = False
            answered = False
            refused_now = False  # this attempt's connection was refused (not an earlier one's)
            client: httpx.AsyncClient | None = None  # lent for this attempt; kept on failure
            try:
                async with (
                    self._clients.lease() as client,
                    client.stream(
                        "POST", self.url(), content=payload, headers=self.headers()
                    ) as response,
                ):
                    answered = True
                    if response.status_code >= 400:
                        raw = await response.aread()
                        error = await self.explain(client, self._http_error(response, raw))
                    else:
                        events = EventSource(response).aiter_sse()
                        async for sse in events:
                            for event in parser.feed(sse.event, sse.data):
                                if retrying:
                                    retrying = False
                                    yield {"type": "retry_end", "attempt": retries, "success": True}
                                yield event
                            if parser.complete:
                                await _finish_body(events)
                                break
                            if signal.aborted:
                                aborted = True
                                break
                        if not aborted and not parser.ended_cleanly():
                            silent = not builder.streamed
                            error = ProviderError(
                                "network", "the connection closed before the reply finished"
                            )
            except StreamFailure as failure:
                error = failure.error
            except httpx.TimeoutException as exc:
                error = self._timeout(exc)
            except httpx.ConnectError as exc:
                refused += 1
                refused_now = True
                unknown = _unknown_host(exc, self.url())
                error = unknown or ProviderError(
                    "network",
                    f"nothing answered at {self.url()} ({exc or 'connection refused'}): is the "
                    "server running, and is the port in the base URL right?",
                    retryable=refused <= 1,
                    retry_after=REFUSED_RETRY_DELAY,
                )
            except httpx.HTTPError as exc:
                error = self._network_error(exc, answered)
                dropped = isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError))
                if dropped and not answered:
                    # Lost before any answer: most often a pooled connection the server
                    # had just closed (its keep-alive timeout, or after an error). The
                    # pool may hold more like it: a fresh client, and at once, once.
                    if client is not None:
                        await self._clients.retire(client)
                    if not reconnected and not signal.aborted:
                        reconnected = True
                        log.info("sending again on a fresh connection: %s", error.message)
                        continue
                else:
                    # Dropped after the headers with nothing streamed: as little said
                    # as a silent stream, and asked again unstreamed the same way.
                    silent = dropped and not builder.streamed

            if silent and client is not None:
                # The server failed after starting the reply, and llama-cpp-python's
                # then closes the connection it said it would keep alive: the
                # unstreamed ask, sent at once, would go on it and be dropped.
                await self._clients.retire(client)
            if silent and not signal.aborted:
                # Asked only once the silent stream is closed: llama-cpp-python serves
                # one request at a time and would wait for the first to end.
                second = await self._ask_unstreamed(request, parser)
                if isinstance(second, list):
                    error = None
                    for event in second:
                        yield event
                elif second is not None:
                    error = second
            if aborted:
                if retrying:
                    yield {"type": "retry_end", "attempt": retries, "success": False}
                yield {
                    "type": "done",
                    "message": self._priced(
                        builder.finish("aborted", note=signal.reason or "aborted")
                    ),
                }
                return
            if error is None:
                parser.finalize()
                if retrying:
                    yield {"type": "retry_end", "attempt": retries, "success": True}
                measured = getattr(parser, "measured", True)
                message = builder.finish(parser.stop_reason)
                yield {"type": "done", "message": self._checked(message, measured)}
                return

            error = self._error(error)
            if not builder.streamed and not signal.aborted and self.adapt(error):
                log.info("sending again, changed for the server: %s", error.message)
                payload = wiretext.dumps(self.body(request))
                continue
            if retrying:
                retrying = False
                yield {"type": "retry_end", "attempt": retries, "success": False}
            if refused_now and not error.retryable:
                log.warning("model request failed: %s", error.message)
                yield {"type": "done", "message": self._priced(builder.finish("error", error))}
                return
            can_retry = error.should_retry and not builder.streamed and not signal.aborted
            if can_retry and retries < self.config.max_retries:
                delay = (
                    error.retry_after
                    if error.retry_after is not None
                    else self.backoff(retries + 1)
                )
                if delay <= self.config.max_retry_delay:
                    retries += 1
                    retrying = True
                    log.info("retry %d in %.2fs after: %s", retries, delay, error.message)
                    yield {
                        "type": "retry_start",
                        "attempt": retries,
                        "delayMs": round(delay * 1000),
                        "error": "no answer yet, trying once more"
                        if refused_now
                        else error.message,
                    }
                    if await _sleep(delay, signal):
                        yield {"type": "retry_end", "attempt": retries, "success": False}
                        message = builder.finish("aborted", note=signal.reason or "aborted")
                        yield {"type": "done", "message": self._priced(message)}
                        return
                    continue
                error = ProviderError(
                    error.kind,
                    f"{error.message} (the provider asked to wait {delay:.0f}s, longer than "
                    f"maxRetryDelayMs allows)",
                    error.status,
                    error.retry_after,
                    False,
                )
            elif can_retry:
                error = ProviderError(
                    error.kind,
                    f"{error.message} (gave up after {retries + 1 + reconnected} attempts)",
                    error.status,
                    error.retry_after,
                    False,
                )
            log.warning("model request failed: %s", error.message)
            yield {"type": "done", "message": self._priced(builder.finish("error", error))}
            return

    async def _ask_unstreamed(
        self, request: ModelRequest, parser: Parser
    ) -> list[StreamEvent] | ProviderError | None:
        try:
            async with self._clients.lease() as client:
                return await self.unstreamed(client, request, parser)
        except httpx.TimeoutException as exc:
            return self._timeout(exc)
        except httpx.HTTPError as exc:
            return self._network_error(exc, answered=False)

    def _network_error(self, exc: httpx.HTTPError, answered: bool) -> ProviderError:
        """What a failed connection says: an error with no text of its own (a reset
        is just ``ReadError``) is named for what happened and where."""
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        dropped = isinstance(exc, (httpx.ReadError, httpx.RemoteProtocolError))
        if dropped and not answered:
            return ProviderError(
                "network",
                f"the server at {self.url()} dropped the connection before answering ({detail})",
            )
        return ProviderError("network", detail if str(exc) else f"{detail}: connection failed")

    def _http_error(self, response: httpx.Response, raw: bytes) -> ProviderError:
        retry_after = response.headers.get("retry-after")
        retry_after_ms = response.headers.get("retry-after-ms")
        if retry_after_ms:
            with suppress(ValueError):
                retry_after = str(float(retry_after_ms) / 1000)
        return classify(
            response.status_code, body_of(raw), retry_after=retry_after, provider=self.api
        )

    def _timeout(self, exc: httpx.TimeoutException) -> ProviderError:
        if isinstance(exc, httpx.ConnectTimeout):
            return ProviderError(
                "timeout",
                f"could not connect within {self.config.connect_timeout:g}s",
                retryable=False,
            )
        if isinstance(exc, httpx.PoolTimeout):
            message = (
                f"no connection to the provider came free within "
                f"{self.config.connect_timeout:g}s (connection pool timeout)"
            )
        elif isinstance(exc, httpx.WriteTimeout):
            message = (
                f"the provider took no request bytes for {self.config.read_timeout:g}s "
                f"(write timeout)"
            )
        else:
            message = f"the provider sent nothing for {self.config.read_timeout:g}s (read timeout)"
        return ProviderError("timeout", message, retryable=False)

    def _priced(self, message: AssistantMessage) -> AssistantMessage:
        message["usage"]["cost"] = cost_of(message["usage"], self.info.prices)
        return message

    def _checked(self, message: AssistantMessage, measured: bool = True) -> AssistantMessage:
        """Price the reply and flag a context overflow the server did not report.
        Only from usage the server measured: an estimate (a server that sends none)
        is too rough to turn an answer into an error."""
        usage = message["usage"]
        used = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
        if measured and self.info.known and used > self.info.context_window:
            message["stopReason"] = "error"
            message["errorKind"] = "overflow"
            message["errorMessage"] = (
                f"context overflow: the request used {used} input tokens, more than the "
                f"{self.info.context_window}-token window of {self.id}"
            )
        return self._priced(message)


async def _sleep(delay: float, signal: AbortSignal) -> bool:
    """Wait ``delay`` seconds or until abort; True if aborted."""
    if signal.aborted:
        return True
    woken = asyncio.Event()
    remove = signal.on_abort(woken.set)
    try:
        with suppress(TimeoutError):
            await asyncio.wait_for(woken.wait(), delay)
    finally:
        remove()
    return signal.aborted
