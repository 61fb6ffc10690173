"""A fork bomb in the sandbox ends with a clear tool error and a responsive server
(issue 26 item 7): ``sandbox.limits.processes`` holds through a pids cgroup (root
too), the timeout kills the rest, and the event loop keeps turning all along. Real
bubblewrap: a machine without it fails here, it does not skip."""

from __future__ import annotations

import asyncio
from pathlib import Path

from crank.tools import ToolContext, standard_tools
from crank.tools.limits import Cage, Limits
from crank.tools.sandbox import SandboxSettings, probe
from tests.support.processes import HOST_PYTHON

from .conftest import call


async def test_a_fork_bomb_hits_the_process_limit_and_the_loop_keeps_turning(
    root: Path, tmp_path: Path
) -> None:
    assert probe().available, f"the sandbox tests need bubblewrap: {probe().detail}"
    probe_cage = Cage.make(8)
    assert probe_cage is not None, "no pids cgroup can be made here"
    probe_cage.close()
    settings = SandboxSettings(limits=Limits(processes=64))
    ctx = ToolContext(root, output_dir=tmp_path / "out", sandbox=lambda: settings)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    beside = asyncio.create_task(ticker())
    bomb = "bomb() { bomb | bomb & }; bomb; sleep 2"
    result = await call(standard_tools(ctx), "bash", {"command": bomb, "timeout": 8})
    seen = ticks
    beside.cancel()
    assert result.is_error
    assert "limit of 64 processes (sandbox.limits.processes)" in result.content
    assert seen > 10  # the loop ran while the bomb did


async def test_a_normal_command_is_not_limited(root: Path, tmp_path: Path) -> None:
    settings = SandboxSettings(limits=Limits(processes=64))
    ctx = ToolContext(root, output_dir=tmp_path / "out", sandbox=lambda: settings)
    result = await call(standard_tools(ctx), "bash", {"command": "seq 3 | wc -l"})
    assert not result.is_error and result.content == "3"


async def test_a_memory_hog_fails_to_allocate_and_the_result_names_the_limit(
    root: Path, tmp_path: Path
) -> None:
    settings = SandboxSettings(limits=Limits(memory_mb=256))
    ctx = ToolContext(root, output_dir=tmp_path / "out", sandbox=lambda: settings)
    hog = f"{HOST_PYTHON} -c 'bytearray(1024 * 1024 * 1024)'"  # seen in the sandbox
    result = await call(standard_tools(ctx), "bash", {"command": hog})
    assert result.is_error and "MemoryError" in result.content, result.content
    assert "at most 256 MB of data memory (sandbox.limits.memoryMB)" in result.content
