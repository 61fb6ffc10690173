"""The view (principle 5): pure, idempotent, always valid; nothing else moved."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from crank.agent.messages import (
    Message,
    assistant_message,
    tool_calls,
    tool_result,
    user_message,
)
from crank.agent.view import (
    INTERRUPTED,
    AsIs,
    GrowingView,
    Repairs,
    build_view,
    is_valid_view,
    repair_view,
    sent_as_is,
    shape_of,
)


def reply_with_calls(*ids: str, stop: Any = "toolUse") -> Message:
    blocks: list[Any] = [{"type": "toolCall", "id": i, "name": "t", "arguments": {}} for i in ids]
    return assistant_message(blocks, stop_reason=stop)


def test_a_missing_result_becomes_an_honest_interrupted_result() -> None:
    record = [user_message("go"), reply_with_calls("a", "b"), tool_result("a", "t", "ok")]
    view = build_view(record)
    assert [m["role"] for m in view] == ["user", "assistant", "toolResult", "toolResult"]
    assert view[3]["content"] == INTERRUPTED and view[3]["isError"]  # type: ignore[typeddict-item]


def test_a_late_result_is_moved_into_place_and_a_duplicate_dropped() -> None:
    record = [
        user_message("go"),
        reply_with_calls("a"),
        user_message("steer"),
        tool_result("a", "t", "first"),
        tool_result("a", "t", "second"),
    ]
    view = build_view(record)
    assert [m["role"] for m in view] == ["user", "assistant", "toolResult", "user"]
    assert view[2]["content"] == "first"  # type: ignore[typeddict-item]


def test_orphan_results_and_empty_failures_are_left_out() -> None:
    record = [
        user_message("go"),
        tool_result("ghost", "t", "orphan"),
        assistant_message([], stop_reason="error", error_message="boom"),
        assistant_message([{"type": "text", "text": "partial"}], stop_reason="aborted"),
    ]
    view = build_view(record)
    assert [m["role"] for m in view] == ["user", "assistant"]
    assert view[1]["content"][0]["text"] == "partial"  # type: ignore[index,typeddict-item]


def test_the_record_is_not_changed() -> None:
    record = [user_message("go"), reply_with_calls("a"), user_message("x")]
    before = copy.deepcopy(record)
    build_view(record)
    assert record == before


# -- property tests ------------------------------------------------------------------

call_ids = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def records(draw: st.DrawFn) -> list[Message]:
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "calls", "text", "result", "failed"]))
        if kind == "user":
            out.append(user_message(draw(st.text(max_size=3))))
        elif kind == "calls":
            out.append(reply_with_calls(*draw(st.lists(call_ids, max_size=3))))
        elif kind == "text":
            out.append(assistant_message([{"type": "text", "text": "hi"}]))
        elif kind == "result":
            out.append(tool_result(draw(call_ids), "t", draw(st.text(max_size=3))))
        else:
            stop = draw(st.sampled_from(["error", "aborted"]))
            out.append(assistant_message([], stop_reason=stop))
    return out


@settings(max_examples=300)
@given(records())
def test_view_is_valid_idempotent_and_moves_nothing_else(record: list[Message]) -> None:
    before = copy.deepcopy(record)
    view = build_view(record)
    assert record == before
    assert is_valid_view(view)
    assert build_view(view) == view
    non_results = [m for m in view if m["role"] != "toolResult"]
    expected = [
        m
        for m in record
        if m["role"] != "toolResult"
        and not (
            m["role"] == "assistant"
            and m["stopReason"] in ("error", "aborted")
            and not m["content"]
        )
    ]
    assert [_without_ids(m) for m in non_results] == [_without_ids(m) for m in expected]
    sent_ids = [call["id"] for m in view for call in tool_calls(m)]
    assert len(sent_ids) == len(set(sent_ids)), "every call goes out under its own id"
    recorded_results = {
        (m["toolCallId"], m["content"]) for m in record if m["role"] == "toolResult"
    }
    own_ids = {call["id"] for m in record for call in tool_calls(m)}
    for message in view:
        if message["role"] == "toolResult" and message["content"] != INTERRUPTED:
            call_id = message["toolCallId"]
            if call_id not in own_ids:  # renamed on the way out: <id>_<n>
                call_id = call_id.rsplit("_", 1)[0]
            assert (call_id, message["content"]) in recorded_results


def _without_ids(message: Message) -> Any:
    if message["role"] != "assistant":
        return message
    return [{k: v for k, v in block.items() if k != "id"} for block in message["content"]]


def test_the_repairs_are_counted() -> None:
    record = [
        user_message("go"),
        tool_result("ghost", "t", "orphan"),
        reply_with_calls("a", "b"),
        tool_result("a", "t", "first"),
        tool_result("a", "t", "second"),
        assistant_message([], stop_reason="error", error_message="boom"),
    ]
    view, repairs = repair_view(record)
    assert view == build_view(record)
    assert repairs == Repairs(interrupted=1, orphans=1, duplicates=1, empty_replies=1)
    assert repairs.to_json() == {
        "interruptedResults": 1,
        "droppedOrphanResults": 1,
        "droppedDuplicateResults": 1,
        "droppedEmptyReplies": 1,
    }
    clean, none = repair_view(view)
    assert clean == view and not none


@settings(max_examples=300)
@given(records())
def test_the_counted_repairs_account_for_every_message(record: list[Message]) -> None:
    view, repairs = repair_view(record)
    dropped = repairs.orphans + repairs.duplicates + repairs.empty_replies
    assert len(view) == len(record) - dropped + repairs.interrupted
    assert sum(1 for m in view if m.get("content") == INTERRUPTED) == repairs.interrupted
    assert not repair_view(view)[1]


@settings(max_examples=2000)
@given(records(), records(), st.lists(st.integers(0, 24), max_size=8))
def test_a_growing_view_equals_a_full_repair_at_every_length(
    first: list[Message], second: list[Message], cuts: list[int]
) -> None:
    """Principle 5 for the incremental view: the record read a piece at a time (and
    sometimes replaced by another) gives exactly the full repair's view and counts."""
    growing, sharing = GrowingView(), GrowingView()
    record = first + second
    handed = []
    for length in [*range(len(record) + 1), *cuts]:
        prefix = record[: min(length, len(record))]
        expected = repair_view(prefix)
        assert growing.repair(prefix) == expected
        view, repairs = sharing.shared(prefix)
        assert (list(view), repairs) == expected
        handed.append((view, expected[0]))
    assert growing.repair(second) == repair_view(second)  # replaced, not extended
    assert sharing.shared(second)[0] == repair_view(second)[0]
    for view, expected_view in handed:  # a view shares storage, and never changes
        assert list(view) == expected_view and len(view) == len(expected_view)


