"""run_tool: one call in, exactly one result out, on every path; the output budget."""

from __future__ import annotations

import asyncio
from typing import Any

from crank.agent.messages import ToolCallBlock
from crank.agent.model import AbortSignal
from crank.agent.tools import (
    MAX_BYTES,
    MAX_LINES,
    Tool,
    ToolCall,
    ToolError,
    fit_to_budget,
    run_tool,
    truncate,
)

from .helpers import STRING_ARG, echo_tool, slow_tool


def call(name: str, arguments: Any) -> ToolCallBlock:
    return {"type": "toolCall", "id": "c1", "name": name, "arguments": arguments}


def noop(_: str) -> None:
    pass


async def test_tool_error_message_is_passed_as_is() -> None:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: Any) -> str:
        raise ToolError("file not found: x.py")

    tool = Tool("t", "d", STRING_ARG, execute)
    result, _ = await run_tool([tool], call("t", {"text": "x"}), AbortSignal(), noop)
    assert result["isError"] and result["content"] == "file not found: x.py"


async def test_non_object_arguments_are_refused() -> None:
    result, _ = await run_tool([echo_tool()], call("echo", ["x"]), AbortSignal(), noop)
    assert result["isError"] and "JSON object" in result["content"]


async def test_a_cancelled_tool_under_abort_returns_an_aborted_result() -> None:
    signal = AbortSignal()
    task = asyncio.create_task(run_tool([slow_tool()], call("slow", {"text": "x"}), signal, noop))
    await asyncio.sleep(0.01)
    signal.abort()
    task.cancel()
    result, _ = await task
    assert result["isError"] and "Aborted" in result["content"]


async def test_an_oversized_output_is_cut_to_the_budget_with_a_hint() -> None:
    async def execute(call: ToolCall, signal: AbortSignal, on_update: Any) -> str:
        return "\n".join(f"line {i}" for i in range(5000))

    tool = Tool("t", "d", STRING_ARG, execute, keep="tail")
    result, _ = await run_tool([tool], call("t", {"text": "x"}), AbortSignal(), noop)
    lines = result["content"].split("\n")
    assert lines[0] == "line 3000"
    assert "truncated" in lines[-1] and "last 2000 of 5000 lines" in lines[-1]


def test_truncate_keeps_the_head_for_files_and_the_tail_for_logs() -> None:
    text = "\n".join(str(i) for i in range(MAX_LINES + 10))
    head = truncate(text, "head")
    tail = truncate(text, "tail")
    assert head.truncated and head.text.split("\n")[0] == "0" and head.kept_lines == MAX_LINES
    assert tail.text.split("\n")[-1] == str(MAX_LINES + 9)


def test_truncate_counts_utf8_bytes_not_characters() -> None:
    line = "é" * 100  # 200 bytes
    text = "\n".join([line] * 400)  # ~80 KB in UTF-8, 40 K characters
    cut = truncate(text, "head")
    assert cut.truncated
    assert len(cut.text.encode()) <= MAX_BYTES


def test_a_single_huge_line_is_cut_not_dropped() -> None:
    cut = truncate("x" * (MAX_BYTES * 2), "tail")
    assert cut.truncated and len(cut.text) == MAX_BYTES


def test_text_within_budget_is_untouched() -> None:
    assert fit_to_budget("small", "head", "hint") == "small"
