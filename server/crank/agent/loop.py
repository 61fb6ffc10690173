"""The loop: a model call in a while loop, as an async generator of events.

It goes round iff the reply holds tool calls (principle 1); a stop is written into the
record as an assistant message, never raised (principle 3); every message is appended
to the record before its ``message_end`` is yielded (principle 4). Event names and
fields are those of docs/protocol.md, so a frontend can forward them unchanged.

Abort is delivered through the ``AbortSignal``. The model stream and each tool run in a
task of their own that the loop cancels, so a silent stream or a stuck tool stops at
once; nothing polls. The loop's own generator is never cancelled by abort, which is what
lets it record the partial reply and close every pair of events it opened.

Streaming cost is linear: deltas are kept as lists of chunks and joined once; an update
event carries only its delta, never a copy of the message so far.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import InitVar, dataclass, field
from typing import Any

from . import wiretext
from .events import Delta, DeltaKind, Event, MessageEnd, ToolOutcome
from .messages import (
    AssistantMessage,
    ContentBlock,
    Message,
    StopReason,
    ToolCallBlock,
    ToolResultMessage,
    UserMessage,
    assistant_message,
    tool_calls,
    tool_result,
)
from .model import (
    AbortSignal,
    Model,
    ModelRequest,
    TextDelta,
    ThinkingDelta,
    ToolCallDelta,
    ToolCallStart,
    ToolSpec,
)
from .tools import Tool, run_tool, spec_of
from .view import GrowingView


@dataclass(frozen=True)
class RunPrompt:
    """What a run tells the model besides the transcript: the system prompt and the
    tool specs, captured once when the run starts and sent unchanged in every request
    of that run (principle 9). A prompt rebuilt mid-run is the next run's."""

    system: str
    tools: tuple[ToolSpec, ...]

    @classmethod
    def of(cls, system: str, tools: Sequence[Tool]) -> RunPrompt:
        return cls(system, tuple(spec_of(tool) for tool in tools))


BuildRequest = Callable[[Sequence[Message], RunPrompt], Awaitable[ModelRequest]]
"""Turns the record into the request, given the run's prompt (view, policies, marks)."""
ABORTED_TEXT = "Aborted by the user."
_BLOCK_OF: dict[str, DeltaKind] = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "toolcall_delta": "toolCall",
}


@dataclass
class LoopConfig:
    """Everything one run needs, fixed for the run's whole length (principle 9)."""

    model: Model
    system: str
    tools: Sequence[Tool] = ()
    prompt: RunPrompt = field(init=False)
    """``system`` and the tools' specs: what every request of the run sends. The
    Harness hands over the prompt its run captured (``captured``); a loop driven
    without one computes it here, once."""
    max_turns: int | None = None
    build_request: BuildRequest | None = None
    """Turns the record into a request (view, policies, cache marks). Default: the view."""
    take_steering: Callable[[], list[UserMessage]] = field(default=lambda: [])
    take_follow_up: Callable[[], list[UserMessage]] = field(default=lambda: [])
    before_request: Callable[[], Awaitable[None]] | None = None
    """Awaited before every model request, which is always a safe point: the record ends
    with a user message or a fully answered tool batch (e.g. compaction)."""
    recover_overflow: Callable[[], Awaitable[bool]] | None = None
    """Called once per run when a request is refused as a context overflow; True if it
    made room (e.g. compacted), and the turn is then tried again, once."""
    captured: InitVar[RunPrompt | None] = None

    def __post_init__(self, captured: RunPrompt | None) -> None:
        self.tools = tuple(self.tools)
        self.prompt = captured if captured is not None else RunPrompt.of(self.system, self.tools)


