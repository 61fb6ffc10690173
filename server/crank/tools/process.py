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
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .limits import Cage, Limits, limited
from .sandbox import SandboxSettings, confine

KILL_GRACE_SECONDS = 2.0
CONFINED_GRACE_SECONDS = 0.3
"""A sandboxed command's grace: the namespace's first process (bubblewrap's) ignores
SIGTERM, and a SIGTERM that lands while the sandbox is being set up never reaches the
shell, so only SIGKILL ends those; the command's own processes get SIGTERM first."""
POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Box:
    """How to confine one command: the user's settings and what to hide or show."""

    settings: SandboxSettings
    protected: Sequence[Path] = ()
    readable: Sequence[Path] = ()


def shell() -> str:
    return shutil.which("bash") or "/bin/sh"


PASSED_NAMES = frozenset({"PATH", "HOME", "LANG", "TERM", "TZ", "USER", "LOGNAME", "SHELL"})
"""What a command gets of the server's environment (with every ``LC_*``): an allow-list.
A deny-list of key-like names let ``AZURE_OPENAI_KEY`` through (it ends in none of the
suffixes); a name means what its owner meant, which no rule of spelling can tell. The
user adds names with ``sandbox.env`` (``SandboxSettings.env``)."""


def passed(name: str, extra: Iterable[str] = ()) -> bool:
    """Does ``name`` reach a command (the allow-list, ``LC_*``, or ``extra``)?"""
    return name in PASSED_NAMES or name.startswith("LC_") or name in extra


def command_env(extra: Iterable[str] = ()) -> dict[str, str]:
    """The allow-listed part of the server's environment (plus the names in
    ``extra``), with pagers turned off (nobody can press q)."""
    names = frozenset(extra)
    env = {name: value for name, value in os.environ.items() if passed(name, names)}
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
    return env


REAPER = str(Path(__file__).with_name("reaper.py"))


def reaped(argv: list[str]) -> list[str]:
    """``argv`` under the subreaper (``reaper``), where Linux has one: run as a script
    with ``-I`` (no site, no environment, not its folder on sys.path), so it starts
    fast and imports nothing of Crank."""
    if not sys.platform.startswith("linux"):
        return argv
    return [sys.executable, "-I", REAPER, *argv]


def command_argv(command: str, cwd: Path, box: Box | None) -> list[str]:
    """``bash -c COMMAND``, wrapped in the sandbox when ``box`` is given, else under
    the subreaper, so a ``setsid`` child cannot outlive an abort either way."""
    argv = [shell(), "-c", command]
    if box is None:
        return reaped(argv)
    return confine(argv, cwd, box.settings, protected=box.protected, readable=box.readable)


async def start(
    command: str,
    cwd: Path,
    box: Box | None = None,
    extra_env: Iterable[str] = (),
    limits: Limits | None = None,
    cage: Cage | None = None,
) -> asyncio.subprocess.Process:
    """Start the command as the leader of a new process group (see the module doc);
    ``extra_env``: names passed beside the allow-list (``sandbox.env``); ``limits``
    and ``cage``: its process and memory limits (``limits.limited``)."""
    chosen = limits or (box.settings.limits if box is not None else Limits())
    argv = limited(command_argv(command, cwd, box), chosen, cage, shell())
    return await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        env=command_env(box.settings.env if box is not None else extra_env),
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


async def kill_group(
    process: asyncio.subprocess.Process, grace: float = KILL_GRACE_SECONDS
) -> None:
    """SIGTERM the whole group, then SIGKILL it if anything is left after ``grace``;
    returns once nothing in the group is running (SIGKILL is not instant)."""
    pgid = process.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if await _within(grace, lambda: process.returncode is not None and not _live_member(pgid)):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    await process.wait()
    await _within(KILL_GRACE_SECONDS, lambda: not _live_member(pgid))


async def end_group(pgid: int, grace: float = KILL_GRACE_SECONDS) -> None:
    """``kill_group`` for a group whose leader is not our child (someone else started
    it: an editor's terminal): SIGTERM, SIGKILL after ``grace`` if anything is left,
    then wait (bounded) until no member is running; zombies left for their parent."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if await _within(grace, lambda: not _live_member(pgid)):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    await _within(KILL_GRACE_SECONDS, lambda: not _live_member(pgid))
