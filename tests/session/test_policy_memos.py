"""The policies' memos (``PolicyMemo``, ``TrimMemo``) send exactly what the pure policies
send, for the views a growing record is repaired into (``GrowingView.shared``), and what
their lineage vouches for is the same message objects in consecutive answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crank.agent.lineage import Lineage, LineageList, known_shared
from crank.agent.messages import Message, assistant_message, tool_result, user_message
from crank.agent.view import GrowingView
from crank.session.policies import PolicyMemo, TrimMemo, apply_clearing, apply_trim

LARGE = "a large result " * 50  # past MIN_CLEAR_CHARS

turns = st.lists(
    st.tuples(
        st.lists(st.sampled_from(["a", "b", "c", "new"]), max_size=2),  # call ids ("new": unique)
        st.lists(st.booleans(), min_size=2, max_size=2),  # which results are large
        st.booleans(),  # a user message after the turn
    ),
    min_size=1,
    max_size=12,
)


def record_of(script: list[tuple[list[str], list[bool], bool]]) -> list[Message]:
    record: list[Message] = [user_message("the task", 0)]
    for number, (ids, large, steer) in enumerate(script):
        calls: list[Any] = [
            {
                "type": "toolCall",
                "id": f"n{number}" if i == "new" else i,
                "name": "t",
                "arguments": {},
            }
            for i in ids
        ]
        record.append(assistant_message(calls, stop_reason="toolUse" if calls else "stop"))
        for call, big in zip(calls, large, strict=False):
            record.append(tool_result(call["id"], "t", LARGE if big else "small"))
        if steer:
            record.append(user_message(f"more {number}", number + 1))
    return record


def same_objects(sent: Sequence[Message], before: Sequence[Message]) -> bool:
    shared = known_shared(sent, before)
    return all(sent[i] is before[i] for i in range(shared))


@settings(max_examples=300, deadline=None)
@given(turns, st.lists(st.integers(0, 30), min_size=1, max_size=4))
def test_the_memos_send_what_the_policies_send(
    script: list[tuple[list[str], list[bool], bool]], boundaries: list[int]
) -> None:
    """Views repaired from a growing record (ids unique), and the record's own prefixes
    as one lineage (a reused id then stands on both sides of a cut)."""
    record = record_of(script)
    growing = GrowingView()
    lineage = Lineage()
    views = [growing.shared(record[:length])[0] for length in range(1, len(record) + 1)]
    views += [LineageList(record[:length], lineage, length) for length in range(len(record) + 1)]
    clearing, trimming = PolicyMemo(), TrimMemo()
    last_cleared: Sequence[Message] = []
    last_trimmed: Sequence[Message] = []
    for view in views:
        plain = list(view)
        for boundary in boundaries:
            cleared = clearing.apply_clearing(view, boundary)
            assert list(cleared) == apply_clearing(plain, boundary)
            assert same_objects(cleared, last_cleared)
            last_cleared = cleared
            trimmed = trimming.apply_trim(view, boundary)
            assert list(trimmed) == list(apply_trim(plain, boundary))
            assert same_objects(trimmed, last_trimmed)
            last_trimmed = trimmed
