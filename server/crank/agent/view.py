"""The view: what a provider is sent, computed from the record.

The record keeps what happened, holes included (a crash between a call and its result,
an abort, a failed reply). Strict providers refuse a request in which a tool call has no
result or a result has no call, so before every request the record is *read* into a
valid view. ``build_view`` never changes the record, is idempotent, and gives the same
output for the same input.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def build_view(record: Sequence[Message]) -> list[Message]:
    """Repair the record into a request every provider accepts.

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
    for message in record:
        if message["role"] == "toolResult":
            call_id = message["toolCallId"]
            if call_id in calls_needing_results and call_id not in first_result:
                first_result[call_id] = message

    view: list[Message] = []
    placed: set[str] = set()
    for message in record:
        if message["role"] == "toolResult":
            continue  # results are placed right after their calls
        if is_empty_failure(message):
            continue
        view.append(message)
        for call in tool_calls(message):
            if call["id"] in placed:
                continue  # a duplicated call id: its one result is already placed
            placed.add(call["id"])
            result = first_result.get(call["id"])
            view.append(result if result is not None else _interrupted(call, message["timestamp"]))
    return view


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
