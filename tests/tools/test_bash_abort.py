"""An abort at any point of a command's start leaves nothing running.

The abort is a task cancellation landing after a seeded number of event-loop steps,
from before the process exists to after its children run, with two CPU hogs beside
the test so the machine is as loaded as CI's. Every point must leave no process
carrying the test's marker, in the sandbox and without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crank.agent.model import AbortSignal
from crank.tools import ToolContext, standard_tools
from crank.tools.sandbox import SandboxSettings
from tests.support.processes import holder, marker, survivors

from .conftest import call

POINTS = 40
SETTLE_STEPS = 200


@contextlib.contextmanager
def cpu_hogs(count: int = 2) -> Iterator[None]:
    hogs = [
        subprocess.Popen(["sh", "-c", "exec yes > /dev/null"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


MODES = ["off", pytest.param("workspace-write", marks=pytest.mark.requires("sandbox"))]


@pytest.mark.parametrize("mode", MODES)
async def test_an_abort_anywhere_in_the_start_leaves_no_survivor(
    root: Path, tmp_path: Path, mode: str
) -> None:
    settings = SandboxSettings(mode="off" if mode == "off" else "workspace-write")
    tools = standard_tools(ToolContext(root, output_dir=tmp_path / "out", sandbox=lambda: settings))
    rng = random.Random(1234)
    mark = marker()
    command = f"{holder(mark)} {holder(mark)} sh -c 'exec -a {mark} sleep 300' & wait"
    points = sorted(rng.randrange(SETTLE_STEPS) for _ in range(POINTS))
    with cpu_hogs():
        for steps in points:
            signal = AbortSignal()
            task = asyncio.create_task(call(tools, "bash", {"command": command}, signal=signal))
            for _ in range(steps):
                await asyncio.sleep(0)
            signal.abort()
            task.cancel()
            result = await asyncio.wait_for(task, 30)  # a hang fails, with a bound
            assert result.is_error and "Aborted" in result.content
            assert survivors(mark) == [], f"survivors after an abort at step {steps}"


async def test_a_setsid_child_does_not_outlive_an_abort_without_the_sandbox(
    root: Path, tmp_path: Path
) -> None:
    """``setsid`` leaves the process group an abort signals; with the sandbox off the
    command's first process is a subreaper (``crank.tools.reaper``) that kills every
    descendant it has, in whatever session. Issue 26: 25 of 50 runs left one."""
    settings = SandboxSettings(mode="off")
    tools = standard_tools(ToolContext(root, output_dir=tmp_path / "out", sandbox=lambda: settings))
    for _ in range(5):
        mark = marker()
        command = f"setsid bash -c 'exec -a {mark} sleep 300' & setsid -f bash -c 'exec -a {mark} sleep 301'; sleep 300"
        signal = AbortSignal()
        task = asyncio.create_task(call(tools, "bash", {"command": command}, signal=signal))
        while len(survivors(mark)) < 2:  # both detached children are running
            assert not task.done(), task.result()
            await asyncio.sleep(0.05)
        signal.abort()
        task.cancel()
        result = await asyncio.wait_for(task, 30)
        assert result.is_error and "Aborted" in result.content
        assert survivors(mark) == []
