"""OpenAI-compatible Chat Completions (``api: "openai"``).

Written for every server that speaks this dialect, not for OpenAI alone: Ollama, vLLM,
LM Studio, llama.cpp's server, OpenRouter. So: any base URL; consecutive messages of
one role merged (some templates insist on alternation); tool results as ``tool``
messages with ``tool_call_id``; tool calls assembled by their ``index``, with an id
made up when the server sends none; reasoning read from ``reasoning_content`` or
``reasoning`` when a server streams it; usage requested with
``stream_options.include_usage`` and estimated (about four characters per token) when
the server sends none. Cached prompt tokens come from ``prompt_tokens_details``.
"""

from __future__ import annotations

import json
from typing import Any

from crank.agent.messages import Message, StopReason
from crank.agent.model import ModelRequest, StreamEvent

from .errors import classify
from .reply import ReplyBuilder
from .transport import StreamFailure, StreamingModel

_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "eos": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "stop",
}
CHARS_PER_TOKEN = 4


def _render_one(message: Message) -> dict[str, Any]:
    if message["role"] == "user":
        return {"role": "user", "content": message["content"]}
    if message["role"] == "toolResult":
        return {
            "role": "tool",
            "tool_call_id": message["toolCallId"],
            "content": message["content"],
        }
    text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
    calls = []
    for block in message["content"]:
        if block["type"] == "toolCall":
            args = block["arguments"]
            raw = args["_raw"] if set(args) == {"_raw"} and isinstance(args["_raw"], str) else None
            calls.append(
                {
                    "id": block["id"],
                    "type": "function",
                    "function": {
                        "name": block["name"],
                        "arguments": raw
                        if raw is not None
                        else json.dumps(args, ensure_ascii=False),
                    },
                }
            )
    rendered: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        rendered["tool_calls"] = calls
    return rendered


def render_messages(system: str, messages: list[Message]) -> list[dict[str, Any]]:
    """Chat messages, system first, consecutive user/assistant turns merged."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        item = _render_one(message)
        if item["role"] == "assistant" and item["content"] is None and "tool_calls" not in item:
            continue
        previous = out[-1] if out else None
        if previous is not None and previous["role"] == item["role"] == "user":
            previous["content"] = f"{previous['content']}\n\n{item['content']}"
        elif previous is not None and previous["role"] == item["role"] == "assistant":
            texts = [t for t in (previous["content"], item["content"]) if t]
            previous["content"] = "\n\n".join(texts) or None
            calls = previous.get("tool_calls", []) + item.get("tool_calls", [])
            if calls:
                previous["tool_calls"] = calls
        else:
            out.append(item)
    return out


class OpenAIModel(StreamingModel):
    api_name = "openai"

    def url(self) -> str:
        return f"{self.config.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self.config.api_key is not None:
            headers["authorization"] = f"Bearer {self.config.api_key.reveal()}"
        return headers

    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": render_messages(request.system, request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        limit = request.max_output_tokens or self.config.max_output_tokens
        if limit:
            hosted = self.config.base_url.startswith("https://api.openai.com")
            body["max_completion_tokens" if hosted else "max_tokens"] = limit
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": t["parameters"],
                    },
                }
                for t in request.tools
            ]
        return body

    def parser(self, builder: ReplyBuilder, request: ModelRequest, payload: bytes) -> OpenAIParser:
        return OpenAIParser(builder, estimated_input=len(payload) // CHARS_PER_TOKEN)


class OpenAIParser:
    """Turns chat-completion chunks into neutral events on a ``ReplyBuilder``."""

    def __init__(self, builder: ReplyBuilder, estimated_input: int) -> None:
        self.builder = builder
        self.complete = False
        self.stop_reason: StopReason = "stop"
        self._finished = False
        self._got_usage = False
        self._estimated_input = estimated_input
        self._calls: dict[int, int] = {}
        """The server's tool-call index -> our content index."""

    def feed(self, event: str, data: str) -> list[StreamEvent]:
        data = data.strip()
        if not data:
            return []
        if data == "[DONE]":
            self.complete = True
            return []
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as error:
            raise StreamFailure(
                classify(None, f"unreadable chunk ({error}): {data[:200]}", provider="openai")
            ) from error
        if not isinstance(chunk, dict):
            return []
        if "error" in chunk:
            raise StreamFailure(classify(None, chunk, provider="openai"))
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage(usage)
        events: list[StreamEvent] = []
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                index = self.builder.last_open("thinking")
                events.append(self.builder.thinking(index, reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:
                index = self.builder.last_open("text")
                events.append(self.builder.text(index, content))
            for call in delta.get("tool_calls") or ():
                events.extend(self._tool_call(call))
            reason = choice.get("finish_reason")
            if reason:
                self._finished = True
                self.stop_reason = _FINISH.get(reason, "stop")
        return events

    def _tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        position = call.get("index", len(self._calls))
        function = call.get("function") or {}
        events: list[StreamEvent] = []
        index = self._calls.get(position)
        if index is None:
            index, start = self.builder.open_tool(call.get("id"), function.get("name") or "")
            self._calls[position] = index
            events.append(start)
        elif function.get("name"):
            self.builder.name_tool(index, function["name"])
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            events.append(self.builder.arguments(index, arguments))
        elif isinstance(arguments, dict):
            events.append(self.builder.arguments(index, json.dumps(arguments)))
        return events

    def _usage(self, usage: dict[str, Any]) -> None:
        prompt = usage.get("prompt_tokens") or 0
        details = usage.get("prompt_tokens_details") or {}
        cached = (details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
        target = self.builder.usage
        target["input"] = max(0, int(prompt) - int(cached))
        target["cacheRead"] = int(cached)
        target["output"] = int(usage.get("completion_tokens") or 0)
        self._got_usage = True

    def finalize(self) -> None:
        if self.builder.has_tool_calls() and self.stop_reason == "stop":
            self.stop_reason = "toolUse"
        if not self._got_usage:
            self.builder.usage["input"] = self._estimated_input
            self.builder.usage["output"] = -(-self.builder.output_chars() // CHARS_PER_TOKEN)

    def ended_cleanly(self) -> bool:
        """``[DONE]``, or a finish reason from a server that never sends ``[DONE]``."""
        return self.complete or self._finished
