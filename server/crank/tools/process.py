"""Running one shell command as its own process group, and ending all of it.

``start_new_session=True`` makes the shell the leader of a new process group, so a
timeout or an abort can signal everything it started (pipelines, background jobs,
grandchildren) with one ``killpg``: SIGTERM first, SIGKILL for whatever is still
running after a short grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

KILL_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.02


def shell() -> str:
    return shutil.which("bash") or "/bin/sh"


PROVIDER_SECRETS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""The model providers' keys: Crank's own credentials, not the project's. A command the
agent runs never sees them, so ``env`` or a debug print cannot copy a key into a tool
result (and from there into events and the session file)."""


def command_env() -> dict[str, str]:
    """The server's environment without the providers' keys, with pagers turned off
    (nobody can press q)."""
    env = {name: value for name, value in os.environ.items() if name not in PROVIDER_SECRETS}
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


async def start(command: str, cwd: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        shell(),
        "-c",
        command,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        env=command_env(),
    )


def _live_member(pgid: int) -> bool:
    """True while some process of the group is alive (zombies do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


async def _within(seconds: float, done: Callable[[], bool]) -> bool:
    """Poll ``done`` until it holds (True) or ``seconds`` pass (False)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while loop.time() < deadline:
        if done():
            return True
        await asyncio.sleep(POLL_SECONDS)
    return done()


async def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the whole group, then SIGKILL it if anything is left after the grace;
    returns once nothing in the group is running (SIGKILL is not instant)."""
    pgid = process.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if await _within(
        KILL_GRACE_SECONDS, lambda: process.returncode is not None and not _live_member(pgid)
    ):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    await process.wait()
    await _within(KILL_GRACE_SECONDS, lambda: not _live_member(pgid))
