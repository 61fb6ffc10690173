"""Compacting a history that was never compacted costs what the summary can hold, not
what the history holds (issue 33).

A session under the ``none``, ``trim`` or ``clear`` policy, or one another writer made,
can reach its first compaction with 50,000 messages. Quoting every one of them at every
clip step and running the identifier patterns over every result took 11 s, on the event
loop. Time is no measure here, so these count work: the messages quoted and the texts
searched are the same for a history four times longer. The quoting must read as it did
(a reference is spelled out below), and both passes run in a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crank.agent.messages import Message
from crank.agent.scripted import ScriptedModel, say
from crank.session import SessionLog, branch_summary, compaction, compaction_summary, identifiers
from crank.session.branch_summary import clip, render_message
from crank.session.compaction_summary import CLIP_STEPS, build_request
from crank.session.identifiers import HEADING, MAX_IDENTIFIERS, found_in, with_identifiers

from .conftest import ask, call


def _result(call_id: str, text: str) -> Message:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "bash",
        "content": text,
        "isError": False,
        "timestamp": 1,
    }  # type: ignore[typeddict-item]


def history(turns: int) -> list[Message]:
    """A run of tool calls whose results each report identifiers of their own."""
    messages: list[Message] = [ask("fix the build")]
    for n in range(turns):
        messages.append(call("bash", {"command": f"make step{n}"}, f"c{n}"))
        messages.append(
            _result(f"c{n}", f"src/mod{n}/main.py: error E{1000 + n % 9000} see #{n}\n" * 3)
        )
    return messages


def eager_quote(messages: Sequence[Message], room: int) -> str:
    """What ``_quote_within`` promises, spelled the plain way: every message quoted at
    each clip step until all of them fit, else the newest that fit at the last step and
    a count of the rest."""
    for limit in CLIP_STEPS:
        quoted = "\n\n".join(render_message(m, limit) for m in messages)
        if len(quoted) <= room:
            return quoted
    parts = [render_message(m, CLIP_STEPS[-1]) for m in messages]
    kept: list[str] = []
    total = 0
    for part in reversed(parts):
        if total + len(part) + 2 > room and kept:
            kept.append(f"[... {len(parts) - len(kept)} earlier messages left out]")
            break
        kept.append(part if total + len(part) <= room else clip(part, max(room - total, 0)))
        total += len(part) + 2
    return "\n\n".join(reversed(kept))


_texts = st.text(alphabet="ab \n/.#E1é", max_size=3_000)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_texts, max_size=12),
    room=st.integers(min_value=0, max_value=20_000),
)
def test_quoting_newest_first_reads_as_quoting_everything(texts: list[str], room: int) -> None:
    messages: list[Message] = []
    for n, text in enumerate(texts):
        messages.append(ask(text) if n % 2 == 0 else _result(f"c{n}", text))
    assert compaction_summary._quote_within(messages, room) == eager_quote(messages, room)


class _Counted:
    """Counts the messages quoted and the texts searched while it is installed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.quoted = 0
        self.searched = 0
        render, found = compaction_summary.render_message, identifiers._found

        def counted_render(message: Message, limit: int = branch_summary.MAX_PART_CHARS) -> str:
            self.quoted += 1
            return render(message, limit)

        def counted_found(text: str) -> list[str]:
            self.searched += 1
            return found(text)

        monkeypatch.setattr(compaction_summary, "render_message", counted_render)
        monkeypatch.setattr(identifiers, "_found", counted_found)


class _Window:
    api = "test"
    id = "window"
    context_window = 20_000


def _work(messages: list[Message], monkeypatch: pytest.MonkeyPatch) -> tuple[int, int, str]:
    counted = _Counted(monkeypatch)
    request = build_request(_Window(), messages, previous=None)  # type: ignore[arg-type]
    quoted = counted.quoted
    summary = "We fixed the build in src/mod1999/main.py."
    text = with_identifiers(summary, found_in(messages))
    monkeypatch.undo()
    assert request.messages
    return quoted, counted.searched, text


def test_the_work_of_a_compaction_does_not_follow_the_length_of_the_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    short = _work(history(2_000), monkeypatch)
    long = _work(history(8_000), monkeypatch)
    assert short[0] == long[0] < len(history(2_000))  # quoted: what the room holds
    # searched: every call's arguments (small, and the agent's own), then results from
    # the newest back only until the cap of missing values is passed
    assert long[1] - short[1] == 6_000
    assert long[1] < 8_000 + 100
    heading = next(line for line in long[2].splitlines() if line.startswith(HEADING))
    assert heading == f"{HEADING} (older ones not listed)"
    listed = long[2].split(heading)[1].strip().splitlines()
    assert len(listed) == MAX_IDENTIFIERS and listed[0] == "- src/mod7999/main.py"  # newest first


def test_identifiers_are_read_only_until_the_cap_is_passed() -> None:
    read: list[str] = []

    def offered() -> Iterator[str]:
        for n in range(1_000):
            read.append(f"id{n}")
            yield f"id{n}"
            yield f"id{n}"  # a repeat is no new loss

    text = with_identifiers("the summary keeps id0 and id1", offered())
    assert len(read) == 2 + MAX_IDENTIFIERS + 1
    assert text.count("\n- ") == MAX_IDENTIFIERS and "- id2\n" in text and "- id0\n" not in text
    few = with_identifiers("the summary", iter(["a/b.py", "a/b.py", "#7"]))
    assert few.endswith(f"{HEADING}\n- a/b.py\n- #7")


async def test_a_compaction_quotes_and_searches_off_the_event_loop(
    log: SessionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    for message in history(40):
        await log.append_message(message)
    threads: dict[str, bool] = {}
    quote, keep = compaction.build_request, compaction.with_identifiers

    def noted_quote(*args: Any, **options: Any) -> Any:
        threads["quote"] = threading.current_thread() is threading.main_thread()
        return quote(*args, **options)

    def noted_keep(*args: Any) -> Any:
        threads["identifiers"] = threading.current_thread() is threading.main_thread()
        return keep(*args)

    monkeypatch.setattr(compaction, "build_request", noted_quote)
    monkeypatch.setattr(compaction, "with_identifiers", noted_keep)
    outcome = await compaction.compact_log(
        log,
        ScriptedModel([say("A summary.")]),
        keep_tokens=50,
        size=lambda message: 10,
        tokens_before=1_000,
    )
    assert outcome.compacted
    assert threads == {"quote": False, "identifiers": False}
    assert HEADING in outcome.summary  # the values it lost were searched for and kept
