"""Helpers for the vendors tests (importable by name; conftest only holds fixtures)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crank.agent.messages import user_message  # noqa: E402
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent  # noqa: E402
from crank.vendors.transport import StreamingModel  # noqa: E402

KEY = "sk-test-very-secret-key-0123456789"
FIXTURES = Path(__file__).parent / "fixtures"
MakeModel = Callable[..., StreamingModel]


def simple_request(text: str = "hi", **kwargs: Any) -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=[user_message(text, 1)], **kwargs)


async def collect(
    model: StreamingModel, request: ModelRequest | None = None, signal: AbortSignal | None = None
) -> list[StreamEvent]:
    events = [e async for e in model.stream(request or simple_request(), signal or AbortSignal())]
    await model.aclose()
    return events


def done_message(events: list[StreamEvent]) -> dict[str, Any]:
    assert events[-1]["type"] == "done"
    assert [e["type"] for e in events].count("done") == 1
    return dict(events[-1]["message"])  # type: ignore[typeddict-item]


def joined(events: list[StreamEvent], kind: str, index: int) -> str:
    return "".join(
        e["text"]  # type: ignore[typeddict-item]
        for e in events
        if e["type"] == kind and e["contentIndex"] == index  # type: ignore[typeddict-item]
    )
