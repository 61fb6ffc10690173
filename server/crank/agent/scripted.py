"""A scripted model: a stand-in for a real provider, for tests and the offline demo.

It says what it is (``api = "scripted"``). It answers from a list of replies, each fixed
or computed from the one request it is sent (a function sees nothing but that request,
like a real model). It streams every reply as deltas, records every request, and
behaves like a strict, caching provider where that matters for tests:

- usage reports ``cacheRead`` as the longest prefix, in tokens, that this request
  shares with the previous one, so cache-friendliness can be measured;
- with a ``context_window`` it refuses a longer request with an overflow error;
- it refuses a request in which a tool call has no result or a result has no call.

Tokens are estimated as characters / 4 of a canonical JSON rendering of the request.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from .messages import (
    ERROR_KINDS,
    AssistantMessage,
    ContentBlock,
    ErrorKind,
    ImageBlock,
    Message,
    StopReason,
    Usage,
    assistant_message,
    images_of,
)
from .model import AbortSignal, ModelRequest, StreamEvent
from .view import is_valid_view

CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class Reply:
    """One scripted reply. ``stop_reason`` may lie on purpose (tests of principle 1)."""

    text: str = ""
    thinking: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    stop_reason: StopReason | None = None
    error: str | None = None
    """End the reply as a provider error with this message, after any content."""
    error_kind: ErrorKind = "server"
    hang_after: int | None = None
    """Go silent after this many deltas, until cancelled (a stalled stream)."""
    delay: float = 0.0
    """Seconds to wait before each delta."""


ReplySource = Reply | Callable[[ModelRequest], Reply]

_REPLY_KEYS = {
    "text",
    "thinking",
    "calls",
    "stopReason",
    "error",
    "errorKind",
    "hangAfter",
    "delay",
}


def reply_from_dict(data: dict[str, Any]) -> Reply:
    """A reply from plain JSON, for scripts kept in files (the server's ``scripted``
    provider, the demo). Unknown keys are refused by name rather than ignored."""
    unknown = sorted(set(data) - _REPLY_KEYS)
    if unknown:
        raise ValueError(f"unknown key(s) in a scripted reply: {', '.join(unknown)}")
    pairs = tuple((str(c["name"]), dict(c.get("arguments", {}))) for c in data.get("calls", []))
    return Reply(
        text=str(data.get("text", "")),
        thinking=str(data.get("thinking", "")),
        calls=pairs,
        stop_reason=data.get("stopReason"),
        error=data.get("error"),
        error_kind=_error_kind(data.get("errorKind", "server")),
        hang_after=data.get("hangAfter"),
        delay=float(data.get("delay", 0.0)),
    )


def _error_kind(raw: Any) -> ErrorKind:
    if raw not in ERROR_KINDS:
        raise ValueError(f"errorKind {raw!r} is not one of {', '.join(ERROR_KINDS)}")
    return cast(ErrorKind, raw)


def say(text: str, **options: Any) -> Reply:
    return Reply(text=text, **options)


def call(name: str, arguments: dict[str, Any], text: str = "", **options: Any) -> Reply:
    return Reply(text=text, calls=((name, arguments),), **options)


def calls(*pairs: tuple[str, dict[str, Any]], text: str = "", **options: Any) -> Reply:
    return Reply(text=text, calls=tuple(pairs), **options)


IMAGE_TEXT_CHARS = 4_800
"""What an image counts for here (about 1,600 tokens, as a real provider charges), in
place of its base64: a provider does not read an image as text."""


def _measured(message: Message) -> Any:
    images = images_of(message)
    if not images:
        return message
    shown = [
        {**{k: v for k, v in block.items() if k != "data"}, "data": _image_text(block)}
        for block in images
    ]
    return {**message, "images": shown}


def _image_text(block: ImageBlock) -> str:
    digest = hashlib.sha256(block.get("data", "").encode()).hexdigest()
    return digest.ljust(IMAGE_TEXT_CHARS, ".")


def render_request(request: ModelRequest) -> str:
    """The canonical text a request is measured by (stable key order, no whitespace);
    an image counts as IMAGE_TEXT_CHARS characters naming its bytes, not as its base64."""
    messages = [_measured(message) for message in request.messages]
    body = {"system": request.system, "tools": request.tools, "messages": messages}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix, by binary search over C-level slice compares."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


@dataclass
class ScriptedModel:
    """See the module docstring. ``requests`` holds every request in the order received."""

    replies: Sequence[ReplySource]
    context_window: int = 200_000
    id: str = "scripted"
    chunk_size: int = 8
    """Characters per streamed text delta."""
    requests: list[ModelRequest] = field(default_factory=list)
    usages: list[Usage] = field(default_factory=list)
    _next: int = 0
    _previous_render: str = ""
    _call_counter: int = 0

    @property
    def api(self) -> str:
        return "scripted"

    def _fail(self, message: str, kind: ErrorKind) -> AssistantMessage:
        reply = assistant_message([], stop_reason="error", model=self.id, error_message=message)
        reply["errorKind"] = kind
        return reply

    def _usage_for(self, rendered: str, output_chars: int) -> Usage:
        shared = common_prefix_length(self._previous_render, rendered)
        cached = shared // CHARS_PER_TOKEN
        total = estimate_tokens(rendered)
        self._previous_render = rendered
        return {
            "input": total - cached,
            "output": estimate_tokens("x" * output_chars) if output_chars else 0,
            "cacheRead": cached,
            "cacheWrite": 0,
        }

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if not is_valid_view(request.messages):
            yield {
                "type": "done",
                "message": self._fail(
                    "invalid request: every tool call needs exactly one result right after it",
                    "invalid_request",
                ),
            }
            return
        rendered = render_request(request)
        tokens = estimate_tokens(rendered)
        if tokens > self.context_window:
            yield {
                "type": "done",
                "message": self._fail(
                    f"prompt is too long: {tokens} tokens > {self.context_window} maximum",
                    "overflow",
                ),
            }
            return
        if self._next >= len(self.replies):
            yield {
                "type": "done",
                "message": self._fail("the scripted model has no more replies", "server"),
            }
            return
        source = self.replies[self._next]
        self._next += 1
        reply = source(request) if callable(source) else source
        async for event in self._play(reply, rendered):
            yield event

    async def _play(self, reply: Reply, rendered: str) -> AsyncIterator[StreamEvent]:
        content: list[ContentBlock] = []
        sent = 0

        async def pace() -> None:
            nonlocal sent
            if reply.hang_after is not None and sent >= reply.hang_after:
                await asyncio.Event().wait()  # silent until cancelled
            if reply.delay:
                await asyncio.sleep(reply.delay)
            sent += 1

        if reply.thinking:
            index = len(content)
            content.append({"type": "thinking", "thinking": reply.thinking})
            for piece in _pieces(reply.thinking, self.chunk_size):
                await pace()
                yield {"type": "thinking_delta", "contentIndex": index, "text": piece}
        if reply.text:
            index = len(content)
            content.append({"type": "text", "text": reply.text})
            for piece in _pieces(reply.text, self.chunk_size):
                await pace()
                yield {"type": "text_delta", "contentIndex": index, "text": piece}
        for name, arguments in reply.calls:
            index = len(content)
            self._call_counter += 1
            call_id = f"call_{self._call_counter}"
            content.append(
                {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
            )
            await pace()
            yield {"type": "toolcall_start", "contentIndex": index, "id": call_id, "name": name}
            for piece in _pieces(json.dumps(arguments), self.chunk_size * 4):
                await pace()
                yield {"type": "toolcall_delta", "contentIndex": index, "text": piece}
        if reply.hang_after is not None:
            await pace()
        stop: StopReason = reply.stop_reason or ("toolUse" if reply.calls else "stop")
        output_chars = (
            len(reply.text) + len(reply.thinking) + sum(len(json.dumps(a)) for _, a in reply.calls)
        )
        usage = self._usage_for(rendered, output_chars)
        self.usages.append(usage)
        if reply.error is not None:
            message = assistant_message(
                content, stop_reason="error", model=self.id, usage=usage, error_message=reply.error
            )
            message["errorKind"] = reply.error_kind
        else:
            message = assistant_message(content, stop_reason=stop, model=self.id, usage=usage)
        message["api"] = "scripted"
        yield {"type": "done", "message": message}
