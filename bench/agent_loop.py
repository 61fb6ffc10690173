"""The loop's own overhead, with the scripted model (no network, no tools).

Prints, as medians over several runs:
- per streamed delta, for one reply of 10,000 and of 100,000 deltas (the ratio of the
  two totals must stay under 12 to call the cost linear);
- per turn, for a run of N turns that each call a no-op tool.

Run: .venv/bin/python bench/agent_loop.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

from crank.agent.harness import Harness
from crank.agent.messages import assistant_message
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent
from crank.agent.scripted import Reply, ScriptedModel
from crank.agent.tools import OnUpdate, Tool, ToolCall

NOOP_SCHEMA = {"type": "object", "properties": {}}


async def _noop(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
    return "ok"


NOOP = Tool(name="noop", description="Does nothing.", parameters=NOOP_SCHEMA, execute=_noop)


async def time_stream(deltas: int) -> float:
    model = ScriptedModel([Reply(text="x" * deltas)], chunk_size=1)
    harness = Harness(system="s", tools=[], model=model)
    started = time.perf_counter()
    run = harness.prompt("go")
    count = 0
    async for event in run.events():
        if event["type"] == "message_update":
            count += 1
    await run.wait()
    elapsed = time.perf_counter() - started
    assert count == deltas, count
    return elapsed


class ReplayModel:
    """Plays canned replies without measuring the request, so the figure is the loop's
    (the scripted model renders every request to count tokens, which is its own cost)."""

    api = "bench"
    id = "replay"
    context_window = 10**9

    def __init__(self, turns: int) -> None:
        self.left = turns

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        self.left -= 1
        calls: list[Any] = (
            []
            if self.left == 0
            else [{"type": "toolCall", "id": f"c{self.left}", "name": "noop", "arguments": {}}]
        )
        yield {
            "type": "done",
            "message": assistant_message(calls, stop_reason="toolUse" if calls else "stop"),
        }


async def time_turns(turns: int) -> float:
    harness = Harness(system="s", tools=[NOOP], model=ReplayModel(turns))
    started = time.perf_counter()
    await harness.prompt("go").wait()
    return time.perf_counter() - started


def median_of(repeat: int, make: Any) -> float:
    return float(statistics.median(asyncio.run(make()) for _ in range(repeat)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    small = median_of(args.repeat, lambda: time_stream(10_000))
    large = median_of(args.repeat, lambda: time_stream(100_000))
    print(
        f"stream 10,000 deltas:  {small * 1000:8.1f} ms total, {small / 10_000 * 1e6:6.2f} us/delta"
    )
    print(
        f"stream 100,000 deltas: {large * 1000:8.1f} ms total, {large / 100_000 * 1e6:6.2f} us/delta"
    )
    print(f"ratio 100k/10k: {large / small:.1f} (linear if <= 12)")
    for turns in (200, 2000):
        elapsed = median_of(args.repeat, lambda turns=turns: time_turns(turns))
        print(
            f"{turns} turns with one tool call each: {elapsed * 1000:8.1f} ms, {elapsed / turns * 1e6:7.1f} us/turn"
        )


if __name__ == "__main__":
    main()
