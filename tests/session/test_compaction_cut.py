"""The cut: never on a tool result, never between a call and its result; refused when
it would summarise nothing or keep nothing."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from crank.agent.messages import Message, assistant_message, tool_result, user_message
from crank.agent.messages import tool_calls as calls_of
from crank.session.cut import Row, find_cut


def size(message: Message) -> int:
    return len(str(message)) // 4


def rows_from(shape: list[tuple[str, int]]) -> list[Row]:
    """``("u", n)`` a user message of n words, ``("a", k)`` a reply making k calls
    followed by their results (k = 0: a plain answer)."""
    rows: list[Row] = []
    counter = 0
    for kind, n in shape:
        if kind == "u":
            rows.append((f"e{len(rows)}", user_message("word " * n)))
            continue
        blocks = [
            {"type": "toolCall", "id": f"c{counter + i}", "name": "read", "arguments": {}}
            for i in range(n)
        ]
        counter += n
        reply = assistant_message(blocks or [{"type": "text", "text": "ok"}])  # type: ignore[list-item]
        rows.append((f"e{len(rows)}", reply))
        for block in blocks:
            rows.append((f"e{len(rows)}", tool_result(block["id"], "read", "x" * 200)))
    return rows


shapes = st.lists(
    st.one_of(
        st.tuples(st.just("u"), st.integers(1, 60)), st.tuples(st.just("a"), st.integers(0, 4))
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(shape=shapes, budget=st.integers(1, 800), summary=st.booleans())
def test_the_cut_never_splits_a_call_from_its_result(
    shape: list[tuple[str, int]], budget: int, summary: bool
) -> None:
    rows = rows_from(shape)
    if summary:
        rows.insert(0, (None, user_message("Previous conversation summary:\n\nearlier")))
    cut = find_cut(rows, budget, size)
    if cut is None:
        return
    kept, older = rows[cut:], rows[:cut]
    assert kept[0][1]["role"] != "toolResult"
    assert kept[0][0] is not None
    assert any(entry_id is not None for entry_id, _ in older)  # something is summarised
    called_before = {c["id"] for _, m in older for c in calls_of(m)}
    for _, message in kept:
        if message["role"] == "toolResult":
            assert message["toolCallId"] not in called_before


def test_walks_back_then_forward_to_a_user_message() -> None:
    rows = rows_from(
        [("u", 5), ("a", 1), ("a", 0), ("u", 5), ("a", 2), ("a", 0), ("u", 5), ("a", 0)]
    )
    # the walk back reaches into the second prompt's tool results
    cut = find_cut(rows, 140, size)
    assert cut is not None and rows[cut][1]["role"] == "user"
    assert cut == 9  # the third prompt: its question and its answer are kept


def test_one_long_run_is_cut_at_a_turn_start_after_a_whole_batch() -> None:
    rows = rows_from([("u", 5)] + [("a", 2)] * 10 + [("a", 0)])
    cut = find_cut(rows, 300, size)
    assert cut is not None
    assert rows[cut][1]["role"] == "assistant" and rows[cut - 1][1]["role"] == "toolResult"


def test_refused_when_everything_fits_or_nothing_can_be_kept() -> None:
    small = rows_from([("u", 3), ("a", 0)])
    assert find_cut(small, 10_000, size) is None  # summarises nothing
    one_prompt = rows_from([("u", 3000)])
    assert find_cut(one_prompt, 10, size) is None  # would keep nothing
    only_summary_before = [(None, user_message("Previous conversation summary:\n\nx"))]
    only_summary_before += rows_from([("u", 400), ("a", 0)])
    assert find_cut(only_summary_before, 5, size) is None