def test_a_growing_view_repairs_only_what_was_added() -> None:
    """Past a clean point the prefix is not read again: a message standing there that
    changed behind the view's back (never done; here to observe it) is not seen."""
    growing = GrowingView()
    record: list[Message] = [user_message("go"), reply_with_calls("a"), tool_result("a", "t", "ok")]
    growing.repair(record)
    record[0] = user_message("changed")
    record[2:3] = [record[2]]  # the same last message: still an extension
    view, _ = growing.repair([*record, user_message("next")])
    assert view[0]["content"] == "go"  # type: ignore[typeddict-item]


def test_a_growing_view_after_a_reused_call_id() -> None:
    """Found by the property test: a later reply that reuses an answered call's id sends
    the view back to a full repair, and the calls it then remembers are the whole
    record's (they were the tail's alone, so a third reuse went unnoticed)."""
    first = [
        reply_with_calls("a"),
        tool_result("a", "t", ""),
        user_message(""),
        tool_result("b", "t", ""),
        user_message(""),
        reply_with_calls("b"),
    ]
    record = [*first, reply_with_calls("a"), user_message(""), reply_with_calls("b")]
    growing = GrowingView()
    for length in range(len(record) + 1):
        assert growing.repair(record[:length]) == repair_view(record[:length]), length


