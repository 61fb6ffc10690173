"""Anthropic Messages API (``api: "anthropic"``): request rendering and stream parsing.

Rendering is deterministic: the same request always gives the same bytes, tools and
the system prompt first and in the caller's order, so the provider's prefix cache
hits. Cache breakpoints go on the system prompt, the last tool and the requested
message boundaries (default: the last two), never more than four in all; when marks
must be dropped, the latest ones are kept. A thinking block goes back with its
signature unchanged; one without a signature (from another provider) cannot be
verified by Anthropic and is left out of the request (the record keeps it). Images
go as base64 ``image`` blocks after the text of a user turn, and inside a
``tool_result``'s content after its text.
"""

from __future__ import annotations

import json
from typing import Any

from crank.agent.images import sendable
from crank.agent.messages import ImageBlock, Message, StopReason
from crank.agent.model import ModelRequest, StreamEvent

from .errors import classify
from .reply import ReplyBuilder
from .transport import StreamFailure, StreamingModel

MAX_CACHE_BREAKPOINTS = 4
API_VERSION = "2023-06-01"
_EPHEMERAL = {"type": "ephemeral"}
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "stop",
}


def _image(block: ImageBlock) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block["mimeType"], "data": block["data"]},
    }


def _blocks_of(message: Message, images: bool = True) -> tuple[str, list[dict[str, Any]]]:
    if message["role"] == "user":
        text, shown = sendable(message, images)
        return "user", [{"type": "text", "text": text}, *map(_image, shown)]
    if message["role"] == "toolResult":
        text, shown = sendable(message, images)
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message["toolCallId"],
            # Images go inside the result, after its text; a plain result stays a string.
            "content": [{"type": "text", "text": text}, *map(_image, shown)] if shown else text,
        }
        if message["isError"]:
            block["is_error"] = True
        return "user", [block]
    blocks: list[dict[str, Any]] = []
    for part in message["content"]:
        if part["type"] == "text":
            if part["text"]:
                blocks.append({"type": "text", "text": part["text"]})
        elif part["type"] == "thinking":
            if "redacted" in part:
                blocks.append({"type": "redacted_thinking", "data": part["redacted"]})
            elif "signature" in part:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": part["thinking"],
                        "signature": part["signature"],
                    }
                )
        else:
            arguments = part["arguments"]
            blocks.append(
                {"type": "tool_use", "id": part["id"], "name": part["name"], "input": arguments}
            )
    return "assistant", blocks


def render_messages(
    messages: list[Message], marks: tuple[int, ...], *, images: bool = True
) -> tuple[list[dict[str, Any]], int]:
    """Messages in Anthropic's shape, one role per turn, with cache marks placed.
    ``images``: whether the model takes them (else each becomes a placeholder line).

    Returns the rendered list and how many breakpoints were placed.
    """
    rendered: list[dict[str, Any]] = []
    where: dict[int, tuple[int, int]] = {}
    """Message index -> (turn, position of its last block in that turn)."""
    for index, message in enumerate(messages):
        role, blocks = _blocks_of(message, images)
        if not blocks:
            continue
        if rendered and rendered[-1]["role"] == role:
            rendered[-1]["content"].extend(blocks)
        else:
            rendered.append({"role": role, "content": blocks})
        where[index] = (len(rendered) - 1, len(rendered[-1]["content"]) - 1)
    placed = 0
    for index in marks:
        if index not in where:
            continue
        turn, last = where[index]
        for block in reversed(rendered[turn]["content"][: last + 1]):
            if block["type"] not in ("thinking", "redacted_thinking"):
                if "cache_control" not in block:
                    block["cache_control"] = dict(_EPHEMERAL)
                    placed += 1
                break
    return rendered, placed


def message_marks(request: ModelRequest, budget: int) -> tuple[int, ...]:
    """The message indices to mark: the request's, else the last two; the latest win."""
    count = len(request.messages)
    wanted = request.cache_marks or tuple(i for i in (count - 2, count - 1) if i >= 0)
    valid = sorted({i for i in wanted if 0 <= i < count})
    return tuple(valid[-budget:]) if budget > 0 else ()


