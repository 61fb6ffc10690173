"""``shared_prefix``: what the per-turn memos use to find what is new since last time."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from crank.agent.messages import Message, shared_prefix, user_message

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
