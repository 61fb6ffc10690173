"""Figures for the prompt watcher (issue 6). Prints them; asserts nothing.

0. Idle cost (issue 33): 1 and 20 watched folders doing nothing: the CPU share of a
   core, wake-ups a second (context switches of all the process's threads) and the
   threads (goal at 20: under 0.1% of a core, a handful of threads). ``--polling``
   measures the old way (watchfiles' loop, waking every 10 ms per folder).
1. Latency from writing AGENTS.md to the rebuilt prompt being announced (median of many
   writes; target: under 50 ms).
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
import contextlib
import datetime
import os
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from watchfiles import Change, awatch

from crank.prompt import PromptLocations, PromptWatcher, SystemPrompt, compute_prompt, dirwatch
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


async def first_change(changes: AsyncIterator[set[tuple[Change, str]]]) -> object:
    return await anext(changes, None)


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
    pending = asyncio.create_task(first_change(changes))
    await asyncio.sleep(0)
    naive_ms = (time.perf_counter() - began) * 1000
    naive = inotify_watch_count() - before
    stop.set()
    await pending
    return ours_ms, ours, naive_ms, naive


def _switches() -> int:
    """Context switches of every thread of this process so far (Linux)."""
    total = 0
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):
            for line in (task / "status").read_text().splitlines():
                if "ctxt_switches:" in line:
                    total += int(line.split()[-1])
    return total


async def idle(base: Path, folders: int, seconds: float) -> tuple[float, float, int]:
    """``folders`` watched workspaces doing nothing for ``seconds``: the CPU share of
    one core, wake-ups (context switches) a second, and the threads of the process."""
    watchers = []
    for n in range(folders):
        root = base / f"idle{n}"
        (root / "src").mkdir(parents=True)
        (root / "AGENTS.md").write_text(f"Folder {n}.\n")
        watcher, _ = await start_watcher(root, root / "src")
        watchers.append(watcher)
    await asyncio.sleep(0.5)  # the starts settle
    cpu, switches, began = time.process_time(), _switches(), time.perf_counter()
    await asyncio.sleep(seconds)
    elapsed = time.perf_counter() - began
    cpu_share = (time.process_time() - cpu) / elapsed * 100
    rate = (_switches() - switches) / elapsed
    threads = len(os.listdir("/proc/self/task"))
    for watcher in watchers:
        await watcher.stop()
    return cpu_share, rate, threads


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument(
        "--polling",
        action="store_true",
        help="use watchfiles' polling loop even where inotify is read directly (the old way)",
    )
    args = parser.parse_args()
    if args.polling:
        dirwatch.available = lambda: False
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="crank-bench-") as tmp:
        base = Path(tmp)
        for folders in (1, 20):
            share, rate, threads = await idle(base / f"idle-{folders}", folders, args.idle_seconds)
            print(
                f"{folders:>2} idle folder(s) for {args.idle_seconds:.0f} s: {share:.2f}% of a core, "
                f"{rate:.0f} wake-ups/s, {threads} threads (goal at 20: < 0.1%, a handful)"
            )
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
