"""OpenAI-compatible Chat Completions (``api: "openai"``).

Written for every server that speaks this dialect, not for OpenAI alone: Ollama, vLLM,
LM Studio, llama.cpp's server, OpenRouter. So: any base URL; consecutive messages of
one role merged (some templates insist on alternation); tool results as ``tool``
messages with ``tool_call_id``; tool calls assembled by their ``index``, with an id
made up when the server sends none; reasoning read from ``reasoning_content`` or
``reasoning`` when a server streams it; usage requested with
``stream_options.include_usage`` and estimated (about four characters per token) when
the server sends none. Cached prompt tokens come from ``prompt_tokens_details``. Images go as ``image_url``
parts with a ``data:`` URL; a tool result's images, which a ``tool`` message cannot
hold, go in a user message right after the batch's results.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx

from crank.agent import wiretext
from crank.agent.images import sendable
from crank.agent.messages import AssistantMessage, ImageBlock, Message, StopReason
from crank.agent.model import AbortSignal, ModelRequest, NoticeKind, StreamEvent

from .catalog import known_models
from .config import ProviderConfig
from .errors import ProviderError, body_of, classify
from .reply import ReplyBuilder
from .served import ServedModel, context_window, offered, served_models, template_caps
from .transport import HOSTED_OPENAI, Parser, StreamFailure, StreamingModel
from .windows import WindowCache

_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "eos": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "stop",
}
CHARS_PER_TOKEN = 4
MIN_OUTPUT_TOKENS = 16
"""The least ``max_tokens`` sent, even for a request estimated to fill the window: the
estimate is rough, and the server's refusal (not a zero) is what says it is too long."""


def _image_part(block: ImageBlock) -> dict[str, Any]:
    return {
        "type": "image_url",
        "image_url": {"url": f"data:{block['mimeType']};base64,{block['data']}"},
    }


def _parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def tool_images_note(message: Message) -> str:
    """The text before the images of a tool result, sent as a user message of their own."""
    assert message["role"] == "toolResult"
    return f"The images returned by the {message['toolName']} call {message['toolCallId']}:"


def _render_one(message: Message, images: bool = True) -> dict[str, Any]:
    if message["role"] == "user":
        text, shown = sendable(message, images)
        if not shown:
            return {"role": "user", "content": text}
        return {"role": "user", "content": [*_parts(text), *map(_image_part, shown)]}
    if message["role"] == "toolResult":
        text, _ = sendable(message, images)
        return {
            "role": "tool",
            "tool_call_id": message["toolCallId"],
            "content": text,
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
                        "arguments": raw if raw is not None else wiretext.dumps_text(args),
                    },
                }
            )
    # A reply of calls alone goes with content "" rather than null: llama-cpp-python's
    # server refuses null there (HTTP 500, a validation error) and its tool template
    # fails on a missing content; "" is what the OpenAI reference and the others take.
    rendered: dict[str, Any] = {"role": "assistant", "content": text or ("" if calls else None)}
    if calls:
        rendered["tool_calls"] = calls
    return rendered


def _tool_images(message: Message, images: bool) -> list[dict[str, Any]]:
    """The parts of a user message carrying a tool result's images (Chat Completions
    takes only text in a ``tool`` message)."""
    if message["role"] != "toolResult":
        return []
    _, shown = sendable(message, images)
    if not shown:
        return []
    return [{"type": "text", "text": tool_images_note(message)}, *map(_image_part, shown)]


