"""How long an abort takes to settle a run, with the scripted model (no network).

Two cases, each a median over ``--repeat`` runs: a stream that has gone silent
(the model hangs mid-reply) and a tool that would sleep for a minute. The target is
well under 200 ms; the tests check that abort cancels rather than waits, this script
says how fast.

Run: .venv/bin/python bench/abort.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from crank.agent.harness import Harness
from crank.agent.model import AbortSignal
from crank.agent.scripted import Reply, ScriptedModel, call, say
from crank.agent.tools import OnUpdate, Tool, ToolCall

SCHEMA = {"type": "object", "properties": {}}


async def silent_stream() -> float:
    model = ScriptedModel([Reply(text="Hello there, I was saying", hang_after=2)], chunk_size=5)
    harness = Harness(system="s", tools=[], model=model)
    run = harness.prompt("go")
    updates = 0
    async for event in run.events():
        updates += event["type"] == "message_update"
        if updates == 2:
            break
    started = time.perf_counter()
    await harness.abort()
    return time.perf_counter() - started


async def slow_tool() -> float:
    entered = asyncio.Event()

    async def sleep(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        entered.set()
        await asyncio.sleep(60)
        return "finished"

    tool = Tool(name="sleep", description="Sleeps.", parameters=SCHEMA, execute=sleep)
    harness = Harness(system="s", tools=[tool], model=ScriptedModel([call("sleep", {}), say("x")]))
    harness.prompt("go")
    await entered.wait()
    started = time.perf_counter()
    await harness.abort()
    return time.perf_counter() - started


async def main(repeat: int) -> None:
    for name, case in (("silent stream", silent_stream), ("slow tool", slow_tool)):
        times = [await case() for _ in range(repeat)]
        print(f"abort during a {name}: median {statistics.median(times) * 1000:.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=20)
    asyncio.run(main(parser.parse_args().repeat))
