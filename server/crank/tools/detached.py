"""A command as someone else starts it (an editor's terminal), and how Crank ends it.

The client's terminal starts the process, so Crank holds no handle on it. Two ways
to end everything it started, the first preferred:

- **The group** (``Detached.end``). The argv runs under ``leader.py``, which puts the
  command in a session of its own and writes that group's id to a file in a private
  folder Crank made for this command (mode 0700, under the system's temp folder;
  hidden from a confined command by the sandbox's private ``/tmp``). Crank reads it
  as soon as it appears (``watch``) and believes it only if the process with that pid
  leads its own group and carries this command's ``CRANK_TERMINAL`` mark, so a
  command that rewrote the file cannot make Crank signal anybody else's group. On an
  abort or a timeout the group gets SIGTERM (an unconfined command's subreaper then
  SIGKILLs every descendant, in whatever session) and SIGKILL after the grace: a
  child that cleared its environment (``env -i``) or moved to a session of its own
  ends too.
- **The sweep** (``sweep_argv``): only when the group could not be learnt (the client
  runs on another machine or in another PID namespace, the file never appeared, the
  check failed). A second terminal of the same client SIGKILLs every process whose
  environment holds the command's mark; a process that cleared its environment
  escapes this one.

``sandbox.limits`` hold here as for a local command (``limits.limited``: the rlimits,
and the pids cgroup for a confined command), and the sandbox is the same.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .limits import Cage, Limits, limited
from .process import (
    CONFINED_GRACE_SECONDS,
    KILL_GRACE_SECONDS,
    POLL_SECONDS,
    Box,
    command_argv,
    command_env,
    end_group,
    shell,
)

TERMINAL_MARK = "CRANK_TERMINAL"
"""A variable with a fresh value in the environment of each command run in an editor's
terminal: it proves a pid is this command's (``Detached.learn``) and lets the fallback
sweep find processes that moved to another group or session."""
LEADER = str(Path(__file__).with_name("leader.py"))
LEARN_SECONDS = 5.0
"""How long after ``terminal/create`` Crank looks for the leader's file; an abort
waits for that look to end before it falls back to the sweep."""

_SWEEP = """
import os, signal, sys
mark = ("%s=" % sys.argv[1]).encode() + sys.argv[2].encode()
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != os.getpid():
        try:
            with open("/proc/%s/environ" % name, "rb") as handle:
                found = mark in handle.read().split(b"\\0")
        except OSError:
            continue
        if found:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
"""


def sweep_argv(mark: str) -> list[str]:
    """A command that SIGKILLs every process whose environment holds ``mark`` (run in
    a terminal of the same client, after the command's own terminal was killed)."""
    return [sys.executable, "-I", "-c", _SWEEP, TERMINAL_MARK, mark]


def carries(pid: int, mark: str) -> bool:
    """Does process ``pid`` (alive, readable by us) hold ``mark`` in its environment?"""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{TERMINAL_MARK}={mark}".encode() in environ.split(b"\0")


def _taken(pid: int, mark: str) -> bool:
    """Is ``pid`` a live process without ``mark`` (a new process that got the number)?
    A leader that is gone or a zombie still holds its number while its group lives on
    (the kernel reuses neither), so its group is still the command's."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z" and not carries(pid, mark)


@dataclass
class Detached:
    """One command for an editor's terminal: its argv and the means to end it."""

    argv: list[str]
    mark: str
    folder: Path
    """Crank's private folder for this command (removed by ``close``)."""
    confined: bool
    cage: Cage | None = None
    group: int | None = None
    """The command's process group once learnt (``learn``)."""
    _watching: asyncio.Task[int | None] | None = field(default=None, repr=False)

    @property
    def leader_file(self) -> Path:
        return self.folder / "leader"

    def learn(self) -> int | None:
        """The group id the leader wrote, once it is there and checks out: that pid
        leads its own group and carries this command's mark."""
        if self.group is not None:
            return self.group
        try:
            text = self.leader_file.read_text()
        except OSError:
            return None
        if not text.isdigit() or int(text) <= 1:
            return None
        pid = int(text)
        try:
            leads = os.getpgid(pid) == pid
        except OSError:
            return None
        if leads and carries(pid, self.mark):
            self.group = pid
        return self.group

    def watch(self) -> None:
        """Start looking for the leader's file (call once ``terminal/create`` is
        answered); the look ends when the group is learnt or after LEARN_SECONDS."""
        if self._watching is None:
            self._watching = asyncio.create_task(self._look())

    async def _look(self) -> int | None:
        for _ in range(round(LEARN_SECONDS / POLL_SECONDS)):
            if (group := self.learn()) is not None:
                return group
            await asyncio.sleep(POLL_SECONDS)
        return self.learn()

    async def end(self) -> bool:
        """End the command's whole group (see the module doc); False when its id was
        not learnt, and the caller falls back to the sweep."""
        group = self.group
        if group is None and self._watching is not None:
            group = await self._watching
        if group is None:
            return False
        if _taken(group, self.mark):
            return True  # the leader's pid is someone else's now: the group had ended
        await end_group(group, CONFINED_GRACE_SECONDS if self.confined else KILL_GRACE_SECONDS)
        return True

    def close(self) -> None:
        """Stop looking, remove the private folder and the cgroup (if any)."""
        if self._watching is not None:
            self._watching.cancel()
        shutil.rmtree(self.folder, ignore_errors=True)
        if self.cage is not None:
            self.cage.close()


def detached(
    command: str,
    cwd: Path,
    box: Box | None,
    extra_env: Iterable[str] = (),
    limits: Limits | None = None,
    cage: Cage | None = None,
) -> Detached:
    """``command`` ready for an editor's terminal: ``env -i`` with ``command_env()``
    spelled out (nothing of the starter's environment, which may hold the provider
    keys Crank keeps from commands) and the mark, then the leader, then the limits
    prelude, then the same argv a local command gets (sandbox or subreaper, then
    ``bash -c COMMAND``, last)."""
    folder = Path(tempfile.mkdtemp(prefix="crank-terminal-"))
    mark = secrets.token_hex(8)
    env = shutil.which("env") or "/usr/bin/env"
    names = box.settings.env if box is not None else tuple(extra_env)
    chosen = limits or (box.settings.limits if box is not None else Limits())
    pairs = [f"{name}={value}" for name, value in command_env(names).items()]
    pairs.append(f"{TERMINAL_MARK}={mark}")
    job = Detached([], mark, folder, confined=box is not None, cage=cage)
    inner = limited(command_argv(command, cwd, box), chosen, cage, shell())
    job.argv = [env, "-i", *pairs, sys.executable, "-I", LEADER, str(job.leader_file), *inner]
    return job
