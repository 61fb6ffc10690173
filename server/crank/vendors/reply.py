"""Assembling one streamed reply: blocks grow by appending, events stay small.

Every delta becomes one small event and one append to a list of string parts; the
finished message is joined once at the end. Nothing is copied per delta, so a reply of
n deltas costs O(n), however long it gets.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from crank.agent.messages import (
    AssistantMessage,
    ContentBlock,
    StopReason,
    Usage,
    empty_usage,
    now_ms,
)
from crank.agent.model import TextDelta, ThinkingDelta, ToolCallDelta, ToolCallStart

from .errors import ProviderError


@dataclass
class _Block:
    type: Literal["text", "thinking", "toolCall"]
    parts: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    signature: list[str] = field(default_factory=list)
    redacted: str | None = None


def make_call_id() -> str:
    """An id for a tool call the server sent without one (some local servers do)."""
    return f"call_{uuid.uuid4().hex[:16]}"


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool-call arguments from their JSON text; bad JSON is kept visibly as ``_raw``.

    The tool boundary validates arguments against the schema, so ``{"_raw": ...}``
    reaches the model as a clear error naming what it sent rather than vanishing.
    """
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {"_raw": raw}
    return value if isinstance(value, dict) else {"_raw": raw}


class ReplyBuilder:
    """The reply under construction, one block list in final ``content`` order."""

    def __init__(self, api: str, model: str) -> None:
        self.api = api
        self.model = model
        self.blocks: list[_Block] = []
        self.usage: Usage = empty_usage()
        self.streamed = False
        """True once any content event was produced: from then on, no retry."""

    def open(self, kind: Literal["text", "thinking"]) -> int:
        self.blocks.append(_Block(kind))
        return len(self.blocks) - 1

    def open_redacted(self, data: str) -> int:
        """A reasoning block the provider encrypted: kept whole, to be sent back as is."""
        self.streamed = True
        self.blocks.append(_Block("thinking", redacted=data))
        return len(self.blocks) - 1

    def open_tool(self, call_id: str | None, name: str) -> tuple[int, ToolCallStart]:
        self.streamed = True
        block = _Block("toolCall", id=call_id or make_call_id(), name=name)
        self.blocks.append(block)
        index = len(self.blocks) - 1
        return index, {
            "type": "toolcall_start",
            "contentIndex": index,
            "id": block.id,
            "name": name,
        }

    def last_open(self, kind: Literal["text", "thinking"]) -> int:
        """The index of the last block if it is of ``kind``, else a new block's."""
        if self.blocks and self.blocks[-1].type == kind:
            return len(self.blocks) - 1
        return self.open(kind)

    def text(self, index: int, text: str) -> TextDelta:
        self.streamed = True
        self.blocks[index].parts.append(text)
        return {"type": "text_delta", "contentIndex": index, "text": text}

    def thinking(self, index: int, text: str) -> ThinkingDelta:
        self.streamed = True
        self.blocks[index].parts.append(text)
        return {"type": "thinking_delta", "contentIndex": index, "text": text}

    def arguments(self, index: int, text: str) -> ToolCallDelta:
        self.streamed = True
        self.blocks[index].parts.append(text)
        return {"type": "toolcall_delta", "contentIndex": index, "text": text}

    def sign(self, index: int, signature: str) -> None:
        self.blocks[index].signature.append(signature)

    def name_tool(self, index: int, name: str) -> None:
        """A name seen again for a call that has one.

        OpenAI sends a name once; llama-cpp-python repeats it whole on every chunk,
        others send it cumulatively. Only a true fragment (neither the name so far
        nor a longer version of it) is appended.
        """
        block = self.blocks[index]
        if name.startswith(block.name):
            block.name = name  # the same name again, or a longer version of it
        else:
            block.name += name

    def tool_done(self, index: int) -> bool:
        """Whether a call's arguments so far already form a whole JSON value."""
        raw = "".join(self.blocks[index].parts)
        if not raw.strip():
            return False
        try:
            json.loads(raw)
        except json.JSONDecodeError:
            return False
        return True

    def whole_arguments(self, index: int, text: str) -> ToolCallDelta | None:
        """Arguments a server sent whole (as an object): the call's arguments become
        exactly ``text``. A delta only when nothing came before; a repeat is dropped;
        anything else replaces what came before without an event."""
        block = self.blocks[index]
        joined = "".join(block.parts)
        if joined == text:
            return None
        if not joined:
            return self.arguments(index, text)
        block.parts = [text]
        return None

    def has_tool_calls(self) -> bool:
        return any(block.type == "toolCall" for block in self.blocks)

    def output_chars(self) -> int:
        return sum(len(part) for block in self.blocks for part in block.parts)

    def content(self) -> list[ContentBlock]:
        out: list[ContentBlock] = []
        for block in self.blocks:
            joined = "".join(block.parts)
            if block.type == "text":
                out.append({"type": "text", "text": joined})
            elif block.type == "thinking":
                if block.redacted is not None:
                    out.append({"type": "thinking", "thinking": "", "redacted": block.redacted})
                elif block.signature:
                    out.append(
                        {
                            "type": "thinking",
                            "thinking": joined,
                            "signature": "".join(block.signature),
                        }
                    )
                else:
                    out.append({"type": "thinking", "thinking": joined})
            else:
                out.append(
                    {
                        "type": "toolCall",
                        "id": block.id,
                        "name": block.name,
                        "arguments": parse_arguments(joined),
                    }
                )
        return out

    def finish(
        self, stop_reason: StopReason, error: ProviderError | None = None, note: str | None = None
    ) -> AssistantMessage:
        message: AssistantMessage = {
            "role": "assistant",
            "content": self.content(),
            "stopReason": "error" if error is not None else stop_reason,
            "usage": self.usage,
            "model": self.model,
            "timestamp": now_ms(),
            "api": self.api,
        }
        if error is not None:
            message["errorMessage"] = error.message
            message["errorKind"] = error.kind
        elif note is not None:
            message["errorMessage"] = note
        return message
