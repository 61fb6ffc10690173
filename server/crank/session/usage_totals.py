"""What a session has used: every reply in its file, on every branch, and every summary
call (compactions and branch summaries are paid for too). Summed from the file once,
then kept by adding each reply as it is heard; summed again after an entry written
without an event (``recount``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crank.agent.messages import Usage

from .deferred import reply_usage
from .entries import Entry

COUNTED = ("input", "output", "cacheRead", "cacheWrite")


class UsageTotals:
    def __init__(self) -> None:
        self.counts: dict[str, int] = dict.fromkeys(COUNTED, 0)
        self.cost = 0.0

    @classmethod
    def of(cls, entries: Iterable[Entry], path: Path) -> UsageTotals:
        """The totals of the entries of the file at ``path``. A reply whose message was
        deferred (``deferred.py``) stays so: only its usage is decoded."""
        usages: list[Mapping[str, Any]] = []
        for entry in entries:
            kind = entry["type"]
            if kind == "message":
                message = entry["message"]
                if type(message) is dict:  # decoded: looked at here, for speed
                    if message["role"] == "assistant":
                        usages.append(message["usage"])
                elif (usage := reply_usage(path, entry)) is not None:
                    usages.append(usage)
            elif kind in ("compaction", "branchSummary") and "usage" in entry:
                usages.append(entry["usage"])
        totals = cls()
        totals._add_all(usages)
        return totals

    def add(self, usage: Usage | dict[str, Any]) -> None:
        self._add_all((usage,))

    def _add_all(self, usages: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...]) -> None:
        """Each usage looked at once, all its counts together: a resumed file's replies
        are scattered in memory, and a pass per count paid for every one five times."""
        sums = [0, 0, 0, 0]
        cost = 0.0
        for usage in usages:
            get = usage.get
            for index, key in enumerate(COUNTED):
                sums[index] += int(get(key, 0))
            cost += float(get("cost", 0.0))
        for key, total in zip(COUNTED, sums, strict=True):
            self.counts[key] += total
        self.cost += cost


__all__ = ["UsageTotals"]
