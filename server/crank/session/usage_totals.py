"""What a session has used: every reply in its file, on every branch, and every summary
call (compactions and branch summaries are paid for too). Summed from the file once,
then kept by adding each reply as it is heard; summed again after an entry written
without an event (``recount``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from crank.agent.messages import Usage

from .entries import Entry

COUNTED = ("input", "output", "cacheRead", "cacheWrite")


class UsageTotals:
    def __init__(self) -> None:
        self.counts: dict[str, int] = dict.fromkeys(COUNTED, 0)
        self.cost = 0.0

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> UsageTotals:
        totals = cls()
        for entry in entries:
            message = entry.get("message")
            if entry["type"] == "message" and message and message["role"] == "assistant":
                totals.add(message["usage"])
            elif entry["type"] in ("compaction", "branchSummary") and "usage" in entry:
                totals.add(entry["usage"])
        return totals

    def add(self, usage: Usage | dict[str, Any]) -> None:
        given: dict[str, Any] = dict(usage)
        for key in COUNTED:
            self.counts[key] += int(given.get(key, 0))
        self.cost += float(given.get("cost", 0.0))


__all__ = ["UsageTotals"]
