"""The events a run sends, as a union of TypedDicts: the table in docs/protocol.md.

Each event is plain JSON (camelCase keys, sent as-is), discriminated by ``type``, so
mypy checks every key where an event is made and narrows on ``event["type"]`` where
one is read. ``Event`` is everything that passes through a Harness: the loop's own
events, the Harness's (``agent_settled``, ``queue_update``) and those the layers above
announce through it from hooks (compaction, usage). The workspace adds the two it
sends on its own (``system_prompt_changed``, ``session_changed``); see
``crank.workspace.stream``. The TypeScript client's union and the Lua client's handlers
mirror the same table.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from .messages import AssistantMessage, Message, StopReason
from .model import NoticeKind, RetryEnd, RetryStart

DeltaKind = Literal["text", "thinking", "toolCall"]
"""Which kind of block a ``message_update`` delta extends."""

CompactionReason = Literal["threshold", "overflow", "manual"]
"""Why a compaction started: the next request would pass the threshold, the provider
refused a request as too long, or the user asked."""


class AgentStart(TypedDict):
    type: Literal["agent_start"]


class TurnStart(TypedDict):
    type: Literal["turn_start"]
    turn: int
    """1-based within the run."""


class MessageStart(TypedDict):
    type: Literal["message_start"]
    message: Message


class Delta(TypedDict):
    """New text of one block. Concatenating the deltas of a ``contentIndex`` gives the
    block's text in its ``message_end``; a tool call's first delta names the call."""

    kind: DeltaKind
    contentIndex: int
    text: str
    toolCallId: NotRequired[str]
    toolName: NotRequired[str]


class MessageUpdate(TypedDict):
    type: Literal["message_update"]
    delta: Delta


class MessageEnd(TypedDict):
    type: Literal["message_end"]
    message: Message
    entryId: NotRequired[str]
    """The message's id in the session file, set by the log's listener."""


class ToolExecutionStart(TypedDict):
    type: Literal["tool_execution_start"]
    toolCallId: str
    toolName: str
    arguments: dict[str, Any]


class ToolExecutionUpdate(TypedDict):
    type: Literal["tool_execution_update"]
    toolCallId: str
    output: str
    """Only what is new since the last update."""


class ToolOutcome(TypedDict):
    content: str
    isError: bool
    details: NotRequired[dict[str, Any]]
    """For clients (a diff, a saved-output path); never sent to the model."""


class ToolExecutionEnd(TypedDict):
    type: Literal["tool_execution_end"]
    toolCallId: str
    result: ToolOutcome


class TurnEnd(TypedDict):
    type: Literal["turn_end"]
    message: AssistantMessage


class AgentEnd(TypedDict):
    type: Literal["agent_end"]
    stopReason: StopReason


class AgentSettled(TypedDict):
    """The last event of every run, exactly once."""

    type: Literal["agent_settled"]


class QueueState(TypedDict):
    """Both queues as the wire shows them (``queue_update``, ``crank/state`` queue)."""

    steering: list[str]
    followUp: list[str]


class QueueUpdate(QueueState):
    type: Literal["queue_update"]


class CompactionStart(TypedDict):
    type: Literal["compaction_start"]
    reason: CompactionReason


class CompactionEnd(TypedDict):
    type: Literal["compaction_end"]
    compacted: bool
    error: NotRequired[str]


class ImagesOmitted(TypedDict):
    """Said once per session and model: a request left images out (placeholders stand in
    for them), because the model takes none or a stored copy is missing."""

    type: Literal["images_omitted"]
    count: int
    message: str


class Notice(TypedDict):
    """One line for the chat, said once: the server cannot call tools, the window was
    learned from a refusal, the one served model was chosen, folder settings were
    ignored, a "Fix This File" run left its file unchanged. ``kind`` says which;
    ``message`` is the text to show."""

    type: Literal["notice"]
    kind: NoticeKind
    message: str


class ContextUsage(TypedDict):
    """The context meter and the session's spend: what ``crank/state`` reports as
    ``usage`` and what a ``usage_update`` event carries. Defined once here, the lowest
    layer that uses it."""

    contextTokens: int
    contextWindow: int
    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    cost: float


class UsageUpdate(ContextUsage):
    type: Literal["usage_update"]


Event = (
    AgentStart
    | TurnStart
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | TurnEnd
    | AgentEnd
    | AgentSettled
    | QueueUpdate
    | CompactionStart
    | CompactionEnd
    | RetryStart
    | RetryEnd
    | UsageUpdate
    | ImagesOmitted
    | Notice
)
"""Every event that passes through a Harness."""

__all__ = [
    "AgentEnd",
    "AgentSettled",
    "AgentStart",
    "CompactionEnd",
    "CompactionReason",
    "CompactionStart",
    "ContextUsage",
    "Delta",
    "DeltaKind",
    "Event",
    "ImagesOmitted",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "Notice",
    "NoticeKind",
    "QueueState",
    "QueueUpdate",
    "RetryEnd",
    "RetryStart",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolOutcome",
    "TurnEnd",
    "TurnStart",
    "UsageUpdate",
]
