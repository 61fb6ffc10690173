"""Session log figures: append cost (two sizes, to show it is linear), open + replay of a
10,000-entry / 50 MB session, and listing 200 sessions of 5 MB each.

Run: .venv/bin/python bench/session_log.py [--quick]
Appends are timed one fsync per message (a healthy turn: each message is announced as
it completes) and in groups of 2 and 4 (messages that complete together: a failed reply
and its unrun calls, a batch of steering messages).
Prints medians of a few runs; nothing is asserted here (targets are in docs/session.md).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from crank.agent.messages import assistant_message, tool_result, user_message
from crank.session import SessionLog, SessionStore
from crank.session.entries import encode, make_header
from synthetic_session import write_session


def median_of(runs: int, work: object) -> float:
    times = []
    for _ in range(runs):
        times.append(work())  # type: ignore[operator]
    return statistics.median(times)


def time_appends(count: int, group: int = 1) -> float:
    """``count`` messages appended through the saver's path, ``group`` at a time (one
    fsync per group: messages that complete together, ``SessionLog.append_messages``)."""
    with tempfile.TemporaryDirectory() as directory:
        log = SessionLog.create(directory, "/bench")

        async def run() -> float:
            start = time.perf_counter()
            for n in range(0, count, group):
                batch = [user_message(f"message {k} " + "x" * 200) for k in range(n, n + group)]
                if group == 1:
                    await log.append_message(batch[0])
                else:
                    await log.append_messages(batch)
            return time.perf_counter() - start

        try:
            return asyncio.run(run())
        finally:
            log.close()


def write_synthetic(path: Path, entries: int, output_bytes: int) -> None:
    """A realistic file written in one go (the same encoding the log uses)."""
    chunk = ("line of tool output " * (output_bytes // 20 + 1))[:output_bytes]
    lines = [encode(make_header(path.stem, "/bench"))]
    parent = None
    for n in range(entries):
        entry_id = f"{n:08x}"
        if n % 3 == 0:
            message = user_message(f"question {n}")
        elif n % 3 == 1:
            block = {"type": "toolCall", "id": f"c{n}", "name": "read", "arguments": {"path": "a"}}
            message = assistant_message([block], stop_reason="toolUse")  # type: ignore[list-item]
        else:
            message = tool_result(f"c{n - 1}", "read", chunk)
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": n}
        lines.append(encode(entry | {"message": {"role": message["role"], **message}}))
        parent = entry_id
    path.write_bytes(b"".join(lines))


def time_open_replay(path: Path) -> float:
    start = time.perf_counter()
    with SessionLog.open(path) as log:
        log.replay()
    return time.perf_counter() - start


def main() -> None:
    quick = "--quick" in sys.argv
    runs = 1 if quick else 3
    small, large = (200, 2000) if quick else (1000, 10000)
    print("load average:", Path("/proc/loadavg").read_text().split()[:3], "(2 shared cores)")
    groups = (1, 2, 4)
    times: dict[tuple[int, int], list[float]] = {}
    for _ in range(runs):  # alternating, so a busier minute of the disk hits every group
        for group in groups:
            for count in (small, large):
                times.setdefault((group, count), []).append(time_appends(count, group))
    for group in groups:
        t_small = statistics.median(times[(group, small)])
        t_large = statistics.median(times[(group, large)])
        how = "one fsync each" if group == 1 else f"in groups of {group}, one fsync a group"
        for count, took in ((small, t_small), (large, t_large)):
            each = took / count * 1e6
            print(f"append {count:>6} messages {how}: {took * 1000:8.1f} ms  ({each:.0f} us each)")
        factor = large // small
        print(f"  ratio {t_large / t_small:.2f} for {factor}x the messages (linear = {factor})")
        if group > 1:
            single = statistics.median(times[(1, large)])
            print(f"  {large} messages cost {t_large / single:.2f} of one fsync each")

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "big.jsonl"
        write_session(path, 10_000, 50.0)
        size = path.stat().st_size / 1e6
        t_open = median_of(runs, lambda: time_open_replay(path))
        print(
            f"open + replay 10,000 entries, {size:.0f} MB: {t_open * 1000:.0f} ms (target < 1000)"
        )

    with tempfile.TemporaryDirectory() as directory:
        store = SessionStore("/bench/ws", directory)
        store.directory.mkdir(parents=True)
        count = 50 if quick else 200
        for n in range(count):
            write_synthetic(store.directory / f"s{n:04d}.jsonl", 1_000, 15_000)
        size = sum(p.stat().st_size for p in store.directory.glob("*.jsonl")) / count / 1e6
        os.sync()
        start = time.perf_counter()
        listing = store.list()
        cold = time.perf_counter() - start
        warm = median_of(runs, lambda: _timed(store.list))
        print(
            f"list {len(listing)} sessions of {size:.1f} MB: cold (no index) {cold * 1000:.0f} ms, "
            f"warm {warm * 1000:.1f} ms (target < 300)"
        )


def _timed(work: object) -> float:
    start = time.perf_counter()
    work()  # type: ignore[operator]
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
