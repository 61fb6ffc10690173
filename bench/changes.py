"""What recording a run's changes costs per command, on 1,000, 10,000 and 100,000 files.

Every command the agent runs is wrapped in two snapshots of the workspace
(``crank.tools.snapshot.Scanner``): before it (stat every file, read and save only the
files whose stat changed since the last scan) and after it. This script builds a
synthetic tree of small text files (100 to a folder, a ``.gitignore`` and an ignored
``build/`` folder), saves into a real content store (``crank.session.fileblobs``), and
prints, each a median over ``--repeat``:

- the first scan of a session (every file read, hashed and saved once);
- the cost per command: before-scan + a command that rewrites one file + after-scan +
  the comparison (what the agent waits for beyond the command itself);
- the same when the command rewrote 100 files;
- the CPU time of this process per command (1 file changed): what it costs on an idle
  machine, where the wall time is close to it; on a loaded one the wall time is larger.

Run: .venv/bin/python bench/changes.py [--sizes 1000,10000,100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from crank.session import fileblobs
from crank.tools.snapshot import Scanner, changes

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


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def measure(count: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory(prefix="crank-changes-bench-") as temp:
        root = Path(temp) / "workspace"
        root.mkdir()
        store = Path(temp) / "session.blobs"
        files = build(root, count)
        scanner = Scanner(root, fileblobs.FileStore(store))
        first = timed(scanner.scan)
        rounds: dict[int, list[float]] = {1: [], 100: []}
        cpu: list[float] = []
        for turn in range(repeat):
            for touched, times in rounds.items():
                chosen = files[turn * touched : (turn + 1) * touched]

                def command(chosen: list[Path] = chosen, turn: int = turn) -> None:
                    for path in chosen:
                        path.write_text(f"# changed in round {turn} of {len(chosen)}\n")

                started, cpu_started = time.perf_counter(), time.process_time()
                before = scanner.scan()
                command_time = timed(command)
                after = scanner.scan()
                found = changes(before, after)
                times.append(time.perf_counter() - started - command_time)
                if touched == 1:
                    cpu.append(time.process_time() - cpu_started)
                assert len(found) == touched, (len(found), touched)
        stored = len(fileblobs.FileStore(store))
        print(
            f"{count:>7} files: first scan {first * 1000:8.1f} ms ({stored} contents stored); "
            f"per command {statistics.median(rounds[1]) * 1000:7.1f} ms "
            f"(1 file changed), {statistics.median(rounds[100]) * 1000:7.1f} ms (100 changed); "
            f"CPU {statistics.median(cpu) * 1000:7.1f} ms per command"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"load: {load.strip()}")
    for size in (int(part) for part in args.sizes.split(",")):
        measure(size, args.repeat)
    load = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout
    print(f"load after: {load.strip()}")


if __name__ == "__main__":
    main()
