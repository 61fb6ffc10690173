"""The view: what a provider is sent, computed from the record.

The record keeps what happened, holes included (a crash between a call and its result,
an abort, a failed reply). Strict providers refuse a request in which a tool call has no
result or a result has no call, so before every request the record is *read* into a
valid view. ``build_view`` never changes the record, is idempotent, and gives the same
output for the same input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .messages import (
    Message,
    ToolCallBlock,
    ToolResultMessage,
    is_empty_failure,
    tool_calls,
)

INTERRUPTED = "Interrupted: no result was recorded; it may or may not have run."


def _interrupted(call: ToolCallBlock, timestamp: int) -> ToolResultMessage:
    return {
        "role": "toolResult",
        "toolCallId": call["id"],
        "toolName": call["name"],
        "content": INTERRUPTED,
        "isError": True,
        "timestamp": timestamp,
    }


@dataclass(frozen=True)
class Repairs:
    """What ``repair_view`` changed on the way from the record to the view, so the log
    and the client can say so (a crash's hole shows up as ``interrupted``)."""

    interrupted: int = 0
    """Calls with no recorded result, given an honest "interrupted" result."""
    orphans: int = 0
    """Results left out because their call is not in the view."""
    duplicates: int = 0
    """Second (and later) results for a call that already has one."""
    empty_replies: int = 0
    """Failed or aborted replies with nothing in them, left out."""

    def __bool__(self) -> bool:
        return any((self.interrupted, self.orphans, self.duplicates, self.empty_replies))

    def to_json(self) -> dict[str, int]:
        return {
            "interruptedResults": self.interrupted,
            "droppedOrphanResults": self.orphans,
            "droppedDuplicateResults": self.duplicates,
            "droppedEmptyReplies": self.empty_replies,
        }


def repair_view(record: Sequence[Message]) -> tuple[list[Message], Repairs]:
    """Repair the record into a request every provider accepts, and say what changed.

    - A failed or aborted reply with nothing in it is left out.
    - Every tool call is followed at once by exactly one result, in call order: a result
      recorded later is moved into place, a second result for the same call is dropped
      (the first one is kept), and a missing one becomes an honest "interrupted" result.
    - A result whose call is not in the view is dropped.
    Everything else keeps its relative order. Messages are shared, not copied: callers
    must treat the view as read-only.
    """
    calls_needing_results: set[str] = set()
    for message in record:
        if not is_empty_failure(message):
            for call in tool_calls(message):
                calls_needing_results.add(call["id"])

    first_result: dict[str, ToolResultMessage] = {}
    orphans = duplicates = 0
    for message in record:
        if message["role"] == "toolResult":
            call_id = message["toolCallId"]
            if call_id not in calls_needing_results:
                orphans += 1
            elif call_id in first_result:
                duplicates += 1
            else:
                first_result[call_id] = message

    view: list[Message] = []
    placed: set[str] = set()
    interrupted = empty_replies = 0
    for message in record:
        if message["role"] == "toolResult":
            continue  # results are placed right after their calls
        if is_empty_failure(message):
            empty_replies += 1
            continue
        view.append(message)
        for call in tool_calls(message):
            if call["id"] in placed:
                continue  # a duplicated call id: its one result is already placed
            placed.add(call["id"])
            result = first_result.get(call["id"])
            if result is None:
                interrupted += 1
                result = _interrupted(call, message["timestamp"])
            view.append(result)
    return view, Repairs(interrupted, orphans, duplicates, empty_replies)


def build_view(record: Sequence[Message]) -> list[Message]:
    """The repaired view alone (``repair_view`` without the account of what changed)."""
    return repair_view(record)[0]


def is_valid_view(messages: Sequence[Message]) -> bool:
    """True iff every call is followed at once by exactly one result, in call order, and
    no result stands anywhere else. The property the tests check ``build_view`` against."""
    index = 0
    seen: set[str] = set()
    while index < len(messages):
        message = messages[index]
        index += 1
        if message["role"] == "toolResult":
            return False
        for call in tool_calls(message):
            if call["id"] in seen:
                continue
            seen.add(call["id"])
            if index >= len(messages):
                return False
            result = messages[index]
            if result["role"] != "toolResult" or result["toolCallId"] != call["id"]:
                return False
            index += 1
    return True
