"""Small builders shared by the agent tests: tools made of plain functions."""

from __future__ import annotations

import asyncio
from typing import Any

from crank.agent.model import AbortSignal
from crank.agent.tools import OnUpdate, Tool, ToolCall, ToolOutput

STRING_ARG = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def echo_tool(name: str = "echo") -> Tool:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        return f"echo: {call.arguments['text']}"

    return Tool(name=name, description="Echo the text.", parameters=STRING_ARG, execute=execute)


def failing_tool(name: str = "explode") -> Tool:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        raise ValueError("kaboom")

    return Tool(name=name, description="Always fails.", parameters=STRING_ARG, execute=execute)


def slow_tool(
    name: str = "slow",
    seconds: float = 30.0,
    started: asyncio.Event | None = None,
    cancelled: list[bool] | None = None,
) -> Tool:
    """Sleeps ``seconds``; appends True to ``cancelled`` if it was cancelled mid-sleep
    (so a test can tell an abort that cancels from one that waits, without a clock)."""

    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> ToolOutput:
        on_update("working...")
        if started is not None:
            started.set()
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            if cancelled is not None:
                cancelled.append(True)
            raise
        return ToolOutput("finished")

    return Tool(name=name, description="Takes a while.", parameters=STRING_ARG, execute=execute)


def gated_tool(gate: asyncio.Event, entered: asyncio.Event, name: str = "gated") -> Tool:
    """Waits for ``gate`` so a test can act while the tool batch is unanswered."""

    async def execute(call: ToolCall, signal: AbortSignal, on_update: OnUpdate) -> str:
        entered.set()
        await gate.wait()
        return "through the gate"

    return Tool(
        name=name, description="Waits for the test.", parameters=STRING_ARG, execute=execute
    )


PAIRS = {
    "agent_start": "agent_end",
    "turn_start": "turn_end",
    "message_start": "message_end",
    "tool_execution_start": "tool_execution_end",
}


def assert_balanced(events: list[dict[str, Any]]) -> None:
    """Pairs nest properly, every one is closed, and agent_settled is last and single."""
    types = [event["type"] for event in events]
    assert types.count("agent_settled") == 1, types
    assert types[-1] == "agent_settled", types
    stack: list[str] = []
    closers = {end: start for start, end in PAIRS.items()}
    for kind in types[:-1]:
        if kind in PAIRS:
            stack.append(kind)
        elif kind in closers:
            assert stack and stack[-1] == closers[kind], (kind, stack, types)
            stack.pop()
    assert stack == [], (stack, types)
