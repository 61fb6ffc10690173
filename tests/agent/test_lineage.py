"""``shared_prefix``: what the per-turn memos use to find what is new since last time,
with and without a lineage that vouches for part of the answer."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crank.agent.lineage import (
    Lineage,
    LineageList,
    SharedView,
    kept,
    known_shared,
    shared_prefix,
)
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


@given(lists, st.integers(min_value=0, max_value=40), lists, st.integers(0, 40), lists)
def test_a_shared_view_reads_as_the_list_it_stands_for(
    base: list[Message], length: int, tail: list[Message], stable: int, grown: list[Message]
) -> None:
    """A ``SharedView`` is the first ``length`` of a list only appended to, then its
    tail: every read (index, slice, iteration, a copy) is the list's, before and after
    the list grows, and it vouches for its lineage as a frozen list does."""
    length = min(length, len(base))
    view = SharedView(base, length, tail, Lineage(), stable)
    expected = base[:length] + tail
    base.extend(grown)  # what its owner may do; the view does not change
    assert list(view) == expected and len(view) == len(expected) and view == expected
    for index in range(-len(expected), len(expected)):
        assert view[index] is expected[index]
    for start in range(-2, len(expected) + 2, 3):
        for stop in range(-2, len(expected) + 2, 3):
            assert view[start:stop] == expected[start:stop]
    assert view[::2] == expected[::2]
    copied = view.copied()
    assert copied == expected and copied.is_frozen and copied.lineage is view.lineage
    assert copied.stable == view.stable == min(stable, len(expected))
    assert kept(view) is view and known_shared(view, copied) == view.stable
    other = LineageList(expected, view.lineage, len(expected))
    assert shared_prefix(view, other) == walked(list(view), other)


def test_a_shared_view_refuses_more_than_its_list_holds_and_copies_to_a_list() -> None:
    base = POOL[:3]
    with pytest.raises(ValueError):
        SharedView(base, 4, (), Lineage(), 0)
    view = SharedView(base, 2, POOL[5:6], Lineage(), 2)
    made = copy.copy(view)
    assert type(made) is list and made == [POOL[0], POOL[1], POOL[5]]
    assert pickle.loads(pickle.dumps(view)) == made
    with pytest.raises(IndexError):
        view[3]