def test_a_tail_that_reuses_an_id_is_renamed_past_the_prefix_ids_too() -> None:
    """A tail whose calls reuse an id among themselves (none of the clean prefix's)
    sends the view back to a full repair: repaired alone, its second ``c`` would go
    out as ``c_2``, which a call of the prefix already sends."""
    prefix: list[Message] = [
        user_message("go"),
        reply_with_calls("c_2"),
        tool_result("c_2", "t", ""),
    ]
    tail = [reply_with_calls("c"), tool_result("c", "t", ""), reply_with_calls("c")]
    growing = GrowingView()
    growing.shared(prefix)
    view, repairs = growing.shared([*prefix, *tail])
    assert (list(view), repairs) == repair_view([*prefix, *tail])
    assert [call["id"] for m in view for call in tool_calls(m)] == ["c_2", "c", "c_3"]


def test_a_reused_id_pairs_each_call_with_its_own_result_and_goes_out_renamed() -> None:
    """Issue 26.5: results are matched to calls by place; later reuses go out as
    <id>_2, <id>_3..., the same way every time."""
    record: list[Message] = [user_message("go")]
    for number in range(5):
        record.append(reply_with_calls("call_0"))
        record.append(tool_result("call_0", "t", f"result {number}"))
    view, repairs = repair_view(record)
    assert not repairs
    pairs = [(m["content"][0]["id"], view[i + 1]) for i, m in enumerate(view) if tool_calls(m)]
    assert [call_id for call_id, _ in pairs] == [
        "call_0",
        "call_0_2",
        "call_0_3",
        "call_0_4",
        "call_0_5",
    ]
    assert [r["toolCallId"] for _, r in pairs] == [c for c, _ in pairs]  # type: ignore[typeddict-item]
    assert [r["content"] for _, r in pairs] == [f"result {n}" for n in range(5)]  # type: ignore[typeddict-item]
    assert build_view(record) == view
    assert record[3]["content"][0]["id"] == "call_0"  # type: ignore[index]  # the record is not changed


def test_the_loop_mints_its_own_ids() -> None:
    from crank.agent.loop import own_call_id

    taken: set[str] = set()
    assert own_call_id("call_0", taken) == "call_0"
    again = own_call_id("call_0", taken)
    assert again.startswith("call_0_") and again != "call_0"
    missing = own_call_id("", taken)
    assert missing.startswith("call_") and missing not in ("call_0", again)
    assert len(taken) == 3


@settings(max_examples=500)
@given(records(), st.integers(0, 12))
def test_sent_as_is_says_when_the_repair_gives_the_record_back_and_grows_the_same(
    record: list[Message], cut: int
) -> None:
    """``sent_as_is`` (judged from shapes, at C speed) is true exactly when the repair
    gives the record back unchanged with nothing counted; ``AsIs``, fed the shapes one
    by one, says the same at every length, also when it starts from a prefix it was
    told was sent as is (the calls before given only when asked for)."""
    view, repairs = repair_view(record)
    shapes = [shape_of(m) for m in record]
    assert sent_as_is(shapes) == (view == record and repairs == Repairs())
    grown = AsIs()
    for length, shape in enumerate(shapes, start=1):
        assert grown.add(shape) == sent_as_is(shapes[:length])
    head = shapes[: min(cut, len(shapes))]
    if sent_as_is(head):
        asked: list[int] = []
        resumed = AsIs(seen=lambda: asked.append(1) or [c for s in head for c in s.calls])
        for length in range(len(head) + 1, len(shapes) + 1):
            assert resumed.add(shapes[length - 1]) == sent_as_is(shapes[:length])
        assert len(asked) <= 1
    broken = AsIs.broken()
    assert not any(broken.add(shape) for shape in shapes)
