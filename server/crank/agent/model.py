"""The model interface: what the loop needs from anything that can answer.

A model streams one reply for a request. The request is provider-neutral (system
string, messages, tool specs, cache marks); the stream is a sequence of small neutral
events ending in exactly one ``done`` that carries the finished assistant message.
Failure is data: a model never raises for a provider problem, it ends with a ``done``
whose message has ``stopReason: "error"`` and an ``errorMessage``. The only exception
a model lets through is cancellation, which is how abort reaches a stream.

Vendors (``crank.vendors``) implement this for real APIs; ``crank.agent.scripted``
implements it for tests and demos.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from .messages import AssistantMessage, Message


class ToolSpec(TypedDict):
    """What a model is told about a tool: these three keys and nothing else."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """One request, already in its final view (repaired, policies applied).

    ``cache_marks`` are indices into ``messages``: a cache breakpoint goes after each
    listed message. Vendors that support caching render them (plus the system prompt
    and the last tool); others ignore them. Empty means "vendor default".
    """

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    cache_marks: tuple[int, ...] = ()
    max_output_tokens: int | None = None


class TextDelta(TypedDict):
    type: Literal["text_delta"]
    contentIndex: int
    text: str


class ThinkingDelta(TypedDict):
    type: Literal["thinking_delta"]
    contentIndex: int
    text: str


class ToolCallStart(TypedDict):
    type: Literal["toolcall_start"]
    contentIndex: int
    id: str
    name: str


class ToolCallDelta(TypedDict):
    """A fragment of a tool call's arguments as JSON text, split anywhere."""

    type: Literal["toolcall_delta"]
    contentIndex: int
    text: str


class RetryStart(TypedDict):
    """The vendor is about to wait ``delayMs`` and try again (nothing streamed yet)."""

    type: Literal["retry_start"]
    attempt: int
    delayMs: int
    error: str


class RetryEnd(TypedDict):
    type: Literal["retry_end"]
    attempt: int
    success: bool


class Done(TypedDict):
    """The last event of every stream: the whole reply, success or failure."""

    type: Literal["done"]
    message: AssistantMessage


StreamEvent = (
    TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta | RetryStart | RetryEnd | Done
)


class AbortSignal:
    """A one-way switch that says "stop", plus wake-ups for whoever is waiting.

    Abort is delivered by cancelling the task that streams or runs a tool; the signal
    is how code that is not awaiting (a subprocess reader, a retry sleep in another
    task) learns about it, and what tools can check before doing something
    irreversible.
    """

    __slots__ = ("_callbacks", "_reason", "aborted")

    def __init__(self) -> None:
        self.aborted = False
        self._reason = ""
        self._callbacks: list[Callable[[], None]] = []

    @property
    def reason(self) -> str:
        return self._reason

    def abort(self, reason: str = "aborted") -> None:
        if self.aborted:
            return
        self.aborted = True
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_abort(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` once on abort (at once if already aborted); returns a remover."""
        if self.aborted:
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove


@runtime_checkable
class Model(Protocol):
    """Anything that can stream a reply. ``api`` and ``id`` name it in messages and state."""

    @property
    def api(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def context_window(self) -> int: ...

    def stream(self, request: ModelRequest, signal: AbortSignal) -> AsyncIterator[StreamEvent]:
        """Stream one reply. Ends with exactly one ``done``; raises only on cancellation."""
        ...


def accepts_images(model: Model) -> bool:
    """Whether ``model`` takes images. A model says so with an ``accepts_images``
    attribute (the vendors read it from the catalog); one that says nothing (the
    scripted model) is taken to, so tests can see every image it is sent."""
    return bool(getattr(model, "accepts_images", True))


NoticeKind = Literal[
    "tools_unsupported", "window_learned", "model_discovered", "settings_ignored", "fix_not_applied"
]
"""What a ``notice`` event is about (``crank.agent.events.Notice``)."""


def take_notices(model: Model) -> list[tuple[NoticeKind, str]]:
    """What a model has to tell the user, ``(kind, message)`` each, taken once: a
    model says it by appending to a ``notices`` list (the vendors: a server that cannot
    call tools); one with no such list has nothing to say."""
    pending = getattr(model, "notices", None)
    if not isinstance(pending, list) or not pending:
        return []
    taken = list(pending)
    pending.clear()
    return taken