def render_messages(
    system: str, messages: list[Message], *, images: bool = True
) -> list[dict[str, Any]]:
    """Chat messages, system first, consecutive user/assistant turns merged. A tool
    result's images follow the batch's last ``tool`` message as one user message
    (a ``tool`` message holds text only, and nothing may stand between the results of
    one batch). ``images``: whether the model takes them (else placeholder lines)."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    pending: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        item = _render_one(message, images)
        if pending and item["role"] != "tool":
            items.append({"role": "user", "content": pending})
            pending = []
        items.append(item)
        pending.extend(_tool_images(message, images))
    if pending:
        items.append({"role": "user", "content": pending})
    for item in items:
        if item["role"] == "assistant" and item["content"] is None and "tool_calls" not in item:
            continue
        previous = out[-1] if out else None
        if previous is not None and previous["role"] == item["role"] == "user":
            if isinstance(previous["content"], str) and isinstance(item["content"], str):
                previous["content"] = f"{previous['content']}\n\n{item['content']}"
            else:
                previous["content"] = _parts(previous["content"]) + _parts(item["content"])
        elif previous is not None and previous["role"] == item["role"] == "assistant":
            texts = [t for t in (previous["content"], item["content"]) if t]
            calls = previous.get("tool_calls", []) + item.get("tool_calls", [])
            previous["content"] = "\n\n".join(texts) or ("" if calls else None)
            if calls:
                previous["tool_calls"] = calls
        else:
            out.append(item)
    return out


class OpenAIModel(StreamingModel):
    api_name = "openai"

    def __init__(
        self, config: ProviderConfig, *, windows: WindowCache | None = None, **kwargs: Any
    ) -> None:
        super().__init__(config, **kwargs)
        self._changed: set[str] = set()
        """Changes made to the request for this server (each made once): see adapt."""
        self._served: list[ServedModel] | None = None
        self._discovered = False
        self._discovering = asyncio.Lock()
        """One discovery at a time: two callers at once (ACP's session/new asks the
        models and the window together) would each ask the server and each say a
        template that cannot call tools."""
        self._sent_limit = False
        self.windows = windows
        """Where windows learned from this server are kept (None: not kept)."""
        self.notices: list[tuple[NoticeKind, str]] = []
        """``(kind, message)`` for the chat, taken by ``crank.agent.model.take_notices``."""
        self._tools_judged = False
        if self._asks_window and windows is not None:
            cached = windows.get(config.base_url, config.model)
            if cached is not None:
                self.set_context_window(cached)

    @property
    def _asks_window(self) -> bool:
        """Whether the window is the server's to say (not configured, not catalogued)."""
        return not self.hosted and self.config.context_window is None and self.id not in _CATALOGUED

    def _remember_window(self, window: int) -> None:
        """The server's window: used from now on, and kept for this (base URL, model),
        and for the one model the server serves when that has another name
        (llama-cpp-python serves its one model under any name)."""
        self.set_context_window(window)
        if self.windows is None:
            return
        self.windows.put(self.config.base_url, self.id, window)
        served = self._served or []
        if len(served) == 1 and served[0].id != self.id and served[0].context_window is None:
            self.windows.put(self.config.base_url, served[0].id, window)

    def cached_window(self, model: str) -> int | None:
        """The window kept for another model of this server (the picker's figures)."""
        return self.windows.get(self.config.base_url, model) if self.windows else None

    @property
    def hosted(self) -> bool:
        return self.config.base_url.startswith(HOSTED_OPENAI)

    def url(self) -> str:
        return f"{self.config.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self.config.api_key is not None:
            headers["authorization"] = f"Bearer {self.config.api_key.reveal()}"
        return headers

    def _limit_field(self) -> str:
        preferred = "max_completion_tokens" if self.hosted else "max_tokens"
        if "limit_field" in self._changed:
            return "max_tokens" if preferred == "max_completion_tokens" else "max_completion_tokens"
        return preferred

    def body(self, request: ModelRequest, *, stream: bool = True) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": render_messages(
                request.system, request.messages, images=self.accepts_images
            ),
            "stream": stream,
        }
        if stream and "stream_options" not in self._changed:
            body["stream_options"] = {"include_usage": True}
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
            if "tool_choice" not in self._changed:
                # llama-cpp-python offers tools to the model only when a request names
                # a tool_choice; "auto" is every other server's default anyway.
                body["tool_choice"] = "auto"
        body[self._limit_field()] = self.output_limit(request, body)
        self._sent_limit = True
        return body

    def output_limit(self, request: ModelRequest, body: dict[str, Any]) -> int:
        """``max_tokens`` for this request, always sent: the asked-for limit (the
        request's, else the configuration's, else the model's known output limit),
        bounded by the window minus this request's estimated size, so one rambling
        reply cannot fill the window (and then cost a compaction on the next prompt)."""
        wanted = request.max_output_tokens or self.config.max_output_tokens
        wanted = min(wanted or self.info.max_output_tokens, self.info.max_output_tokens)
        estimate = len(json.dumps(body, ensure_ascii=False)) // CHARS_PER_TOKEN
        room = self.context_window - estimate
        return max(MIN_OUTPUT_TOKENS, min(wanted, room))

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        async for event in super().stream(request, signal):
            if event["type"] == "done" and request.tools:
                self._judge_tools(request, event["message"])
            yield event

    def _judge_tools(self, request: ModelRequest, message: AssistantMessage) -> None:
        """The first whole reply to a request that offered tools: a server that ignores
        tools answers in prose that quotes a tool name or holds a code block, and calls
        nothing. Judged once per model, and said once (``notices``), never guessed."""
        if self._tools_judged or message["stopReason"] in ("error", "aborted"):
            return
        self._tools_judged = True
        if any(block["type"] == "toolCall" for block in message["content"]):
            return
        text = "".join(b["text"] for b in message["content"] if b["type"] == "text")
        names = [re.escape(tool["name"]) for tool in request.tools]
        quoted = re.search(rf"```|[`\"']({'|'.join(names)})[`\"']|\b({'|'.join(names)})\s*\(", text)
        if quoted:
            self._cannot_call_tools(
                "offered tools, it answered in text that names a tool or shows code, and "
                "called none (llama-cpp-python: start it with --chat_format "
                "chatml-function-calling)"
            )

    def _cannot_call_tools(self, why: str) -> None:
        self.notices.append(
            (
                "tools_unsupported",
                f"this server cannot call tools: the agent can only talk; see "
                f"docs/vendors.md ({self.config.base_url}: {why})",
            )
        )

    def parser(self, builder: ReplyBuilder, request: ModelRequest, payload: bytes) -> OpenAIParser:
        return OpenAIParser(builder, estimated_input=len(payload) // CHARS_PER_TOKEN)

    # -- what real servers need ---------------------------------------------------------

    def adapt(self, error: ProviderError) -> bool:
        """A 400/422 that names a field this request sent: ``stream_options`` (servers
        that refuse it; usage is then estimated) or the output-limit field (``max_tokens``
        where ``max_completion_tokens`` is wanted, or the other way round)."""
        if error.kind != "invalid_request" or error.status not in (400, 422):
            return False
        text = error.message.lower()
        if "stream_options" in text and "stream_options" not in self._changed:
            self._changed.add("stream_options")
            return True
        if self._sent_limit and self._limit_field() in text and "limit_field" not in self._changed:
            self._changed.add("limit_field")
            return True
        if "tool" in text and "choice" in text and "tool_choice" not in self._changed:
            # vLLM without --enable-auto-tool-choice: '"auto" tool choice requires ...'
            self._changed.add("tool_choice")
            self._tools_judged = True
            self._cannot_call_tools(f"it refused tool_choice: {error.message[:200]}")
            return True
        return False

    async def unstreamed(
        self, client: httpx.AsyncClient, request: ModelRequest, parser: Parser
    ) -> list[StreamEvent] | ProviderError | None:
        """llama-cpp-python's server answers a request it fails on (the prompt past its
        ``n_ctx``; tools with ``tool_choice: auto``) with an empty 200 stream and
        keeps the reason in its log. Asked again without streaming it says why
        (a 400 with the context size) or answers whole."""
        if not isinstance(parser, OpenAIParser) or parser.chunks:
            return None
        payload = wiretext.dumps(self.body(request, stream=False))
        headers = {**self.headers(), "accept": "application/json"}
        response = await client.post(self.url(), content=payload, headers=headers)
        if response.status_code >= 400:
            error = classify(response.status_code, body_of(response.content), provider=self.api)
            return await self.explain(client, error)
        data = body_of(response.content)
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
            return ProviderError(
                "server",
                "the server closed the stream without a reply, and asked again "
                f"without streaming it answered {str(data)[:200]!r}",
            )
        events = parser.feed_chunk(data)
        parser.complete = True
        if request.tools:
            # Only its function-calling chat formats fail to stream a request with
            # tools: this server handles tools, whatever this one reply holds.
            self._tools_judged = True
        return events

    async def explain(self, client: httpx.AsyncClient, error: ProviderError) -> ProviderError:
        """A context size in an overflow message is the server's real window, learned
        for the next request; a wrong model name gets the list of what is served."""
        if error.kind == "overflow":
            self._learn_window(error.message)
            return error
        text = error.message.lower()
        unknown_model = error.status == 404 or (
            "model" in text and any(p in text for p in ("not found", "does not exist", "no such"))
        )
        if not unknown_model:
            return error
        listed = await served_models(client, self.config.base_url, self.headers())
        if not listed:
            return error
        return replace(
            error,
            message=f"{error.message} (the server at {self.config.base_url} offers: "
            f"{offered(listed)}; set provider.model or CRANK_MODEL to one of them)",
        )

    def _learn_window(self, message: str) -> None:
        if self.config.context_window is not None:
            return
        found = _WINDOW_IN_MESSAGE.search(message)
        if found:
            self._remember_window(int(found.group(1)))

    async def discover(self, *, refresh: bool = False) -> list[ServedModel] | None:
        """Ask the server what it serves (again when ``refresh``: a local server's
        models come and go) and, once, the window it runs this model with. A
        configured ``contextWindow`` wins; OpenAI itself is never asked."""
        if self.hosted:
            return None
        async with self._discovering:
            return await self._discover(refresh)

    async def _discover(self, refresh: bool) -> list[ServedModel] | None:
        if self._discovered and not refresh:
            return self._served
        async with self._clients.lease() as client:
            self._served = await served_models(client, self.config.base_url, self.headers())
            if not self._discovered and self._asks_window:
                window = await context_window(
                    client, self.config.base_url, self.headers(), self.id, self._served
                )
                if window is not None:
                    self._remember_window(window)
            if not self._discovered:
                caps = await template_caps(client, self.config.base_url, self.headers())
                if caps is not None and caps.get("supports_tool_calls") is False:
                    self._tools_judged = True
                    self._cannot_call_tools(
                        "its chat template has no tool support (llama-server: start it with "
                        "--jinja and a --chat-template-file that has)"
                    )
        self._discovered = True
        return self._served


_WINDOW_IN_MESSAGE = re.compile(
    r"(?:maximum context length is|context window of|context size of|n_ctx[=: ]+|"
    r"context length of)\s*(\d+)",
    re.IGNORECASE,
)
_CATALOGUED: frozenset[str] = frozenset(mid for api, mid, _ in known_models() if api == "openai")


class OpenAIParser:
    """Turns chat-completion chunks into neutral events on a ``ReplyBuilder``.

    Read for what servers really send, not for the reference alone (fixtures under
    ``tests/vendors/fixtures/``): a tool call is found by its ``index``, else by its
    ``id``, else it continues the call before it; a new id at a known index is a new
    call (vLLM and Ollama put every call at index 0); a name repeated on every chunk
    (llama-cpp-python) is one name, not its concatenation; arguments sent as an object
    are that object's JSON; the legacy ``function_call`` is read only from a server
    that sends no ``tool_calls`` (llama-cpp-python sends both, and the legacy one's
    name can be garbage); only the first choice counts; a usage chunk may come with
    empty ``choices``.
    """

    def __init__(self, builder: ReplyBuilder, estimated_input: int) -> None:
        self.builder = builder
        self.complete = False
        self.stop_reason: StopReason = "stop"
        self.chunks = 0
        """Chunks read so far: a stream that closes with none tells nothing at all."""
        self._finished = False
        self._got_usage = False
        self._estimated_input = estimated_input
        self._calls: dict[tuple[str, Any], int] = {}
        """Where the server says a call is (its index, else its id) -> content index."""
        self._last_call: int | None = None
        self._server_ids: set[int] = set()
        """Content indexes of calls whose id the server sent (not made up here)."""
        self._saw_tool_calls = False

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
        self.chunks += 1
        if "error" in chunk:
            raise StreamFailure(classify(None, chunk, provider="openai"))
        return self.feed_chunk(chunk)

    def feed_chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        """One chunk (a streamed ``delta``, or a whole non-streamed ``message``)."""
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage(usage)
        events: list[StreamEvent] = []
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue  # n > 1 is never asked for; a second choice is not this reply
            delta = choice.get("delta") or choice.get("message") or {}
            if isinstance(delta, dict):
                events.extend(self._delta(delta))
            reason = choice.get("finish_reason")
            if reason:
                self._finished = True
                self.stop_reason = _FINISH.get(reason, "stop")
        return events

    def _delta(self, delta: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            index = self.builder.last_open("thinking")
            events.append(self.builder.thinking(index, reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            index = self.builder.last_open("text")
            events.append(self.builder.text(index, content))
        calls = delta.get("tool_calls")
        if isinstance(calls, list) and calls:
            self._saw_tool_calls = True
            for position, call in enumerate(calls):
                if isinstance(call, dict):
                    events.extend(self._tool_call(call, position if len(calls) > 1 else None))
        legacy = delta.get("function_call")
        if isinstance(legacy, dict) and not self._saw_tool_calls:
            events.extend(self._tool_call({"key": "function_call", "function": legacy}, None))
        return events

    def _where(self, call: dict[str, Any], position: int | None) -> tuple[str, Any] | None:
        """The key a call is known by, or None for "the call before this one"."""
        if "key" in call:
            return ("legacy", call["key"])
        if isinstance(call.get("index"), int):
            return ("index", call["index"])
        if isinstance(call.get("id"), str) and call["id"]:
            return ("id", call["id"])
        if position is not None:
            return ("position", position)
        return None

    def _tool_call(self, call: dict[str, Any], position: int | None) -> list[StreamEvent]:
        function = call.get("function") or {}
        if not isinstance(function, dict):
            function = {}
        raw_name = function.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        where = self._where(call, position)
        index = self._calls.get(where) if where is not None else self._last_call
        raw_id = call.get("id")
        call_id = raw_id if isinstance(raw_id, str) and raw_id else None
        if where is None and index is not None and name and self.builder.tool_done(index):
            index = None  # no index and no id, a name, and the call before is whole: a new one
        elif (
            index is not None
            and call_id
            and index in self._server_ids
            and self.builder.blocks[index].id != call_id
        ):
            index = None  # vLLM, Ollama: every call at index 0, each with its own id
        events: list[StreamEvent] = []
        if index is None:
            index, start = self.builder.open_tool(call_id, name)
            if call_id:
                self._server_ids.add(index)
            if where is not None:
                self._calls[where] = index
            events.append(start)
        elif name:
            self.builder.name_tool(index, name)
        self._last_call = index
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            events.append(self.builder.arguments(index, arguments))
        elif isinstance(arguments, dict):
            whole = json.dumps(arguments, ensure_ascii=False)
            delta = self.builder.whole_arguments(index, whole)
            if delta is not None:
                events.append(delta)
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
        """The stop reason follows the content where they disagree: calls mean
        ``toolUse`` (a ``stop`` beside calls, from Ollama and others), and a
        ``tool_calls`` finish with no call in it is a plain ``stop``."""
        if self.builder.has_tool_calls() and self.stop_reason == "stop":
            self.stop_reason = "toolUse"
        elif not self.builder.has_tool_calls() and self.stop_reason == "toolUse":
            self.stop_reason = "stop"
        if not self._got_usage:
            self.builder.usage["input"] = self._estimated_input
            self.builder.usage["output"] = -(-self.builder.output_chars() // CHARS_PER_TOKEN)

    @property
    def measured(self) -> bool:
        """Whether the usage is the server's own count (else an estimate)."""
        return self._got_usage

    def ended_cleanly(self) -> bool:
        """``[DONE]``, or a finish reason from a server that never sends ``[DONE]``."""
        return self.complete or self._finished