class AnthropicModel(StreamingModel):
    api_name = "anthropic"

    def url(self) -> str:
        base = self.config.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def headers(self) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "anthropic-version": API_VERSION,
        }
        if self.config.api_key is not None:
            headers["x-api-key"] = self.config.api_key.reveal()
        return headers

    def body(self, request: ModelRequest) -> dict[str, Any]:
        budget = MAX_CACHE_BREAKPOINTS
        body: dict[str, Any] = {
            "model": self.config.model,
            "max_tokens": request.max_output_tokens or self.info.max_output_tokens,
            "stream": True,
        }
        if request.system:
            body["system"] = [
                {"type": "text", "text": request.system, "cache_control": dict(_EPHEMERAL)}
            ]
            budget -= 1
        if request.tools:
            tools = [
                {
                    "name": t["name"],
                    "description": t["description"],
                    "input_schema": t["parameters"],
                }
                for t in request.tools
            ]
            tools[-1]["cache_control"] = dict(_EPHEMERAL)
            budget -= 1
            body["tools"] = tools
        messages, _ = render_messages(
            request.messages, message_marks(request, budget), images=self.accepts_images
        )
        body["messages"] = messages
        if self.config.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.config.thinking_budget}
        return body

    def parser(
        self, builder: ReplyBuilder, request: ModelRequest, payload: bytes
    ) -> AnthropicParser:
        return AnthropicParser(builder)


class AnthropicParser:
    """Turns Anthropic's SSE events into neutral events on a ``ReplyBuilder``."""

    def __init__(self, builder: ReplyBuilder) -> None:
        self.builder = builder
        self.complete = False
        self.stop_reason: StopReason = "stop"
        self._index: dict[int, int] = {}
        """Anthropic block index -> our content index."""

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        if event == "ping" or not data:
            return []
        try:
            payload = json.loads(data)
        except json.JSONDecodeError as error:
            raise StreamFailure(
                classify(
                    None, f"unreadable event data ({error}): {data[:200]}", provider="anthropic"
                )
            ) from error
        kind = payload.get("type", event)
        builder = self.builder
        if kind == "content_block_delta":
            index = self._index.get(payload["index"])
            if index is None:
                return []
            delta = payload["delta"]
            delta_type = delta.get("type")
            if delta_type == "text_delta":
                return [builder.text(index, delta["text"])]
            if delta_type == "input_json_delta":
                return [builder.arguments(index, delta["partial_json"])]
            if delta_type == "thinking_delta":
                return [builder.thinking(index, delta["thinking"])]
            if delta_type == "signature_delta":
                builder.sign(index, delta["signature"])
            return []
        if kind == "content_block_start":
            block = payload["content_block"]
            block_type = block.get("type")
            if block_type == "tool_use":
                index, start = builder.open_tool(block.get("id"), block.get("name", ""))
                self._index[payload["index"]] = index
                return [start]
            if block_type == "redacted_thinking":
                self._index[payload["index"]] = builder.open_redacted(str(block.get("data", "")))
                return []
            if block_type in ("text", "thinking"):
                index = builder.open(block_type)
                self._index[payload["index"]] = index
                events: list[StreamEvent] = []
                initial = block.get(block_type, "")
                if initial:
                    events.append(
                        builder.text(index, initial)
                        if block_type == "text"
                        else builder.thinking(index, initial)
                    )
                if block.get("signature"):
                    builder.sign(index, block["signature"])
                return events
            return []
        if kind == "message_start":
            self._usage(payload.get("message", {}).get("usage", {}))
        elif kind == "message_delta":
            reason = payload.get("delta", {}).get("stop_reason")
            if reason:
                self.stop_reason = _STOP_REASONS.get(reason, "stop")
            self._usage(payload.get("usage", {}))
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            raise StreamFailure(classify(None, payload, provider="anthropic"))
        return []

    def _usage(self, usage: dict[str, Any]) -> None:
        target = self.builder.usage
        for ours, theirs in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cacheRead", "cache_read_input_tokens"),
            ("cacheWrite", "cache_creation_input_tokens"),
        ):
            value = usage.get(theirs)
            if isinstance(value, int):
                target[ours] = value  # type: ignore[literal-required]

    def finalize(self) -> None:
        return None

    def ended_cleanly(self) -> bool:
        return self.complete