class _Feed:
    """Items produced by a side task, and one wake-up for "items, done or aborted"."""

    def __init__(self, signal: AbortSignal) -> None:
        self.items: deque[Any] = deque()
        self.wake = asyncio.Event()
        self._remove = signal.on_abort(self.wake.set)

    def push(self, item: Any) -> None:
        self.items.append(item)
        self.wake.set()

    def watch(self, task: asyncio.Task[Any]) -> None:
        task.add_done_callback(lambda _: self.wake.set())

    async def wait(self) -> None:
        await self.wake.wait()
        self.wake.clear()

    async def follow(
        self, task: asyncio.Task[Any], signal: AbortSignal
    ) -> AsyncGenerator[Any, None]:
        """Yield the task's items as they come until it is done; on abort, cancel it
        (and still yield what it had produced). Closing early cancels the task too."""
        self.watch(task)
        try:
            while True:
                while self.items:
                    yield self.items.popleft()
                if task.done():
                    return
                if signal.aborted:
                    await _stop_task(task)
                    continue
                await self.wait()
        finally:
            self._remove()
            await _stop_task(task)


async def _stop_task(task: asyncio.Task[Any]) -> None:
    if not task.done():
        task.cancel()
    await asyncio.wait([task])


def own_call_id(provider_id: Any, taken: set[str]) -> str:
    """Crank's id for a tool call: the provider's own when it is a fresh, non-empty
    string, else ``<id>_<n>`` (``call_<n>`` for a missing one), the first not taken
    from n = the number of ids taken.
    A provider's id is unique only within one reply (some send ``call_0`` every turn,
    some none): the record, events and session entries carry this one, unique in the
    transcript, so no result is ever taken for another call's. Adds it to ``taken``."""
    fresh = isinstance(provider_id, str) and provider_id and provider_id not in taken
    base: str = provider_id if isinstance(provider_id, str) and provider_id else "call"
    chosen: str | None = base if fresh else None
    number = len(taken)  # usually free at once: no search through every earlier reuse
    while chosen is None:
        candidate = f"{base}_{number}"
        chosen = candidate if candidate not in taken else None
        number += 1
    taken.add(chosen)
    return chosen


def _with_own_ids(reply: AssistantMessage, own: list[str], taken: set[str]) -> AssistantMessage:
    """``reply`` with its tool calls under Crank's ids: the k-th call takes the id its
    ``toolcall_start`` was announced with (``own[k]``), a call never announced a new one."""
    content: list[ContentBlock] = []
    index = 0
    changed = False
    for block in reply["content"]:
        if block["type"] == "toolCall":
            call_id = own[index] if index < len(own) else own_call_id(block.get("id"), taken)
            index += 1
            if call_id != block.get("id"):
                block = {**block, "id": call_id}
                changed = True
        content.append(block)
    return {**reply, "content": content} if changed else reply


class _Partial:
    """A reply under construction from deltas, for when no final message arrives."""

    def __init__(self, model_id: str, taken: set[str]) -> None:
        self.model_id = model_id
        self.blocks: dict[int, dict[str, Any]] = {}
        self.taken = taken
        self.own: list[str] = []
        """Crank's ids of the calls announced so far, in order."""

    def apply(self, event: TextDelta | ThinkingDelta | ToolCallStart | ToolCallDelta) -> Delta:
        index = event["contentIndex"]
        if event["type"] == "toolcall_start":
            call_id = own_call_id(event["id"], self.taken)
            self.own.append(call_id)
            self.blocks[index] = {
                "type": "toolCall",
                "chunks": [],
                "id": call_id,
                "name": event["name"],
            }
            return {
                "kind": "toolCall",
                "contentIndex": index,
                "text": "",
                "toolCallId": call_id,
                "toolName": event["name"],
            }
        block_type = _BLOCK_OF[event["type"]]
        block = self.blocks.setdefault(index, {"type": block_type, "chunks": []})
        block["chunks"].append(event["text"])
        return {"kind": block_type, "contentIndex": index, "text": event["text"]}

    def finish(self, stop_reason: StopReason, error_message: str) -> AssistantMessage:
        content: list[ContentBlock] = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            joined = "".join(block["chunks"])
            if block["type"] == "text":
                content.append({"type": "text", "text": joined})
            elif block["type"] == "thinking":
                content.append({"type": "thinking", "thinking": joined})
            else:
                try:
                    arguments = json.loads(joined) if joined else {}
                except json.JSONDecodeError:
                    arguments = {}
                if not isinstance(arguments, dict):
                    arguments = {}
                content.append(
                    {
                        "type": "toolCall",
                        "id": block.get("id", f"partial_{index}"),
                        "name": block.get("name", ""),
                        "arguments": arguments,
                    }
                )
        return assistant_message(
            content, stop_reason=stop_reason, model=self.model_id, error_message=error_message
        )


