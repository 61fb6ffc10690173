"""ripgrep's no-I/O watchdog watches the whole sandbox, not its first process.

In the reader sandbox the process Crank starts is bubblewrap, whose own I/O counters
stay still while the program inside reads: watched alone, every sandboxed search
longer than ``RG_STALL_SECONDS`` looked stuck and was killed. Here a program that
reads without end runs in that sandbox (``reader_argv``, started as grep starts
ripgrep), and the counters the watchdog compares must move.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from crank.tools.sandbox import probe, reader_argv
from crank.tools.search import _io_counters
from crank.tools.walk import open_folder

READS = "while :; do head -c 65536 /dev/zero; done > /dev/null"


def names_in_group(pgid: int) -> set[str]:
    found: set[str] = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid):
            found.add(stat[stat.find("(") + 1 : stat.rfind(")")])
    return found


async def settled(pgid: int) -> None:
    """Until the program inside runs (a process of the group that is not bubblewrap:
    the shell of ``READS``, or a ``head`` it started): bubblewrap's setup is over, and
    from then on bubblewrap's own counters stay still. Not ``head`` alone: each lives
    for microseconds, and on a loaded machine a sample every 50 ms saw none in 30 s
    (the shell was there all along), which failed a CI run."""
    for _ in range(600):  # a bound for a hang only
        if names_in_group(pgid) - {"bwrap"}:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the sandboxed program never ran: {names_in_group(pgid)}")


async def test_the_watched_counters_move_while_the_sandboxed_program_reads(
    tmp_path: Path,
) -> None:
    assert probe().available, f"the sandbox tests need bubblewrap: {probe().detail}"
    folder = open_folder(tmp_path, str(tmp_path))
    try:
        argv = reader_argv(["/bin/sh", "-c", READS], folder, tmp_path)
        process = await asyncio.create_subprocess_exec(
            *argv, pass_fds=(folder,), start_new_session=True
        )
    finally:
        os.close(folder)
    try:
        await settled(process.pid)
        first = _io_counters(process.pid)
        assert first is not None
        moved = False
        for _ in range(600):  # a bound for a hang only: the first change ends it
            await asyncio.sleep(0.05)
            if _io_counters(process.pid) != first:
                moved = True
                break
        assert moved, "the counters stayed still while the program read"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
