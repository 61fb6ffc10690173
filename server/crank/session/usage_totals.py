"""What a session has used: every reply in its file, on every branch, and every summary
call (compactions and branch summaries are paid for too). Summed from the file once,
then kept by adding each reply as it is heard; summed again after an entry written
without an event (``recount``). A compaction records the totals of every line before
it (``as_usage``, read back by ``recorded``), so an open can take them from there
(``SessionLog.usage_totals``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
        """The totals of a file's entries (``usage_of`` each). A reply whose message
        was deferred (``deferred.py``) stays so: its usage was read with its role. A
        reply another writer left without a usage object counts nothing."""
        totals = cls()
        totals._add_all([usage for usage in map(usage_of, entries) if usage is not None])
        return totals

    @classmethod
    def recorded(cls, value: object) -> UsageTotals | None:
        """Totals a file recorded (a compaction's ``usageBefore``, as ``as_usage`` spells
        them), or None when ``value`` is not that: each count a whole number, not
        negative, the cost a finite number, not negative. A reader that gets None sums
        the entries instead."""
        if type(value) is not dict or value.keys() != {*COUNTED, "cost"}:
            return None
        counts = [value[key] for key in COUNTED]
        cost = value["cost"]
        if any(type(count) is not int or count < 0 for count in counts):
            return None
        if type(cost) not in (int, float) or not 0 <= cost < float("inf"):
            return None
        try:
            spent = float(cost)  # an integer past a float's range cannot be one
        except OverflowError:
            return None
        totals = cls()
        totals.counts = dict(zip(COUNTED, counts, strict=True))
        totals.cost = spent
        return totals

    def as_usage(self) -> dict[str, Any]:
        """The totals as a usage object (the four counts and ``cost``), as a compaction
        entry records them in ``usageBefore``."""
        return {**self.counts, "cost": self.cost}

    def add_entries(self, entries: Iterable[Entry]) -> None:
        """Add what ``entries`` used, as ``of`` sums it."""
        self.add_totals(UsageTotals.of(entries))

    def add_totals(self, more: UsageTotals) -> None:
        """Add what another sum counted."""
        for key in COUNTED:
            self.counts[key] += more.counts[key]
        self.cost += more.cost

    def add(self, usage: Usage | Mapping[str, Any]) -> None:
        self._add_all((usage,))

    def _add_all(self, usages: list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...]) -> None:
        """Each count summed in a comprehension per count: a resumed file has tens of
        thousands of replies, and a Python loop over them, an ``int()`` for each count,
        cost four times as much. A count that is not a whole number (another writer's
        ``3.0``, ``"3"`` or ``"many"``) has every usage counted one at a time by
        ``usage_count``."""
        for key in COUNTED:
            try:
                total = sum([usage.get(key, 0) for usage in usages])
            except TypeError:
                total = None
            if type(total) is not int:
                total = sum(usage_count(usage, key) for usage in usages)
            self.counts[key] += total
        try:  # the same, for the cost: a comprehension unless one is not a number
            cost = float(sum([usage.get("cost", 0.0) for usage in usages]))
        except (TypeError, OverflowError):
            cost = sum(usage_cost(usage) for usage in usages)
        self.cost += cost


def usage_of(entry: Entry) -> Mapping[str, Any] | None:
    """What one entry says it used: a reply's usage object, or a compaction's or branch
    summary's (the summary call was paid for too); None for any other entry, and for
    one whose usage is not an object."""
    kind = entry["type"]
    if kind == "message":
        message = entry["message"]
        if type(message) is dict:
            usage = message.get("usage") if message["role"] == "assistant" else None
        else:  # deferred: read with its role (``deferred.py``)
            usage = message.usage
    elif kind in ("compaction", "branchSummary"):
        usage = entry.get("usage")
    else:
        return None
    return usage if type(usage) is dict else None


def usage_count(usage: object, key: str) -> int:
    """One count of a reply's usage as a whole number, as ``int()`` reads it, or 0 when
    the file gives none it can read (no usage object, no such count, ``"many"``): a
    figure another writer spelled oddly must not stop a session from opening."""
    value = usage.get(key, 0) if isinstance(usage, dict) else 0
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        return 0


def usage_cost(usage: object) -> float:
    """A reply's cost in US dollars, 0.0 when the file gives none it can read (an
    integer past a float's range, another writer's ``1`` and 400 zeros, included)."""
    value = usage.get("cost", 0.0) if isinstance(usage, dict) else 0.0
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return 0.0


__all__ = ["UsageTotals", "usage_cost", "usage_count", "usage_of"]
