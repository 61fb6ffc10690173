"""Messages: the plain JSON data every layer passes around.

The shapes are fixed by docs/protocol.md (camelCase keys, the same on the wire and in
session files), so they are TypedDicts over dicts rather than classes: a message read
back from a session file or received from a client is already the right type, and
``json.dumps`` needs no adapter. The helpers here are small and pure; none of them
mutates a message it is given.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal, NotRequired, TypedDict, get_args

from . import wiretext

StopReason = Literal["stop", "toolUse", "length", "error", "aborted"]
ErrorKind = Literal[
    "rate_limit",
    "overloaded",
    "server",
    "auth",
    "invalid_request",
    "overflow",
    "network",
    "timeout",
]
"""The class of an error reply (``errorKind``). Vendors classify; the loop acts on
``overflow`` only (it recovers once); clients show the rest."""
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)


class TextBlock(TypedDict):
    type: Literal["text"]
    text: str


class ThinkingBlock(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: NotRequired[str]
    """Opaque provider token; Anthropic needs it sent back unchanged."""
    redacted: NotRequired[str]
    """Reasoning the provider encrypted (Anthropic ``redacted_thinking``): opaque data,
    never shown, sent back unchanged; ``thinking`` is then empty."""


class ToolCallBlock(TypedDict):
    type: Literal["toolCall"]
    id: str
    name: str
    arguments: dict[str, Any]


ContentBlock = TextBlock | ThinkingBlock | ToolCallBlock


class ImageBlock(TypedDict):
    """An image on a user message or a tool result (``images``). Exactly one of
    ``data`` (the bytes, base64, inline) and ``sha256`` (a blob stored beside the
    session file, docs/session.md) says where its bytes are; a request is always built
    with them inline (or with a placeholder when they cannot be had)."""

    type: Literal["image"]
    mimeType: str
    """``image/png`` | ``image/jpeg`` | ``image/gif`` | ``image/webp`` (agent.images)."""
    bytes: int
    """The size of the image itself (decoded), for placeholders and the transcript."""
    name: NotRequired[str]
    """A file name to show (``screenshot.png``); never a path the model can use."""
    width: NotRequired[int]
    height: NotRequired[int]
    data: NotRequired[str]
    sha256: NotRequired[str]


class Usage(TypedDict):
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    cost: NotRequired[float]
    """US dollars for this one reply, when the model's prices are known."""


class UserMessage(TypedDict):
    role: Literal["user"]
    content: str
    timestamp: int
    images: NotRequired[list[ImageBlock]]
    """Images sent with the text, after it, in order."""
    typed: NotRequired[str]
    """What the user typed when ``content`` is its expansion (a ``/command``): clients
    show this, the model is sent ``content``."""


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: list[ContentBlock]
    stopReason: StopReason
    usage: Usage
    model: str
    timestamp: int
    errorMessage: NotRequired[str]
    api: NotRequired[str]
    errorKind: NotRequired[ErrorKind]
    """Structured class of an error reply (``overflow``, ``rate_limit``, ...)."""


class ToolResultMessage(TypedDict):
    role: Literal["toolResult"]
    toolCallId: str
    toolName: str
    content: str
    isError: bool
    timestamp: int
    images: NotRequired[list[ImageBlock]]
    """Images the tool returned (``read`` of an image file), after the text."""


Message = UserMessage | AssistantMessage | ToolResultMessage


def now_ms() -> int:
    """Wall-clock milliseconds since the epoch, the unit of every ``timestamp``."""
    return int(time.time() * 1000)


def empty_usage() -> Usage:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}


def user_message(
    text: str,
    timestamp: int | None = None,
    *,
    typed: str | None = None,
    images: Sequence[ImageBlock] = (),
) -> UserMessage:
    message: UserMessage = {
        "role": "user",
        "content": text,
        "timestamp": now_ms() if timestamp is None else timestamp,
    }
    if typed is not None:
        message["typed"] = typed
    if images:
        message["images"] = list(images)
    return message


def assistant_message(
    content: list[ContentBlock],
    *,
    stop_reason: StopReason = "stop",
    model: str = "",
    usage: Usage | None = None,
    error_message: str | None = None,
    timestamp: int | None = None,
) -> AssistantMessage:
    message: AssistantMessage = {
        "role": "assistant",
        "content": content,
        "stopReason": stop_reason,
        "usage": usage if usage is not None else empty_usage(),
        "model": model,
        "timestamp": now_ms() if timestamp is None else timestamp,
    }
    if error_message is not None:
        message["errorMessage"] = error_message
    return message


def tool_result(
    call_id: str,
    tool_name: str,
    content: str,
    *,
    is_error: bool = False,
    images: Sequence[ImageBlock] = (),
) -> ToolResultMessage:
    message: ToolResultMessage = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool_name,
        "content": wiretext.shown(content),  # a file name's raw byte is shown as \xNN
        "isError": is_error,
        "timestamp": now_ms(),
    }
    if images:
        message["images"] = list(images)
    return message


def images_of(message: Message) -> list[ImageBlock]:
    """The images a user message or tool result carries (none for a reply)."""
    if message["role"] == "assistant":
        return []
    return message.get("images", [])


def text_of(message: AssistantMessage) -> str:
    """The reply's visible text: its text blocks joined, thinking and calls left out."""
    return "".join(block["text"] for block in message["content"] if block["type"] == "text")


def tool_calls(message: Message) -> list[ToolCallBlock]:
    """The tool calls a reply holds, in order. The loop goes round iff this is non-empty."""
    if message["role"] != "assistant":
        return []
    return [block for block in message["content"] if block["type"] == "toolCall"]


def is_empty_failure(message: Message) -> bool:
    """A failed or aborted reply that produced nothing worth sending back to a model."""
    if message["role"] != "assistant" or message["stopReason"] not in ("error", "aborted"):
        return False
    for block in message["content"]:
        if block["type"] == "toolCall":
            return False
        if block["type"] == "text" and block["text"].strip():
            return False
    return True
