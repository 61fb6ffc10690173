"""Context usage and cost, read from the transcript's assistant messages.

Used for ``crank/state`` and the ``usage_update`` event until the context layer's
Housekeeper is wired in: ``contextTokens`` is what the last reply's request and reply
occupied; the other figures are sums over the active branch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from crank.agent.messages import Message


def usage_of(messages: Sequence[Message], context_window: int) -> dict[str, Any]:
    totals = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    context = 0
    for message in messages:
        if message["role"] != "assistant":
            continue
        usage: Any = message.get("usage") or {}
        for key in totals:
            totals[key] += int(usage.get(key, 0) or 0)
        cost += float(usage.get("cost", 0.0) or 0.0)
        spent = sum(int(usage.get(key, 0) or 0) for key in totals)
        if spent:
            context = spent
    return {
        "contextTokens": context,
        "contextWindow": context_window,
        **totals,
        "cost": round(cost, 6),
    }
