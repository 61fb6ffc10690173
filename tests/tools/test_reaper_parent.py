"""An unconfined command does not outlive Crank: when the process that started it is
killed (SIGKILL, a crash: no abort ever comes), the subreaper hears of it from the
kernel and ends every descendant, as a sandboxed command dies with bwrap's
``--die-with-parent``. Found when a killed recorder left a ``--watch`` test running.
A real parent process starts the command through ``crank.tools.process.start``, as the
bash tool does, and is then SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.processes import holder, marker, survivors

BOUND = 60.0
"""Far above what it takes (the kernel signals at the parent's death): a loaded machine
only delays the reaper's sweep, the test fails only if it never comes."""

STARTER = """
import asyncio, sys
from pathlib import Path
from crank.tools.process import start

async def main():
    process = await start(sys.argv[1], Path(sys.argv[2]))
    print(process.pid, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def wait_until(condition: object, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_killed_starter_takes_its_unconfined_command_along(tmp_path: Path) -> None:
    mark, escaped = marker(), marker("crank-setsid")
    command = f"{holder(mark)} setsid bash -c '{holder(escaped)} wait' & wait"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "server"))
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, command, str(tmp_path)],
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        assert starter.stdout is not None
        assert starter.stdout.readline().strip().isdigit()
        assert wait_until(lambda: survivors(mark) and survivors(escaped), BOUND), "never started"
        starter.send_signal(signal.SIGKILL)
        starter.wait()
        gone = wait_until(lambda: not survivors(mark) and not survivors(escaped), BOUND)
        assert gone, f"left running: {survivors(mark)} {survivors(escaped)}"
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        for pid in survivors(mark) + survivors(escaped):
            os.kill(pid, signal.SIGKILL)
