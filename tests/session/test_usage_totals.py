"""The session's usage totals: summed over every reply in the file, whatever the file
spells its counts as (our writer's whole numbers, or another writer's ``3.0``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crank.session.usage_totals import UsageTotals


def reply(entry_id: str, usage: dict[str, Any]) -> dict[str, Any]:
    message = {"role": "assistant", "content": [], "usage": usage}
    return {"type": "message", "id": entry_id, "parentId": None, "message": message}


def test_every_reply_and_summary_is_counted(tmp_path: Path) -> None:
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
    totals = UsageTotals.of(entries, tmp_path / "s.jsonl")
    assert totals.counts == {"input": 5050 + 7, "output": 200, "cacheRead": 100, "cacheWrite": 3}
    assert totals.cost == pytest.approx(25.0)


def test_counts_that_are_not_whole_numbers_count_as_int_reads_them(tmp_path: Path) -> None:
    entries = [
        reply("a", {"input": "3", "output": 1.5, "cost": "0.5"}),
        reply("b", {"input": 2, "output": 1.5, "cacheRead": True}),
    ]
    totals = UsageTotals.of(entries, tmp_path / "s.jsonl")
    assert totals.counts == {"input": 5, "output": 2, "cacheRead": 1, "cacheWrite": 0}
    assert totals.cost == 0.5
    totals.add({"input": 10})
    assert totals.counts["input"] == 15
