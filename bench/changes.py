"""What recording a run's changes costs per command, on 1,000, 10,000 and 100,000 files,
with the change feed (inotify) and with a full scan.

Every command the agent runs is measured by a snapshot before it and one after it
(``crank.tools.snapshot.Scanner.mark`` and ``since``). With the change feed, the first
snapshot walks the workspace and every later one re-stats only what the kernel
reported; with a full scan (``feed=False``, the fallback: no inotify, too many folders
to watch, an overflowed queue) each one stats every file, reading and saving only the
files whose stat changed. This script builds a synthetic tree of small text files (100
to a folder, a ``.gitignore`` and an ignored ``build/`` folder), saves into a real
content store (``crank.session.fileblobs``), and prints for each mode, each a median
over ``--repeat``:

- the first snapshot of a session (every file read, hashed and saved once);
- the cost per command: snapshot before + a command that rewrites one file (made by
  this process: its events are queued by the kernel within its writes, as a child's
  are) + snapshot after and the comparison, i.e. what the agent waits for beyond the
  command itself, as wall time and as this process's CPU time;
- the same when the command rewrote 100 files;
- how many entries were stat'ed per command (1 file changed);

then, with the feed held on the largest tree, the process's threads and CPU time over
``--idle`` seconds of nothing happening (the feed has no thread or timer of its own).

Run: .venv/bin/python bench/changes.py [--sizes 1000,10000,100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from crank.session import fileblobs
from crank.tools.snapshot import Scanner

PER_FOLDER = 100


def build(root: Path, count: int) -> list[Path]:
    files: list[Path] = []
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0" * 100)
    for index in range(count):
        folder = root / f"pkg{index // PER_FOLDER // 100}" / f"mod{index // PER_FOLDER}"
        if index % PER_FOLDER == 0:
            folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file{index}.py"
        path.write_text(f"# file {index}\n" + "x = 1\n" * 40)
        files.append(path)
    return files


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def measure(root: Path, store: Path, files: list[Path], feed: bool, repeat: int) -> Scanner:
    scanner = Scanner(root, fileblobs.FileStore(store), feed=feed)
    started = time.perf_counter()
    scanner.since(scanner.mark())
    first = time.perf_counter() - started
    walks = scanner.counts.walks
    wall: dict[int, list[float]] = {1: [], 100: []}
    cpu: dict[int, list[float]] = {1: [], 100: []}
    stats: list[int] = []
    for turn in range(repeat):
        for touched in wall:
            chosen = files[turn * touched : (turn + 1) * touched]
            stats_before = scanner.counts.stats
            started, cpu_started = time.perf_counter(), time.process_time()
            mark = scanner.mark()
            command_started, command_cpu = time.perf_counter(), time.process_time()
            for path in chosen:  # the command
                path.write_text(f"# changed in round {turn} of {len(chosen)}, feed {feed}\n")
            command = time.perf_counter() - command_started
            command_cpu = time.process_time() - command_cpu
            found = scanner.since(mark)
            wall[touched].append(time.perf_counter() - started - command)
            cpu[touched].append(time.process_time() - cpu_started - command_cpu)
            if touched == 1:
                stats.append(scanner.counts.stats - stats_before)
            assert len(found) == touched, (len(found), touched)
    mode = "feed" if feed else "full scan"
    fell_back = "" if not feed or scanner.counts.walks == walks else " (it fell back to walks!)"
    print(
        f"{len(files):>7} files, {mode:>9}: first {first * 1000:8.1f} ms; per command "
        f"{statistics.median(wall[1]) * 1000:8.2f} ms wall, "
        f"{statistics.median(cpu[1]) * 1000:7.2f} ms CPU (1 file changed, "
        f"{statistics.median(stats)} entries stat'ed), "
        f"{statistics.median(wall[100]) * 1000:8.2f} ms wall, "
        f"{statistics.median(cpu[100]) * 1000:7.2f} ms CPU (100 changed); "
        f"load {load()}{fell_back}",
        flush=True,
    )
    return scanner


def idle(scanner: Scanner, seconds: float) -> None:
    threads = threading.active_count()
    cpu_started = time.process_time()
    time.sleep(seconds)
    spent = time.process_time() - cpu_started
    print(
        f"idle with the feed on ({scanner.watching} folders watched): {threads} thread(s) "
        f"in this process, {spent * 1000:.2f} ms CPU over {seconds:.0f} s "
        f"({spent / seconds * 100:.4f}% of a core)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--idle", type=float, default=5.0)
    args = parser.parse_args()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"load: {uptime.strip()}")
    last: Scanner | None = None
    with tempfile.TemporaryDirectory(prefix="crank-changes-bench-") as temp:
        for size in (int(part) for part in args.sizes.split(",")):
            root = Path(temp) / f"workspace{size}"
            root.mkdir()
            files = build(root, size)
            if last is not None:
                last.close()
            measure(root, Path(temp) / f"full{size}.blobs", files, False, args.repeat).close()
            last = measure(root, Path(temp) / f"feed{size}.blobs", files, True, args.repeat)
        if last is not None:
            idle(last, args.idle)
            last.close()
    uptime = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"load after: {uptime.strip()}")


if __name__ == "__main__":
    main()