def _announce(record: list[Message], message: Message) -> list[MessageEnd]:
    record.append(message)
    return [{"type": "message_end", "message": message}]


def _announce_together(
    record: list[Message], messages: Sequence[Message], *, first_started: bool = False
) -> list[Event]:
    """Messages that complete at the same moment: all go into the record before the
    first one's ``message_end``, so a saver can write them with one ``fsync``
    (``Harness.messages_after``); the events are the same pairs, in the same order, as
    announcing them one by one. ``first_started``: the first one's ``message_start``
    has already gone out (a reply's placeholder)."""
    record.extend(messages)
    events: list[Event] = []
    for number, message in enumerate(messages):
        if number or not first_started:
            events.append({"type": "message_start", "message": message})
        events.append({"type": "message_end", "message": message})
    return events


class PlainRequests:
    """The request with no policies, for one transcript that grows turn by turn: the
    repaired view (``build_view``'s, from a ``GrowingView``) under the run's prompt, so a
    turn costs what was added since the last one, not the whole record again (a run of
    2,000 tool calls spent 8x more per turn at its end than at its start). A ``Harness``
    keeps one across its runs; ``agent_loop`` alone makes one per run."""

    def __init__(self) -> None:
        self._view = GrowingView()

    async def __call__(self, record: Sequence[Message], prompt: RunPrompt) -> ModelRequest:
        messages, _ = self._view.repair(record)
        return ModelRequest(system=prompt.system, messages=messages, tools=list(prompt.tools))


