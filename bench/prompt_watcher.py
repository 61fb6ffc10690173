"""Figures for the prompt watcher (issue 6). Prints them; asserts nothing.

1. Latency from writing AGENTS.md to the rebuilt prompt being announced (median of many
   writes; target: under 250 ms).
2. Watcher start-up time and inotify watches held by this process, on generated trees
   of two sizes (a large node_modules, a .git, nested sources), for PromptWatcher and,
   for comparison, a plain recursive watchfiles watch of the same root. Watches are
   counted from /proc/self/fdinfo (one ``inotify wd:`` line per watch).

Generated trees live in a temporary directory that is deleted at the end.

    .venv/bin/python bench/prompt_watcher.py [--writes 40] [--files 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import statistics
import tempfile
import time
from pathlib import Path

from watchfiles import awatch

from crank.prompt import PromptLocations, PromptWatcher, SystemPrompt, compute_prompt
from crank.prompt.watcher import inotify_watch_count

DAY = datetime.date(2026, 3, 14)


def generate_tree(root: Path, files: int) -> Path:
    """About ``files`` files: 75% under node_modules, 10% under .git, the rest sources.
    Returns the working directory (three levels down in the sources)."""
    budget = {"node_modules": files * 75 // 100, ".git/objects": files * 10 // 100}
    budget["src"] = files - sum(budget.values())
    for top, count in budget.items():
        for n in range(count):
            folder = root / top / f"pkg{n // 100:04d}" / f"part{(n // 10) % 10}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{n}.js").write_text("x\n")
    (root / "AGENTS.md").write_text("Use uv, never pip.\n")
    skill = root / ".crank" / "skills" / "release" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: release\ndescription: How to cut a release.\n---\nSteps.\n")
    return root / "src" / "pkg0000" / "part0"


class Announcements:
    def __init__(self, locations: PromptLocations) -> None:
        self.locations = locations
        self.queue: asyncio.Queue[tuple[float, SystemPrompt]] = asyncio.Queue()

    async def rebuild(self) -> SystemPrompt:
        return (await compute_prompt([], self.locations, DAY)).prompt

    async def on_change(self, prompt: SystemPrompt) -> None:
        await self.queue.put((time.perf_counter(), prompt))


async def start_watcher(root: Path, cwd: Path) -> tuple[PromptWatcher, Announcements]:
    locations = PromptLocations(root, cwd, True, user_dir=root / ".user-config")
    owner = Announcements(locations)
    initial = await owner.rebuild()
    watcher = PromptWatcher(locations, owner.rebuild, owner.on_change, initial=initial)
    await watcher.start()
    return watcher, owner


async def latency(root: Path, cwd: Path, writes: int) -> list[float]:
    watcher, owner = await start_watcher(root, cwd)
    samples: list[float] = []
    try:
        for n in range(writes):
            await asyncio.sleep(0.05)  # let the previous batch settle
            began = time.perf_counter()
            (root / "AGENTS.md").write_text(f"Use uv, never pip. Revision {n}.\n")
            while True:
                seen, prompt = await asyncio.wait_for(owner.queue.get(), 5)
                if f"Revision {n}." in prompt.text:
                    samples.append((seen - began) * 1000)
                    break
    finally:
        await watcher.stop()
    return samples


async def footprint(root: Path, cwd: Path) -> tuple[float, int, float, int]:
    before = inotify_watch_count()
    began = time.perf_counter()
    watcher, _ = await start_watcher(root, cwd)
    ours_ms = (time.perf_counter() - began) * 1000
    ours = inotify_watch_count() - before
    await watcher.stop()

    stop = asyncio.Event()
    began = time.perf_counter()
    changes = awatch(root, stop_event=stop)
    pending = asyncio.ensure_future(anext(changes, None))
    await asyncio.sleep(0)
    naive_ms = (time.perf_counter() - began) * 1000
    naive = inotify_watch_count() - before
    stop.set()
    await pending
    return ours_ms, ours, naive_ms, naive


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--files", type=int, default=20000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crank-bench-") as tmp:
        base = Path(tmp)
        small = base / "small"
        cwd = generate_tree(small, 200)
        samples = await latency(small, cwd, args.writes)
        print(
            f"AGENTS.md write -> system_prompt_changed: median {statistics.median(samples):.1f} ms,"
            f" p90 {sorted(samples)[int(len(samples) * 0.9)]:.1f} ms,"
            f" max {max(samples):.1f} ms over {len(samples)} writes"
        )
        for files in (args.files // 4, args.files):
            root = base / f"tree{files}"
            began = time.perf_counter()
            cwd = generate_tree(root, files)
            made = time.perf_counter() - began
            ours_ms, ours, naive_ms, naive = await footprint(root, cwd)
            print(
                f"tree of {files} files (generated in {made:.1f} s): PromptWatcher start "
                f"{ours_ms:.1f} ms, {ours} inotify watches | plain recursive awatch "
                f"{naive_ms:.1f} ms, {naive} watches"
            )


if __name__ == "__main__":
    asyncio.run(main())
