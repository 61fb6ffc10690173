"""Compacting a history that was never compacted: what the first compaction of a long
session under the ``none``, ``trim`` or ``clear`` policy (or another writer's) costs.

For 10,000 and 50,000 messages (``bench/synthetic_session.py``, spelled by the log's
own encoder, about 46 MB for the 50,000), each run in a fresh process: the session is
opened, then ``compact_log`` runs with a scripted summariser that answers at once, so
what is timed is Crank's own work (cutting, quoting the older rows into the summary
request, looking for the identifiers the summary lost, appending the entry). Printed,
medians of ``--repeat`` processes: the wall time of the compaction and the longest the
event loop went without running a 5 ms ticker meanwhile (what an editor waiting on any
answer from this server would have waited). With ``--before OTHER/server`` the same
runs alternate with another checkout's code.

Run: .venv/bin/python bench/compaction.py [--repeat 3] [--before OTHER/server]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SIZES = ((10_000, 9.2), (50_000, 46.0))


async def _compact(path: Path) -> tuple[float, float, bool]:
    """Open ``path`` and compact it: seconds taken, longest loop stall, compacted."""
    import msgspec

    from crank.agent.scripted import ScriptedModel, say
    from crank.session import SessionLog
    from crank.session.compaction import compact_log

    log = SessionLog.open(path)
    stalls = [0.0]
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            stalls.append(now - last - 0.005)
            last = now

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)  # the ticker runs before the compaction starts
    began = time.perf_counter()
    try:
        outcome = await compact_log(
            log,
            ScriptedModel([say("Goal: the shop's handlers. Done: many reads and runs.")]),
            keep_tokens=20_000,
            size=lambda message: len(msgspec.json.encode(message)) // 3,
            tokens_before=10**7,
        )
    finally:
        took = time.perf_counter() - began
        done.set()
        await tick
        log.close()
    return took, max(stalls), outcome.compacted


def _one(path: str) -> None:
    """In a fresh process: one compaction of a copy of ``path``, its figures as JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(path).name
        shutil.copyfile(path, copy)
        took, stall, compacted = asyncio.run(_compact(copy))
    print(json.dumps({"took": took, "stall": stall, "compacted": compacted}))


def _run(server: str, path: Path) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=server)
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--one", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    if not figures["compacted"]:
        raise SystemExit(f"{server}: the compaction appended nothing: {out.stderr}")
    return figures


def load() -> str:
    return str(Path("/proc/loadavg").read_text().split(" ", 3)[:3])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", help="another checkout's server/, run alternately")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        _one(args.one)
        return
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "server"))
    from synthetic_session import write_session

    sources = [("this checkout", str(HERE.parent / "server"))]
    if args.before:
        sources.append(("before", args.before))
    print(f"load average at start: {load()} (2 shared cores)")
    medians: dict[str, list[float]] = {label: [] for label, _ in sources}
    with tempfile.TemporaryDirectory() as tmp:
        for messages, megabytes in SIZES:
            path = Path(tmp) / f"bench-{messages}.jsonl"
            size = write_session(path, messages, megabytes)
            results: dict[str, list[dict[str, float]]] = {label: [] for label, _ in sources}
            for _ in range(args.repeat):
                for label, server in sources:
                    results[label].append(_run(server, path))
            for label, _ in sources:
                took = statistics.median(r["took"] for r in results[label])
                stall = statistics.median(r["stall"] for r in results[label])
                medians[label].append(took)
                print(
                    f"{label:>13}: {messages:>6} messages never compacted, {size / 1e6:.0f} MB: "
                    f"compaction {took * 1000:7.0f} ms, longest event-loop stall "
                    f"{stall * 1000:7.0f} ms (median of {args.repeat} processes)"
                )
    for label, (small, large) in medians.items():
        print(f"{label:>13}: ratio 50,000 / 10,000 messages {large / small:.2f}")
    if args.before:
        now, then = medians[sources[0][0]], medians[sources[1][0]]
        print(f"50,000 messages: this checkout takes {now[1] / then[1]:.2f} of the time before")
    print(f"load average at end: {load()}")


if __name__ == "__main__":
    main()
