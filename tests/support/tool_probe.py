"""Run one tool call in a fresh process and report its peak memory.

``python tool_probe.py ROOT TOOL ARGS_JSON|@FILE [ENGINE]`` calls the real tool through
``run_tool`` on a workspace at ROOT and prints one JSON line: ``hwm`` (this process's
peak resident memory, VmHWM, in kB), ``child`` (the largest child's, e.g. ripgrep),
``seconds``, ``isError``, ``content`` and ``details``. A process of its own per call,
so one call's peak never hides in another's. Used by the memory tests and by
bench/big_files.py.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve().parents[2] / "server"


async def call_tool(
    root: Path, tool: str, args: dict[str, Any], engine: str | None
) -> tuple[dict[str, Any], Any, float]:
    from crank.agent.model import AbortSignal
    from crank.agent.tools import run_tool
    from crank.tools import ToolContext, standard_tools
    from crank.tools.grep import make_grep

    ctx = ToolContext(root, output_dir=root.parent / f".{root.name}-outputs")
    tools = [make_grep(ctx, engine=engine) if t.name == "grep" else t for t in standard_tools(ctx)]
    call = {"type": "toolCall", "id": "probe", "name": tool, "arguments": args}
    start = time.perf_counter()
    message, details = await run_tool(tools, call, AbortSignal(), lambda _: None)  # type: ignore[arg-type]
    return dict(message), details, time.perf_counter() - start


def peak_kb() -> int:
    status = Path("/proc/self/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))


def main(root: str, tool: str, raw: str, engine: str | None) -> None:
    """``raw`` is the arguments as JSON, or ``@file`` holding them (for big contents)."""
    if raw.startswith("@"):
        raw = Path(raw[1:]).read_text()
    message, details, elapsed = asyncio.run(call_tool(Path(root), tool, json.loads(raw), engine))
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(
        json.dumps(
            {
                "hwm": peak_kb(),
                "child": child,
                "seconds": elapsed,
                "isError": message["isError"],
                "content": message["content"],
                "details": details,
            }
        )
    )


if __name__ == "__main__":
    sys.path.insert(0, str(SERVER))
    main(sys.argv[1], sys.argv[2], sys.argv[3], (sys.argv[4:5] or [""])[0] or None)
