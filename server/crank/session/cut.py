"""Where a compaction cuts: which rows are summarised and which are kept as they were.

Rows are the messages of the current view in order, each with the id of the log entry
that holds it (``None`` for the summary of an earlier compaction, which has no entry of
its own to keep). The rule (docs/context.md):

1. Walk back from the newest row, adding sizes, until ``budget`` tokens are kept.
2. Move forward to the first user message at or after that point, so a prompt, the
   work it caused and its answer stay on one side of the cut.
3. If there is none (one run longer than the budget), move forward to the first reply
   that opens a model turn after a completed tool batch: every call before it answered
   before it. A cut never lands on a tool result, never between a call and its result.
4. A cut that would summarise nothing (only an earlier summary, or nothing at all) or
   keep nothing is no cut: ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crank.agent.messages import Message, is_empty_failure, tool_calls

Row = tuple[str | None, Message]


def _walk_back(rows: Sequence[Row], budget: int, size: Callable[[Message], int]) -> int:
    index, kept = len(rows), 0
    while index > 0 and kept < budget:
        index -= 1
        kept += size(rows[index][1])
    return index


def _turn_starts(rows: Sequence[Row]) -> list[bool]:
    """For each row: does a model turn start here with every earlier call answered?"""
    starts: list[bool] = []
    unanswered: set[str] = set()
    previous_role = ""
    for _, message in rows:
        role = message["role"]
        starts.append(role == "assistant" and previous_role == "toolResult" and not unanswered)
        if message["role"] == "toolResult":
            unanswered.discard(message["toolCallId"])
        elif message["role"] == "assistant":
            # A call an older reply left unanswered is a hole the view repairs on
            # either side of a cut; only the newest batch can be split.
            unanswered = {call["id"] for call in tool_calls(message)}
        previous_role = role
    return starts


def find_cut(rows: Sequence[Row], budget: int, size: Callable[[Message], int]) -> int | None:
    """The index of the first kept row, or ``None`` when no compaction should happen."""
    start = _walk_back(rows, budget, size)
    if start == 0:
        return None  # everything fits the budget: nothing to summarise
    cut = next(
        (i for i in range(start, len(rows)) if rows[i][1]["role"] == "user" and rows[i][0]),
        None,
    )
    if cut is None:
        starts = _turn_starts(rows)
        cut = next((i for i in range(start, len(rows)) if starts[i] and rows[i][0]), None)
    if cut is None:
        return None  # no safe place to start the kept tail: keep nothing is refused
    if all(entry_id is None for entry_id, _ in rows[:cut]):
        return None  # only an earlier summary before the cut: it would summarise nothing
    if all(is_empty_failure(message) for _, message in rows[cut:]):
        return None  # the kept tail would be empty once the view drops failed replies
    return cut
