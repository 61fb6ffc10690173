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


class GrowingView:
    """``repair_view`` for a record that grows at its end, in time proportional to what
    was added since the last clean point, with the same result as a full repair.

    A clean point is a length of the record up to which every call has its result and
    every result its call: the view of such a prefix is final, whatever comes after
    it, as long as no later call reuses one of its call ids (then, and whenever the
    record was replaced rather than extended, the whole record is repaired again).
    Tested against ``repair_view`` property-style (tests/agent/test_view.py)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._clean = 0
        self._last: Message | None = None
        self._view: list[Message] = []
        self._calls: set[str] = set()
        self._repairs = Repairs()

    def repair(self, record: Sequence[Message]) -> tuple[list[Message], Repairs]:
        start = self._clean
        if start and (len(record) < start or record[start - 1] is not self._last):
            self._reset()
            start = 0
        tail = record[start:]
        tail_calls = _call_ids(tail)
        if tail_calls & self._calls:
            self._reset()
            start, tail = 0, record
            tail_calls = _call_ids(tail)
        tail_view, tail_repairs = repair_view(tail)
        late = sum(
            1 for m in tail if m["role"] == "toolResult" and m["toolCallId"] in self._calls
        )  # results for calls of the clean prefix: repaired alone they look orphaned
        repairs = Repairs(
            self._repairs.interrupted + tail_repairs.interrupted,
            self._repairs.orphans + tail_repairs.orphans - late,
            self._repairs.duplicates + tail_repairs.duplicates + late,
            self._repairs.empty_replies + tail_repairs.empty_replies,
        )
        view = self._view + tail_view if start else tail_view
        if tail and _is_clean(tail, self._calls):
            self._clean, self._last = len(record), record[-1]
            self._view, self._repairs = list(view), repairs
            self._calls |= tail_calls
        return view, repairs


def _call_ids(messages: Sequence[Message]) -> set[str]:
    """The ids of the calls a repair answers (an empty failure's calls are not sent)."""
    return {
        call["id"]
        for message in messages
        if not is_empty_failure(message)
        for call in tool_calls(message)
    }


def _is_clean(messages: Sequence[Message], earlier_calls: set[str]) -> bool:
    """Every call in ``messages`` has a result there, and every result there belongs
    to a call there (or is a late duplicate for an earlier, answered call)."""
    calls = _call_ids(messages)
    results = set()
    for message in messages:
        if message["role"] == "toolResult":
            call_id = message["toolCallId"]
            if call_id not in calls and call_id not in earlier_calls:
                return False
            results.add(call_id)
    return calls <= results
