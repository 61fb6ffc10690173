"""A long run of tool calls on the session path: Harness + SessionLog + Housekeeper,
wired as a workspace wires them, with a replay model that costs nothing itself.

Each turn is one trivial tool call; the session is saved (fsync included) as in the
editor. Prints, at two run lengths, the median over repeats of: the run's CPU time, the
CPU per turn (``process_time``: fsync waits are not CPU) of the run's first and last
tenth (the median turn of each: a turn the shared machine's other work slowed is not
the run's cost) and their ratio; then the ratio of the longer run's CPU to the shorter
one's. The repeats alternate the two lengths, so a change in the machine's load falls
on both.

Each size runs twice: with usage on every reply (as cloud providers report it) and
without (many local servers report none in a stream), because the estimate takes a
different path without it.

The goal (issue 33): 4,000 turns cost at most 4.4x the CPU of 1,000 (linear within
10%), and the last tenth of a run at most 1.2x the first tenth, with and without usage.

Run: .venv/bin/python bench/long_run.py [--turns 1000 4000] [--repeat 3]
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

    def __init__(self, turns: int, stamps: list[float], *, usage: bool = True) -> None:
        self.left = turns
        self.stamps = stamps
        self.usage = usage

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
        if self.usage:  # many local servers report none in a stream
            message["usage"] = usage  # type: ignore[typeddict-item]
        yield {"type": "done", "message": message}


async def one_run(turns: int, folder: Path, usage: bool) -> tuple[float, float, float]:
    """One run; returns its total CPU time and the mean CPU per turn of its first and
    last tenth (``process_time``: fsync waits are not CPU)."""
    stamps: list[float] = []
    log = SessionLog.create(folder, str(folder))
    model = ReplayModel(turns, stamps, usage=usage)
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
    started = time.process_time()
    await harness.prompt("go").wait()
    cpu = time.process_time() - started
    log.close()
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    tenth = max(1, len(gaps) // 10)
    first = statistics.median(gaps[:tenth])
    last = statistics.median(gaps[-tenth:])
    return cpu, first, last


def measure(sizes: list[int], repeat: int, usage: bool) -> list[tuple[float, float, float]]:
    """Per size, the medians over ``repeat`` runs, the sizes taking turns."""
    results: dict[int, list[tuple[float, float, float]]] = {turns: [] for turns in sizes}
    for _ in range(repeat):
        for turns in sizes:
            with tempfile.TemporaryDirectory(prefix="crank-bench-") as folder:
                results[turns].append(asyncio.run(one_run(turns, Path(folder), usage)))
    medians = []
    for turns in sizes:
        runs = results[turns]
        cpu = statistics.median(r[0] for r in runs)
        first = statistics.median(r[1] for r in runs)
        last = statistics.median(r[2] for r in runs)
        medians.append((cpu, first, last))
    return medians


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, nargs=2, default=[1000, 4000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    small, large = args.turns
    for usage in (True, False):
        label = "with usage" if usage else "without usage"
        totals = []
        for turns, (cpu, first, last) in zip(
            args.turns, measure(args.turns, args.repeat, usage), strict=True
        ):
            totals.append(cpu)
            print(
                f"{label:>13}, {turns:>5} turns: CPU {cpu:6.2f} s ({cpu / turns * 1000:5.2f} "
                f"ms/turn); per turn first tenth {first * 1000:5.2f} ms, last tenth "
                f"{last * 1000:5.2f} ms, last/first {last / first:4.2f} (goal <= 1.2)"
            )
        goal = large / small * 1.1
        print(
            f"{label:>13}: CPU {large} / {small} turns {totals[1] / totals[0]:.2f} "
            f"(linear {large / small:.1f}, goal <= {goal:.1f}; quadratic {(large / small) ** 2:.0f})"
        )
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
