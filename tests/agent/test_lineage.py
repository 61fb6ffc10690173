"""``shared_prefix``: what the per-turn memos use to find what is new since last time,
with and without a lineage that vouches for part of the answer."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given
from hypothesis import strategies as st

from crank.agent.lineage import Lineage, LineageList, kept, known_shared, shared_prefix
from crank.agent.messages import Message, user_message

POOL: list[Message] = [user_message(f"message {n}", n) for n in range(8)]
lists = st.lists(st.sampled_from(POOL), max_size=40)


def walked(a: list[Message], b: list[Message]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x is not y:
            break
        count += 1
    return count


@given(lists, lists, st.integers(min_value=0, max_value=40))
def test_it_counts_the_messages_the_two_lists_start_with(
    a: list[Message], tail: list[Message], cut: int
) -> None:
    b = a[:cut] + tail
    assert shared_prefix(a, b) == walked(a, b)
    assert shared_prefix(b, a) == walked(b, a)


@given(
    lists,
    st.integers(min_value=0, max_value=40),
    st.integers(min_value=0, max_value=40),
    lists,
    lists,
)
def test_a_lineage_gives_the_same_answer_as_comparing(
    history: list[Message],
    a_stable: int,
    b_stable: int,
    a_tail: list[Message],
    b_tail: list[Message],
) -> None:
    """Two views of one history, each with a tentative tail past its stable part (a
    repaired view's pending calls): what the lineage vouches for plus the compared rest
    is exactly what walking both finds."""
    lineage = Lineage()
    a_stable, b_stable = min(a_stable, len(history)), min(b_stable, len(history))
    a = LineageList(history[:a_stable] + a_tail, lineage, a_stable)
    b = LineageList(history[:b_stable] + b_tail, lineage, b_stable)
    assert known_shared(a, b) == min(a_stable, b_stable)
    assert shared_prefix(a, b) == walked(a, b)
    assert shared_prefix(b, a) == walked(b, a)


def test_lists_of_different_lineages_are_compared() -> None:
    one = LineageList(POOL[:5], Lineage(), 5)
    other = LineageList(POOL[:3] + POOL[6:], Lineage(), 5)
    assert known_shared(one, other) == 0
    assert shared_prefix(one, other) == 3


def test_a_growing_list_is_kept_as_it_stands() -> None:
    """The Harness's record is only appended to; a memo must keep a copy of it as it
    stands (or the next append would change what the memo measured), and may keep a
    frozen list itself."""
    record = LineageList(POOL[:3], Lineage())
    frozen = kept(record)
    record.append(POOL[3])
    assert isinstance(frozen, LineageList) and list(frozen) == POOL[:3]
    assert frozen.lineage is record.lineage and frozen.stable == 3 and record.stable == 4
    assert kept(frozen) is frozen
    plain = list(POOL[:2])
    assert kept(plain) == plain and kept(plain) is not plain


def test_a_copy_of_a_snapshot_is_a_plain_list_to_change() -> None:
    snapshot = LineageList(POOL[:3], Lineage(), 3)
    for made in (
        copy.copy(snapshot),
        copy.deepcopy(snapshot),
        pickle.loads(pickle.dumps(snapshot)),
    ):
        assert type(made) is list and made == POOL[:3]
        made.append(POOL[4])
    assert copy.deepcopy(snapshot)[0] is not POOL[0]
    assert len(snapshot) == 3
