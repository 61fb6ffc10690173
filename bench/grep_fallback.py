"""How fast is grep's pure-Python fallback (and ripgrep, if installed)?

Generates two trees (N and 4N files of ~60 lines each) in a temp dir and prints the
median of several runs per engine, so a linear cost shows as roughly 4x.
Run: .venv/bin/python bench/grep_fallback.py [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from crank.agent.model import AbortSignal
from crank.agent.tools import run_tool
from crank.tools import ToolContext
from crank.tools.grep import make_grep
from crank.tools.search import ripgrep

LINE = "    value = compute(alpha, beta)  # an ordinary line of code\n"


def make_tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / f"pkg{n % 20}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        body = LINE * 30 + ("    needle_here()\n" if n % 50 == 0 else "") + LINE * 30
        (folder / f"file{n}.py").write_text(body)
    (root / ".gitignore").write_text("*.tmp\n")


async def once(root: Path, engine: str) -> float:
    tool = make_grep(ToolContext(root), engine=engine)
    call = {"type": "toolCall", "id": "b", "name": "grep", "arguments": {"pattern": "needle_h"}}
    start = time.perf_counter()
    message, _ = await run_tool([tool], call, AbortSignal(), lambda _: None)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - start
    assert not message["isError"], message["content"]
    return elapsed


async def main(base: int) -> None:
    engines = ["python"] + (["rg"] if ripgrep() else [])
    for files in (base, base * 4):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            make_tree(root, files)
            for engine in engines:
                times = [await once(root, engine) for _ in range(5)]
                median_ms = statistics.median(times) * 1000
                print(f"{engine:>6}: {files:6d} files  median {median_ms:8.1f} ms")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 500))