async def agent_loop(
    record: list[Message],
    new_messages: Sequence[Message],
    config: LoopConfig,
    signal: AbortSignal,
) -> AsyncGenerator[Event, None]:
    """Run until the model stops calling tools, an error, ``max_turns`` or an abort.

    ``record`` is the caller's transcript and is appended to in place. ``new_messages``
    (the prompt; empty for a continue) are added first. Yields ``agent_start`` first and
    ``agent_end`` last; ``agent_settled`` is the Harness's to send.
    """
    yield {"type": "agent_start"}
    for event in _announce_together(record, new_messages):
        yield event

    build = config.build_request or PlainRequests()
    taken = {call["id"] for message in record for call in tool_calls(message)}
    turn = 0
    recovered = False
    stop_reason: StopReason = "stop"
    while True:
        if signal.aborted:
            stop_reason = "aborted"
            break
        if config.max_turns is not None and turn >= config.max_turns:
            notice = assistant_message(
                [],
                stop_reason="error",
                model=config.model.id,
                error_message=f"Stopped after {config.max_turns} turns (max_turns); the task may be unfinished.",
            )
            yield {"type": "message_start", "message": notice}
            for event in _announce(record, notice):
                yield event
            stop_reason = "error"
            break
        if config.before_request is not None:
            await config.before_request()
        turn += 1
        yield {"type": "turn_start", "turn": turn}

        request = await build(record, config.prompt)
        reply: AssistantMessage | None = None
        partial = _Partial(config.model.id, taken)
        feed = _Feed(signal)

        async def pump(request: ModelRequest = request, feed: _Feed = feed) -> None:
            async for item in config.model.stream(request, signal):
                feed.push(item)

        task = asyncio.create_task(pump())
        placeholder = assistant_message([], model=config.model.id)
        yield {"type": "message_start", "message": placeholder}
        async with aclosing(feed.follow(task, signal)) as items:
            async for item in items:
                if item["type"] == "done":
                    reply = item["message"]
                    break
                if item["type"] == "retry_start" or item["type"] == "retry_end":
                    yield item
                else:
                    yield {"type": "message_update", "delta": partial.apply(item)}
        if reply is None:
            if signal.aborted:
                why = signal.reason if signal.reason not in ("", "aborted") else ABORTED_TEXT
                reply = partial.finish("aborted", why)
            else:
                failure = task.exception() if not task.cancelled() else None
                detail = (
                    f"{type(failure).__name__}: {failure}"
                    if failure
                    else "the stream ended without a final message"
                )
                reply = partial.finish("error", f"The model failed: {detail}")
        reply = _with_own_ids(reply, partial.own, taken)
        calls = tool_calls(reply)
        failed = reply["stopReason"] in ("error", "aborted")
        if failed or signal.aborted:  # the reply and its calls' "not run" results, at once
            group: list[Message] = [reply, *_not_run(calls, reply, signal)]
            for event in _announce_together(record, group, first_started=True):
                yield event
        else:
            for event in _announce(record, reply):
                yield event
            for index, call in enumerate(calls):
                if signal.aborted:  # aborted during a tool: the rest are not run, together
                    for event in _announce_together(record, _not_run(calls[index:], reply, signal)):
                        yield event
                    break
                async for tool_event in _run_one_tool(record, call, config.tools, signal):
                    yield tool_event
        yield {"type": "turn_end", "message": reply}

        if reply.get("errorKind") == "overflow" and config.recover_overflow and not recovered:
            recovered = True
            error = reply.get("errorMessage", "context overflow")
            yield {"type": "retry_start", "attempt": 1, "delayMs": 0, "error": error}
            made_room = await config.recover_overflow()
            yield {"type": "retry_end", "attempt": 1, "success": made_room}
            if made_room:
                turn -= 1
                continue
        if failed:
            stop_reason = reply["stopReason"]
            break
        if signal.aborted:
            stop_reason = "aborted"
            break
        if calls:
            for event in _announce_together(record, config.take_steering()):
                yield event
            continue
        queued = config.take_steering() or config.take_follow_up()
        if not queued:
            stop_reason = reply["stopReason"]
            break
        for event in _announce_together(record, queued):
            yield event
    yield {"type": "agent_end", "stopReason": stop_reason}


def _not_run(
    calls: Sequence[ToolCallBlock], reply: AssistantMessage, signal: AbortSignal
) -> list[ToolResultMessage]:
    """The results of calls that were never run: the run was aborted, or the reply
    failed before it was complete."""
    why = (
        ABORTED_TEXT
        if reply["stopReason"] == "aborted" or signal.aborted
        else "Not run: the reply failed before it was complete."
    )
    return [tool_result(call["id"], call["name"], why, is_error=True) for call in calls]


async def _run_one_tool(
    record: list[Message], call: ToolCallBlock, tools: Sequence[Tool], signal: AbortSignal
) -> AsyncIterator[Event]:
    yield {
        "type": "tool_execution_start",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "arguments": call["arguments"],
    }
    feed = _Feed(signal)
    task = asyncio.create_task(run_tool(tools, call, signal, feed.push))
    async with aclosing(feed.follow(task, signal)) as outputs:
        async for output in outputs:
            shown = wiretext.shown(output)
            yield {"type": "tool_execution_update", "toolCallId": call["id"], "output": shown}
    details: dict[str, Any] | None = None
    if task.cancelled() or task.exception() is not None:
        result: ToolResultMessage = tool_result(
            call["id"], call["name"], ABORTED_TEXT, is_error=True
        )
    else:
        result, details = task.result()
    outcome: ToolOutcome = {"content": result["content"], "isError": result["isError"]}
    if details is not None:
        outcome["details"] = details
    yield {"type": "tool_execution_end", "toolCallId": call["id"], "result": outcome}
    yield {"type": "message_start", "message": result}
    for event in _announce(record, result):
        yield event
