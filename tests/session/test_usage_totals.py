"""The session's usage totals: summed over every reply in the file, whatever the file
spells its counts as (our writer's whole numbers, or another writer's ``3.0``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crank.session.deferred import is_deferred
from crank.session.entries import encode, make_header
from crank.session.estimate import (
    Calibration,
    RunningSize,
    anchor_index,
    context_tokens,
    message_chars,
)
from crank.session.usage_totals import UsageTotals
from crank.workspace.session_slot import open_and_replay


def reply(entry_id: str, usage: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": [], "usage": usage}
    return {"type": "message", "id": entry_id, "parentId": None, "message": message}


def test_every_reply_and_summary_is_counted() -> None:
    entries = [
        reply(f"r{n}", {"input": n, "output": 2, "cacheRead": 1, "cost": 0.25})
        for n in range(1, 101)
    ]
    entries.append(
        {
            "type": "message",
            "id": "u",
            "parentId": "r1",
            "message": {"role": "user", "content": "hi"},
        }
    )
    entries.append(
        {
            "type": "compaction",
            "id": "c",
            "parentId": "u",
            "summary": "s",
            "firstKeptId": "u",
            "usage": {"input": 7, "cacheWrite": 3},
        }
    )
    totals = UsageTotals.of(entries)
    assert totals.counts == {"input": 5050 + 7, "output": 200, "cacheRead": 100, "cacheWrite": 3}
    assert totals.cost == pytest.approx(25.0)


def test_counts_that_are_not_whole_numbers_count_as_int_reads_them() -> None:
    entries = [
        reply("a", {"input": "3", "output": 1.5, "cost": "0.5"}),
        reply("b", {"input": 2, "output": 1.5, "cacheRead": True}),
    ]
    totals = UsageTotals.of(entries)
    assert totals.counts == {"input": 5, "output": 2, "cacheRead": 1, "cacheWrite": 0}
    assert totals.cost == 0.5
    totals.add({"input": 10})
    assert totals.counts["input"] == 15


ODD_REPLIES = [  # another writer's replies: no usage at all, a count in words, a number as
    # text, a cost no float can hold
    {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
    {"role": "assistant", "content": [], "usage": {"input": "many", "output": 2}},
    {"role": "assistant", "content": [], "usage": {"input": "5", "cacheRead": None, "cost": "x"}},
    {"role": "assistant", "content": [], "usage": "none"},
    {"role": "assistant", "content": [], "usage": {"cost": 10**400}},
]


@pytest.mark.parametrize("compacted", [False, True], ids=["never compacted", "compacted"])
def test_a_file_with_odd_usage_opens_and_is_measured(tmp_path: Path, compacted: bool) -> None:
    """Usage is only a figure: a reply another writer spelled without one, or with a count
    that is not a number, must not stop the session from opening or its next request from
    being measured. What can be counted is; the rest counts 0."""
    good = {
        "role": "assistant",
        "content": [],
        "usage": {"input": 7, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": 0.5},
    }
    messages = [
        {"role": "user", "content": "hi"},
        *ODD_REPLIES,
        good,
        {"role": "user", "content": "go"},
    ]
    entries = []
    for number, message in enumerate(messages):
        parent = f"m{number - 1}" if number else None
        entries.append(
            {
                "type": "message",
                "id": f"m{number}",
                "parentId": parent,
                "timestamp": number,
                "message": message,
            }
        )
    if compacted:  # everything before the last message deferred
        last = entries[-1]["id"]
        entries.append(
            {
                "type": "compaction",
                "id": "c",
                "parentId": last,
                "timestamp": 9,
                "summary": "s",
                "firstKeptId": last,
                "tokensBefore": 1,
            }
        )
    path = tmp_path / "odd.jsonl"
    path.write_bytes(encode(make_header("odd", str(tmp_path))) + b"".join(map(encode, entries)))
    log, transcript, totals = open_and_replay(path)
    try:
        held = [e["message"] for e in log.entries() if e["type"] == "message"]
        assert any(map(is_deferred, held))  # the open made the index and read its rows
        assert totals.counts == {"input": 12, "output": 3, "cacheRead": 0, "cacheWrite": 0}
        assert totals.cost == 0.5
        if not compacted:  # the whole transcript, odd replies included, is measured
            tokens = context_tokens(transcript, 0, Calibration())
            assert tokens >= 7 and anchor_index(transcript) == messages.index(good)
            running = RunningSize(message_chars)
            assert context_tokens(transcript, 0, Calibration(), running=running) == tokens
    finally:
        log.close()
