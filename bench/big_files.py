"""Peak memory and time of each file tool on huge files (issue 12: bounded memory).

Makes, in a temp dir, at each size S (default 200 MB and 2 GB): a sparse file of S
bytes (all NULs, no disk), a file of S bytes of real short lines (a repeated 1 MB
block, so it is made in seconds) ending in a "needle" line, and a file of S bytes
with no newline at all ("x" repeated, then "needle"). Then runs each tool on them
through the real ``run_tool`` boundary, each run in a fresh subprocess so the peaks
do not mix, and prints the median over the runs of: the subprocess's peak resident
memory (VmHWM, which includes the ~40 MB of an idle Python with crank imported: see
the "baseline" row), the peak of any child it started (ripgrep), and wall time.
Everything is deleted afterwards.

Run: .venv/bin/python bench/big_files.py [sizes in MB, e.g. 200 2048]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from crank.tools.search import ripgrep

MB = 1024 * 1024
RUNS = 3
LINE = b"2026-12-01 10:00:00 INFO worker-3 handled request id=%07d in 12 ms\n"


def sparse(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)


def make_files(root: Path, size: int) -> int:
    """sparse.bin, lines/big.log and oneline/min.js of ``size`` bytes each; returns
    the number of lines in big.log."""
    sparse(root / "sparse.bin", size)
    block = bytearray()
    number = 0
    while len(block) < MB:
        block += LINE % number
        number += 1
    (root / "lines").mkdir()
    with open(root / "lines" / "big.log", "wb") as handle:
        for _ in range(size // len(block)):
            handle.write(block)
        handle.write(b"the needle is on the last line\n")
    (root / "oneline").mkdir()
    chunk = b"x" * MB
    with open(root / "oneline" / "min.js", "wb") as handle:
        for _ in range(size // MB):
            handle.write(chunk)
        handle.write(b"needle")
    return (size // len(block)) * number + 1


def cases(lines: int) -> list[tuple[str, str, dict[str, Any], str | None]]:
    """(label, tool, arguments, grep engine). The write replaces a fresh sparse file
    (made before each run)."""
    rg = [("rg", "rg")] if ripgrep() else []
    grep: list[tuple[str, str, dict[str, Any], str | None]] = []
    for name, engine in [("python", "python"), *rg]:
        grep += [
            (f"grep {name}: big.log", "grep", {"pattern": "needle", "path": "lines"}, engine),
            (f"grep {name}: sparse.bin", "grep", {"pattern": "x", "path": "sparse.bin"}, engine),
            (f"grep {name}: min.js", "grep", {"pattern": "needle", "path": "oneline"}, engine),
        ]
    return [
        ("baseline (ls of a small dir)", "ls", {"path": "lines"}, None),
        ("read big.log", "read", {"path": "lines/big.log"}, None),
        (
            "read big.log, last 10 lines",
            "read",
            {"path": "lines/big.log", "offset": lines - 9},
            None,
        ),
        ("read min.js (one line)", "read", {"path": "oneline/min.js"}, None),
        ("read sparse.bin", "read", {"path": "sparse.bin"}, None),
        *grep,
        ("find *.log", "find", {"pattern": "*.log"}, None),
        (
            "edit big.log",
            "edit",
            {"path": "lines/big.log", "oldText": "needle", "newText": "pin"},
            None,
        ),
        ("write over a sparse file", "write", {"path": "old.bin", "content": "small\n"}, None),
    ]


PROBE = Path(__file__).resolve().parents[1] / "tests" / "support" / "tool_probe.py"


def measure(root: Path, tool: str, args: dict[str, Any], engine: str | None) -> dict[str, Any]:
    """One call in a fresh process (tests/support/tool_probe.py), its figures back."""
    command = [sys.executable, str(PROBE), str(root), tool, json.dumps(args), engine or ""]
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    text = result["content"]
    result["bytes"] = len(text.encode())
    result["last"] = text.strip().rsplit("\n", 1)[-1][:150]
    result["error"] = result["isError"]
    return result


def main(sizes_mb: list[int]) -> None:
    print(
        f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
        f"{os.cpu_count()} cores; median of {RUNS} runs, each in a fresh process"
    )
    for size_mb in sizes_mb:
        with tempfile.TemporaryDirectory(prefix="crank-big-") as tmp:
            root = Path(tmp)
            start = time.perf_counter()
            lines = make_files(root, size_mb * MB)
            made = time.perf_counter() - start
            print(f"\n== {size_mb} MB files (made in {made:.1f} s)")
            print(f"{'case':34} {'peak RSS':>9} {'child RSS':>9} {'time':>8}  result")
            for label, tool, args, engine in cases(lines):
                runs = []
                for _ in range(RUNS):
                    if tool == "write":
                        sparse(root / args["path"], size_mb * MB)
                    runs.append(measure(root, tool, args, engine))
                hwm = statistics.median(r["hwm"] for r in runs) / 1024
                child = statistics.median(r["child"] for r in runs) / 1024
                seconds = statistics.median(r["seconds"] for r in runs)
                flag = "error: " if runs[-1]["error"] else ""
                print(
                    f"{label:34} {hwm:7.0f}MB {child:7.0f}MB {seconds:7.2f}s  "
                    f"{flag}{runs[-1]['bytes']} bytes, ends {runs[-1]['last'][:70]!r}"
                )
    print(f"\nload after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [200, 2048])
