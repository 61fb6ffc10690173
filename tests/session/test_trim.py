"""The ``trim`` policy: past the limit the oldest whole turns after the task go, one note
says so, no call is parted from its results, and the same record and state build the
same request (the incremental view against a full rebuild, property-style)."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crank.agent.loop import RunPrompt
from crank.agent.messages import Message, user_message
from crank.agent.model import ModelRequest
from crank.agent.scripted import ScriptedModel, estimate_tokens, render_request
from crank.agent.view import build_view, is_valid_view, repair_view
from crank.session import SessionLog
from crank.session.housekeeping import ContextSettings, Housekeeper
from crank.session.policies import (
    POLICY_NAMES,
    Policy,
    TrimState,
    apply_trim,
    cache_marks,
    task_end,
    trim_old_turns,
)

from ..agent.test_view import records
from .context_helpers import rig, write_files
from .test_policies import read_turn, size, tokens

TRIM_MARK = "earlier turn"


def view_of(turns: int) -> list[Message]:
    view: list[Message] = [user_message("GOAL: review every file", timestamp=0)]
    for index in range(turns):
        view.extend(read_turn(index, 100))
        view.append(user_message(f"and f{index + 1}.py?", timestamp=index))
    return view


def trim(view: list[Message], state: TrimState) -> tuple[list[Message], TrimState]:
    return trim_old_turns(view, state, tokens=tokens, limit=2_000, keep_tokens=600, size=size)


def notes_in(sent: list[Message]) -> list[Message]:
    return [m for m in sent if m["role"] == "user" and TRIM_MARK in m["content"]]


def test_trim_is_a_named_policy_defined_once() -> None:
    assert "trim" in POLICY_NAMES
    assert Policy.named("trim") == Policy(clear=False, compact=False, cache=True, trim=True)


def test_nothing_is_trimmed_under_the_limit() -> None:
    view = view_of(3)
    assert trim(view, TrimState()) == (view, TrimState())


def test_the_oldest_turns_go_the_task_stays_and_a_note_says_how_many() -> None:
    view = view_of(20)
    before = copy.deepcopy(view)
    sent, state = trim(view, TrimState())
    assert view == before  # the record's view is not changed
    assert state.boundary > task_end(view) and tokens(sent) <= 2_000
    assert sent[0] == view[0]  # the task
    [note] = notes_in(sent)
    assert sent[1] is note
    dropped = view[1 : state.boundary]
    turns = sum(1 for m in dropped if m["role"] == "assistant")
    assert f"{turns} earlier turns" in note["content"]
    assert f"{len(dropped)} messages" in note["content"]
    assert "again" in note["content"]  # re-read, do not conclude you never looked
    assert sent[2:] == view[state.boundary :]
    assert trim(view, TrimState()) == (sent, state)  # same input, same output


def test_a_cut_never_parts_a_call_from_its_results() -> None:
    view = view_of(20)
    for keep in range(0, 3_000, 37):
        sent, state = trim_old_turns(
            view, TrimState(), tokens=tokens, limit=0, keep_tokens=keep, size=size
        )
        assert is_valid_view(sent)
        assert not repair_view(sent)[1]  # tool-history repair has nothing to repair
        assert build_view(sent) == sent
        if state.boundary:
            assert view[state.boundary]["role"] != "toolResult"


def test_the_newest_turn_is_always_kept() -> None:
    view = view_of(4)
    sent, state = trim_old_turns(
        view, TrimState(), tokens=tokens, limit=0, keep_tokens=0, size=size
    )
    assert sent[-1] == view[-1] and sent[0] == view[0]
    assert state.boundary == len(view) - 1


def test_the_boundary_moves_seldom_so_prefixes_stay_shared() -> None:
    view = view_of(40)
    state = TrimState()
    boundaries = []
    for end in range(5, len(view) + 1, 4):
        _, state = trim(view[:end], state)
        boundaries.append(state.boundary)
    moves = sum(1 for a, b in itertools.pairwise(boundaries) if a != b)
    assert boundaries == sorted(boundaries) and 0 < moves < len(boundaries) // 3


def test_a_boundary_that_is_not_a_turn_start_of_this_view_trims_nothing() -> None:
    view = view_of(3)
    results = [i for i, m in enumerate(view) if m["role"] == "toolResult"]
    assert apply_trim(view, results[1]) == view
    assert apply_trim(view, len(view) + 5) == view
    assert apply_trim([], 3) == []


# -- the Housekeeper: incremental against a full rebuild --------------------------------

PROMPT = RunPrompt.of("You review files.", [])


def keeper_for(tmp: Path, window: int) -> Housekeeper:
    log = SessionLog.create(tmp / "sessions", cwd=str(tmp))
    return Housekeeper(
        log, ScriptedModel([], context_window=window), ContextSettings(policy="trim")
    )


def padded(record: list[Message]) -> list[Message]:
    """Bigger messages, so a small window is passed within a dozen of them."""
    out: list[Message] = []
    for message in record:
        if message["role"] == "user":
            out.append({**message, "content": message["content"] + " pad" * 30})
        elif message["role"] == "toolResult":
            out.append({**message, "content": message["content"] + " data" * 40})
        else:
            out.append(message)
    return out


def request_bytes(request: ModelRequest) -> str:
    return json.dumps(
        {
            "system": request.system,
            "tools": request.tools,
            "messages": request.messages,
            "marks": request.cache_marks,
        },
        sort_keys=True,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), records(), st.integers(300, 900))
def test_trimming_a_growing_record_equals_a_full_rebuild(
    first: list[Message], second: list[Message], window: int
) -> None:
    """Principle 5: at every length the incremental keeper sends exactly what the pure
    policy gives on a full repair of the record with the keeper's state, the view it
    sends needs no repair, and a fresh keeper that saw the same requests sends the same
    bytes."""
    import asyncio
    import tempfile

    record = padded(first + second)

    async def check() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            growing = keeper_for(Path(tmp) / "a", window)
            sent_bytes = []
            for length in range(1, len(record) + 1):
                prefix = record[:length]
                request = await growing.build_request(prefix, PROMPT)
                boundary = growing._view._trim.boundary
                expected = apply_trim(repair_view(prefix)[0], boundary)
                assert request.messages == expected
                assert request.cache_marks == cache_marks(expected)
                assert is_valid_view(request.messages)
                assert build_view(request.messages) == request.messages
                sent_bytes.append(request_bytes(request))
            again = keeper_for(Path(tmp) / "b", window)
            for length in range(1, len(record) + 1):
                request = await again.build_request(record[:length], PROMPT)
                assert request_bytes(request) == sent_bytes[length - 1]
            growing._log.close()
            again._log.close()

    asyncio.run(check())


async def test_a_long_run_under_trim_stays_under_the_window(tmp_path: Path) -> None:
    """Through a real Harness: every request fits, no summary is ever asked for, the
    task is in every request, and a trimmed request says turns were removed."""
    made = rig(tmp_path, window=4_000, settings=ContextSettings(policy="trim"))
    names = write_files(tmp_path / "project", 30, size=1_500)
    outcomes = []
    for index, name in enumerate(names):
        goal = "GOAL: review every file. " if index == 0 else ""
        outcomes.append(await made.harness.prompt(f"{goal}READ {name}").wait())
    assert outcomes == ["stop"] * len(names)
    assert made.summary_model.requests == []  # trim never summarises
    assert not made.compactions()
    for request in made.agent.requests:
        assert estimate_tokens(render_request(request)) <= 4_000
        assert request.messages[0]["content"].startswith("GOAL: review every file.")
        assert is_valid_view(request.messages)
    trimmed = [r for r in made.agent.requests if notes_in(list(r.messages))]
    assert trimmed and trimmed[-1] is made.agent.requests[-1]
    assert len(made.log.replay()) > len(made.agent.requests[-1].messages)  # the log keeps all
    made.log.close()


async def test_an_overflow_under_trim_trims_harder_and_retries_once(tmp_path: Path) -> None:
    from crank.agent.scripted import Reply

    refused = {"done": False}

    def refuse_once(request: ModelRequest) -> Reply:
        if not refused["done"] and len(request.messages) > 6:
            refused["done"] = True
            return Reply(error="prompt is too long: context window exceeded", error_kind="overflow")
        return Reply(text="ok")

    made = rig(
        tmp_path,
        window=100_000,
        replies=[refuse_once] * 50,
        settings=ContextSettings(policy="trim", keep_recent_tokens=120),
    )
    for index in range(6):
        assert await made.harness.prompt(f"question {index} " + "pad " * 50).wait() == "stop"
    assert refused["done"]
    retried = made.agent.requests[-1]
    assert notes_in(list(retried.messages))
    assert retried.messages[0]["content"].startswith("question 0")
    assert not made.compactions()
    made.log.close()
