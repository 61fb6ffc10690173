"""The request-view policies are pure: same view and state, same request; the record is
never changed; clearing waits for its limit and then moves in big steps."""

from __future__ import annotations

import copy
import itertools
import json
import random

import pytest

from crank.agent.messages import Message, assistant_message, tool_result, user_message
from crank.session.policies import (
    ClearState,
    Policy,
    apply_clearing,
    cache_marks,
    clear_old_results,
)


def size(message: Message) -> int:
    return len(json.dumps(message)) // 4


def tokens(messages: object) -> int:
    return sum(size(m) for m in messages)  # type: ignore[attr-defined]


def read_turn(index: int, lines: int) -> list[Message]:
    """The model reads ``f{index}.py`` (``lines`` lines) and says ok."""
    block = {
        "type": "toolCall",
        "id": f"c{index}",
        "name": "read",
        "arguments": {"path": f"f{index}.py"},
    }
    return [
        assistant_message([block], stop_reason="toolUse", timestamp=index),  # type: ignore[list-item]
        tool_result(f"c{index}", "read", f"# f{index}.py\n" + "x = 1\n" * lines),
        assistant_message([{"type": "text", "text": "ok"}], timestamp=index),
    ]


def view_of(turns: int) -> list[Message]:
    view: list[Message] = []
    for index in range(turns):
        view.append(user_message(f"read f{index}.py", timestamp=index))
        view.extend(read_turn(index, 200))
    return view


def clear(view: list[Message], state: ClearState) -> tuple[list[Message], ClearState]:
    return clear_old_results(view, state, tokens=tokens, limit=3_000, keep_tokens=800, size=size)


def test_nothing_is_cleared_under_the_limit() -> None:
    view = view_of(3)
    sent, state = clear(view, ClearState())
    assert sent == view and state == ClearState()


def test_old_results_become_notes_and_the_record_is_untouched() -> None:
    view = view_of(12)
    before = copy.deepcopy(view)
    sent, state = clear(view, ClearState())
    assert view == before
    assert state.boundary > 0 and tokens(sent) < 3_000
    notes = [
        m for m in sent if m["role"] == "toolResult" and m["content"].startswith("[Result cleared")
    ]
    assert notes and "read" in notes[0]["content"] and '"path": "f0.py"' in notes[0]["content"]
    assert sent[-2] == view[-2]  # the newest result is sent whole
    assert clear(view, ClearState()) == (sent, state)  # same input, same output


def test_the_boundary_moves_in_steps_so_prefixes_stay_shared() -> None:
    view = view_of(11)  # short enough that clearing alone keeps it under the limit
    state = ClearState()
    boundaries = []
    previous: list[Message] | None = None
    shared_prefix_kept = 0
    for end in range(4, len(view) + 1, 4):
        sent, state = clear(view[:end], state)
        boundaries.append(state.boundary)
        if previous is not None and sent[: len(previous)] == previous:
            shared_prefix_kept += 1
        previous = sent
    moves = sum(1 for a, b in itertools.pairwise(boundaries) if a != b)
    assert moves >= 2
    assert moves <= len(boundaries) // 2  # several turns between moves
    assert shared_prefix_kept >= len(boundaries) - 1 - moves


def test_apply_clearing_keeps_small_results() -> None:
    view = [
        user_message("q", timestamp=1),
        assistant_message(
            [{"type": "toolCall", "id": "c", "name": "ls", "arguments": {}}], timestamp=1
        ),
        tool_result("c", "ls", "a.py b.py"),
    ]
    assert apply_clearing(view, 3) == view


def test_cache_marks_end_of_previous_request_and_of_this_one() -> None:
    view = view_of(2)
    assert cache_marks(view) == (len(view) - 2, len(view) - 1)
    with_prompt = [*view, user_message("next")]
    assert cache_marks(with_prompt) == (len(view) - 2, len(view))
    assert cache_marks([]) == ()
    assert cache_marks([user_message("only")]) == (0,)


def test_policy_names() -> None:
    assert Policy.named("default") == Policy(clear=True, compact=True, cache=True)
    assert Policy.named("none") == Policy(clear=False, compact=False, cache=False)
    with pytest.raises(
        ValueError, match=r"'sometimes'.*none, cache, clear, compact, trim, default"
    ):
        Policy.named("sometimes")


@pytest.mark.parametrize("seed", range(12))
def test_the_clearing_memo_never_changes_what_is_sent(seed: int) -> None:
    """``ClearState.clean`` only spares looking again: a view growing turn by turn, with
    small and large results mixed, and now and then replaced by a different view of the
    same length (a branch), is cleared exactly as with the memo forgotten every time."""
    rng = random.Random(seed)
    view: list[Message] = []
    remembered, forgetful = ClearState(), ClearState()
    for index in range(120):
        view.append(user_message(f"q{index}", timestamp=index))
        block = {"type": "toolCall", "id": f"c{index}", "name": "read", "arguments": {}}
        view.append(assistant_message([block], stop_reason="toolUse", timestamp=index))  # type: ignore[list-item]
        big = rng.random() < 0.15
        view.append(tool_result(f"c{index}", "read", "y = 2\n" * (300 if big else 3)))
        if rng.random() < 0.05:  # another branch: new objects, other contents
            view = [copy.deepcopy(m) for m in view]
            rng.shuffle(view)
        sent, remembered = clear(view, remembered)
        expected, forgetful = clear(view, ClearState(forgetful.boundary))
        assert sent == expected and remembered == forgetful, index
