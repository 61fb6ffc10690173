"""How near their floors are find, ls and grep (issue 33 item 3)?

Makes trees of 10,000 and 100,000 small files (20 x 7 folders, ten lines each; a
needle in one file of 50) and prints, per size, the median of several runs of:

- ``find(1)`` over the tree (``-type f -name '*.md'``: no match, the whole walk) and
  a bare ``os.scandir`` walk, the floors;
- Crank's ``find`` with the same pattern (a full walk, nothing returned);
- ``ls(1) -f`` of one folder holding all the files, and Crank's ``ls`` of it;
- ripgrep over the tree, and Crank's ``grep`` on the Python engine and on ripgrep.

then the ratios the goals are about (find/find(1), ls/find(1) of that folder,
Python grep/ripgrep). Each tool runs through ``run_tool``, in this process, as the
agent loop calls it. Run: .venv/bin/python bench/search_floor.py [SMALL [LARGE]]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crank.agent.model import AbortSignal
from crank.agent.tools import Tool, run_tool
from crank.tools import ToolContext
from crank.tools.grep import make_grep
from crank.tools.listing import make_find, make_ls
from crank.tools.search import ripgrep

LINE = "    value = compute(alpha, beta)  # an ordinary line of code\n"
RUNS = 5


def make_tree(root: Path, files: int) -> None:
    for n in range(files):
        folder = root / "tree" / f"pkg{n % 20}" / f"mod{n % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        needle = "    needle_here()\n" if n % 500 == 0 else ""
        (folder / f"file{n}.py").write_text(LINE * 5 + needle + LINE * 5)
    flat = root / "flat"
    flat.mkdir()
    for n in range(files):
        (flat / f"entry{n}.txt").touch()


def median_ms(step: Callable[[], object]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def scandir_walk(top: str) -> int:
    count = 0
    stack = [top]
    while stack:
        with os.scandir(stack.pop()) as scan:
            for entry in scan:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    count += 1
    return count


def tool_ms(tool: Tool, args: dict[str, Any]) -> float:
    call = {"type": "toolCall", "id": "b", "name": tool.name, "arguments": args}

    async def once() -> None:
        message, _ = await run_tool([tool], call, AbortSignal(), lambda _: None)  # type: ignore[arg-type]
        assert not message["isError"], message["content"]

    return median_ms(lambda: asyncio.run(once()))


def run(argv: list[str]) -> None:
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)


def measure(files: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, files)
        ctx = ToolContext(root)
        tree, flat = str(root / "tree"), str(root / "flat")
        rg = ripgrep()
        figures = {
            "find(1)": median_ms(lambda: run(["find", tree, "-type", "f", "-name", "*.md"])),
            "scandir walk": median_ms(lambda: scandir_walk(tree)),
            "crank find": tool_ms(make_find(ctx), {"pattern": "*.md", "path": "tree"}),
            "ls(1) -f": median_ms(lambda: run(["ls", "-f", flat])),
            "find(1) flat": median_ms(lambda: run(["find", flat, "-maxdepth", "1"])),
            "crank ls": tool_ms(make_ls(ctx), {"path": "flat"}),
            "crank grep python": tool_ms(
                make_grep(ctx, "python"), {"pattern": "needle_h", "path": "tree", "limit": 5000}
            ),
        }
        if rg is not None:
            figures["ripgrep"] = median_ms(
                lambda: run([rg, "--no-require-git", "--hidden", "needle_h", tree])
            )
            figures["crank grep rg"] = tool_ms(
                make_grep(ctx, "rg"), {"pattern": "needle_h", "path": "tree", "limit": 5000}
            )
        for name, value in figures.items():
            print(f"{files:7d} files  {name:>18}: {value:8.1f} ms")
        print(f"{files:7d} files  find / find(1): {figures['crank find'] / figures['find(1)']:.2f}")
        ls_ratio = figures["crank ls"] / figures["find(1) flat"]
        print(f"{files:7d} files  ls / find(1) of the folder: {ls_ratio:.2f}")
        if rg is not None:
            grep_ratio = figures["crank grep python"] / figures["ripgrep"]
            print(f"{files:7d} files  Python grep / ripgrep: {grep_ratio:.2f}")


def main() -> None:
    small = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    large = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    for files in (small, large):
        measure(files)


if __name__ == "__main__":
    main()
