"""How many processes and how much memory one command may take (``sandbox.limits``).

A fork bomb was stopped only by whatever limit the machine had, and it took the
server's responsiveness with it. Two mechanisms, both set before the command's first
instruction by a ``bash`` prelude that then ``exec``s it (no ``preexec_fn``, which is
unsafe in a threaded server):

- ``ulimit -d`` (RLIMIT_DATA: the heap and private writable mappings; address space
  reservations, which V8 and the JVM make by the gigabyte, do not count) at
  ``memory_mb``; and ``ulimit -u`` (RLIMIT_NPROC) at the user's current process count
  plus ``processes``, since that limit counts every process of the user (the kernel
  ignores it for root);
- for a confined command, where the cgroup v1 ``pids`` hierarchy (or a cgroup v2 one
  with the pids controller) can be written, a cgroup of its own with ``pids.max`` at
  ``processes``, which holds for root too. Its ``pids.events`` tells afterwards
  whether the limit was hit, so the tool result can say so.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PROCESSES = 512
DEFAULT_MEMORY_MB = 8192
PIDS_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
"""Where a pids cgroup may be made: the v1 hierarchy, or a v2 root with pids enabled."""


@dataclass(frozen=True)
class Limits:
    """``sandbox.limits``: ``{processes, memoryMB}``."""

    processes: int = DEFAULT_PROCESSES
    memory_mb: int = DEFAULT_MEMORY_MB


class Cage:
    """A pids cgroup for one command: made before it starts, removed after it ended."""

    def __init__(self, folder: Path, processes: int) -> None:
        self.folder = folder
        self.processes = processes

    @classmethod
    def make(cls, processes: int) -> Cage | None:
        """A new cgroup with ``pids.max`` set, or None where none can be made."""
        for root in PIDS_ROOTS:
            if not (root / "cgroup.procs").exists():
                continue
            if root.name != "pids" and "pids" not in _read(root / "cgroup.subtree_control"):
                continue
            folder = root / f"crank-{os.getpid()}-{secrets.token_hex(4)}"
            try:
                folder.mkdir()
                (folder / "pids.max").write_text(str(processes))
            except OSError:
                with contextlib.suppress(OSError):
                    folder.rmdir()
                continue
            return cls(folder, processes)
        return None

    @property
    def procs(self) -> str:
        return str(self.folder / "cgroup.procs")

    def hit(self) -> bool:
        """Was a fork refused because the limit was reached?"""
        for line in _read(self.folder / "pids.events").splitlines():
            name, _, count = line.partition(" ")
            if name == "max" and count.strip().isdigit() and int(count) > 0:
                return True
        return False

    def close(self) -> None:
        """Remove the cgroup (it is empty once the sandbox's namespace has ended)."""
        with contextlib.suppress(OSError):
            self.folder.rmdir()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _user_processes() -> int:
    uid = os.getuid()
    count = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    count += entry.stat().st_uid == uid
    return count


def limited(argv: list[str], limits: Limits, cage: Cage | None, shell: str) -> list[str]:
    """``argv`` started by a ``bash`` prelude that joins ``cage`` (if any), sets the
    rlimits and ``exec``s it (so the pid and the process group stay the same)."""
    nproc = _user_processes() + limits.processes if os.getuid() != 0 else limits.processes
    prelude = (
        'if [ -n "$1" ]; then echo $$ > "$1"; fi; '
        f"ulimit -u {nproc} 2>/dev/null; ulimit -d {limits.memory_mb * 1024} 2>/dev/null; "
        'shift; exec "$@"'
    )
    return [shell, "-c", prelude, "crank-limits", cage.procs if cage else "", *argv]


def limit_note(cage: Cage | None) -> str | None:
    """The sentence for the tool result when the process limit was reached."""
    if cage is None or not cage.hit():
        return None
    return (
        f"[The command reached the sandbox's limit of {cage.processes} processes "
        "(sandbox.limits.processes); the forks beyond it failed.]"
    )


ALLOCATION_FAILED = (
    "MemoryError",
    "Cannot allocate memory",
    "out of memory",
    "std::bad_alloc",
    "memory allocation of",
)
"""How programs say an allocation failed (Python, libc's strerror, V8 and most C
programs, C++, Rust): RLIMIT_DATA leaves no trace of its own, so the output is all
there is to tell that the memory limit may be why a command failed."""


def memory_note(limits: Limits, exit_code: int | None, output: str) -> str | None:
    """The sentence for the tool result when a failed command says an allocation
    failed: the model then knows the limit is the sandbox's, and which setting it is."""
    if not exit_code or not any(words in output for words in ALLOCATION_FAILED):
        return None
    return (
        f"[An allocation failed; commands may use at most {limits.memory_mb} MB of data "
        "memory (sandbox.limits.memoryMB).]"
    )
