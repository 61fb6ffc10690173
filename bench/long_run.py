"""A long run of tool calls on the session path: Harness + SessionLog + Housekeeper,
wired as a workspace wires them, with a replay model that costs nothing itself.

Each turn is one trivial tool call; the session is saved (fsync included) as in the
editor. Prints, at two run lengths, the median over repeats of: ms per turn, the CPU
per turn (``process_time``: fsync waits are not CPU) of the run's first and last tenth
and their ratio, and the whole run's wall time; then the ratio of the longer run's
total to the shorter one's (2.0 is linear in the number of turns, 4.0 quadratic).

The goal (issue 18): the last tenth's CPU per turn at most 3x the first tenth's at
1,000 turns, and 2,000 turns costing close to twice 1,000.

Run: .venv/bin/python bench/long_run.py [--turns 500 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from crank.agent.harness import Harness
from crank.agent.messages import assistant_message
from crank.agent.model import AbortSignal, ModelRequest, StreamEvent
from crank.agent.tools import OnUpdate, Tool, ToolCall
from crank.session import ContextSettings, Housekeeper, SessionLog

NOOP_SCHEMA = {"type": "object", "properties": {}}


async def _noop(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
    return "ok " * 20


NOOP = Tool(name="noop", description="Does nothing.", parameters=NOOP_SCHEMA, execute=_noop)


class ReplayModel:
    """One tool call per reply until the last, with usage like a provider's."""

    api = "bench"
    id = "replay"
    context_window = 10**9

    def __init__(self, turns: int, stamps: list[float]) -> None:
        self.left = turns
        self.stamps = stamps

    async def stream(
        self, request: ModelRequest, signal: AbortSignal
    ) -> AsyncIterator[StreamEvent]:
        self.stamps.append(time.process_time())
        self.left -= 1
        calls: list[Any] = (
            []
            if self.left == 0
            else [{"type": "toolCall", "id": f"c{self.left}", "name": "noop", "arguments": {}}]
        )
        usage = {
            "input": 100 + 30 * len(request.messages),
            "output": 10,
            "cacheRead": 0,
            "cacheWrite": 0,
        }
        message = assistant_message(calls, stop_reason="toolUse" if calls else "stop")
        message["usage"] = usage  # type: ignore[typeddict-item]
        yield {"type": "done", "message": message}


async def one_run(turns: int, folder: Path) -> tuple[float, float, float]:
    stamps: list[float] = []
    log = SessionLog.create(folder, str(folder))
    model = ReplayModel(turns, stamps)
    keeper = Housekeeper(log, model, ContextSettings())
    harness = Harness(
        system="You are a bench.",
        tools=[NOOP],
        model=model,
        build_request=keeper.build_request,
        before_request=keeper.before_request,
        recover_overflow=keeper.recover_overflow,
    )
    harness.subscribe(log.listener())
    keeper.attach(harness)
    started = time.perf_counter()
    await harness.prompt("go").wait()
    wall = time.perf_counter() - started
    log.close()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    tenth = max(1, len(gaps) // 10)
    first = statistics.mean(gaps[:tenth])
    last = statistics.mean(gaps[-tenth:])
    return wall, first, last


def measure(turns: int, repeat: int) -> tuple[float, float, float]:
    results = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="crank-bench-") as folder:
            results.append(asyncio.run(one_run(turns, Path(folder))))
    wall = statistics.median(r[0] for r in results)
    first = statistics.median(r[1] for r in results)
    last = statistics.median(r[2] for r in results)
    return wall, first, last


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs=2, default=[500, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    totals = []
    for turns in args.turns:
        wall, first, last = measure(turns, args.repeat)
        totals.append(wall)
        print(
            f"{turns:>5} turns: {wall / turns * 1000:6.2f} ms/turn wall, CPU/turn first tenth "
            f"{first * 1000:6.2f} ms, last tenth {last * 1000:6.2f} ms, "
            f"ratio {last / first:4.1f} (goal <= 3)"
        )
    small, large = args.turns
    print(
        f"total {large} / {small} turns: {totals[1] / totals[0]:.2f} "
        f"(linear: {large / small:.1f}, quadratic: {(large / small) ** 2:.1f})"
    )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
